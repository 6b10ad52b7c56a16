package hugepage

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Size is a transparent huge page's size (with 4 KiB base pages: amd64,
// arm64).
const Size = 2 << 20

// Mode is the kernel's transparent huge page policy: "always" or
// "madvise"; "" where it makes none (or base pages are not 4 KiB).
var Mode = sync.OnceValue(func() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || unix.Getpagesize() != 4096 {
		return ""
	}
	for _, m := range []string{"always", "madvise"} {
		if bytes.Contains(b, []byte("["+m+"]")) {
			return m
		}
	}
	return ""
})

var mapped atomic.Int64

// Mapped is how many of Map's mappings are not unmapped yet.
func Mapped() int64 { return mapped.Load() }

// Map maps n bytes (a multiple of Size) aligned to a huge page, advised
// to be huge where the kernel asks for advice, and populated; false where
// the kernel makes no huge pages or a call fails.
func Map(n int) ([]byte, bool) {
	mode := Mode()
	if mode == "" || n <= 0 || n%Size != 0 {
		return nil, false
	}
	// MmapPtr and MunmapPtr, not Mmap and Munmap: those keep a table of
	// whole mappings and refuse (EINVAL) to unmap part of one, or a slice
	// Mmap did not return itself.
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n+Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, false
	}
	head := (Size - uintptr(p)%Size) % Size
	if head > 0 {
		_ = unix.MunmapPtr(p, head)
	}
	if tail := Size - head; tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(p, head+uintptr(n)), tail)
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, head)), n)
	mapped.Add(1)
	if mode == "madvise" {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
	if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err != nil && err != unix.EINVAL { //nolint:errorlint // raw errno
		_ = Unmap(b)
		return nil, false
	}
	return b, true
}

// Unmap unmaps what Map mapped; an error is a bug of the caller's (not
// a mapping of Map's), and the memory is then left as it was.
func Unmap(b []byte) error {
	if err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b))); err != nil {
		return fmt.Errorf("unmap %d bytes at %p: %w", len(b), unsafe.SliceData(b), err)
	}
	mapped.Add(-1)
	return nil
}

// Populate faults in the whole 4 KiB pages of b (MADV_POPULATE_WRITE: no
// content changes), its whole 2 MiB blocks as huge pages where the kernel
// makes them only when advised (advised for the call, then
// MADV_NOHUGEPAGE: package doc); false if the kernel cannot populate.
func Populate(b []byte) bool {
	page := unix.Getpagesize()
	start := (page - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(page))) % page
	if start >= len(b) {
		return true
	}
	n := (len(b) - start) &^ (page - 1)
	if n == 0 {
		return true
	}
	b = b[start : start+n]
	var huge []byte
	if Mode() == "madvise" {
		addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		hs := int((Size - addr%Size) % Size)
		if he := hs + (len(b)-hs)&^(Size-1); hs < len(b) && he > hs {
			huge = b[hs:he]
			if unix.Madvise(huge, unix.MADV_HUGEPAGE) != nil {
				huge = nil
			}
		}
	}
	err := unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	if huge != nil {
		_ = unix.Madvise(huge, unix.MADV_NOHUGEPAGE)
	}
	return err == nil || err == unix.ENOMEM || err == unix.EFAULT //nolint:errorlint // raw errnos
}
