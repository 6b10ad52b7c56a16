//go:build !linux

package hugepage

// Size is a transparent huge page's size where there are some.
const Size = 2 << 20

// Mode is "" here: no huge pages.
func Mode() string { return "" }

// Mapped is 0 here: Map maps nothing.
func Mapped() int64 { return 0 }

// Map maps nothing here.
func Map(int) ([]byte, bool) { return nil, false }

// Unmap is never needed here.
func Unmap([]byte) error { return nil }

// Populate does nothing here: the pages are faulted as they are written.
func Populate([]byte) bool { return false }
