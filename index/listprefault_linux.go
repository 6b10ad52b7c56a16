package index

import "golang.org/x/sys/unix"

// prefault faults in the whole pages of b (madvise MADV_POPULATE_WRITE:
// no content changes); false if the kernel does not support it.
func prefault(b []byte) bool {
	page := unix.Getpagesize()
	start := (page - int(uintptr(unsafePointer(b))%uintptr(page))) % page
	if start >= len(b) {
		return true
	}
	n := (len(b) - start) &^ (page - 1)
	if n == 0 {
		return true
	}
	err := unix.Madvise(b[start:start+n], unix.MADV_POPULATE_WRITE)
	return err == nil || err == unix.ENOMEM || err == unix.EFAULT //nolint:errorlint // raw errnos
}
