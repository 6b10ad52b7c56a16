package store

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page where slabs are mapped
// (4 KiB base pages: amd64, arm64).
const hugePage = 2 << 20

// mapSlab maps n bytes (a multiple of hugePage) aligned to a huge page,
// advises the kernel to back it with huge pages where it makes them only
// when advised, and faults it all in at once (MADV_POPULATE_WRITE); false
// where the kernel has no transparent huge pages or a call fails (the
// caller then takes Go heap memory).
func mapSlab(n int) ([]byte, bool) {
	mode := thpMode()
	if mode == "" || n%hugePage != 0 {
		return nil, false
	}
	// MmapPtr and MunmapPtr, not Mmap and Munmap: those keep a table of
	// whole mappings and refuse (EINVAL) to unmap a part of one, or a
	// slice not made by Mmap itself.
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n+hugePage), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, false
	}
	addr := uintptr(p)
	head := (hugePage - addr%hugePage) % hugePage
	if head > 0 {
		_ = unix.MunmapPtr(p, head)
	}
	if tail := hugePage - head; tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(p, head+uintptr(n)), tail)
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, head)), n)
	if mode == "madvise" {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
	slabsMapped.Add(1)
	if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err != nil && err != unix.EINVAL { //nolint:errorlint // raw errno
		unmapSlab(b)
		return nil, false
	}
	return b, true
}

// unmapSlab unmaps what mapSlab mapped.
func unmapSlab(b []byte) {
	if err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b))); err != nil {
		// Not what mapSlab made (a bug): left mapped, and said.
		slog.Error(fmt.Sprintf("unmap a body's buffer at %p: %v", unsafe.SliceData(b), err))
		return
	}
	slabsMapped.Add(-1)
}

// slabsMapped counts the slabs mapped and not unmapped (tests).
var slabsMapped atomic.Int64

// thpMode is the kernel's transparent huge page mode, "always" or
// "madvise"; "" where it makes none (or the page size is not 4 KiB).
var thpMode = sync.OnceValue(func() string {
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
