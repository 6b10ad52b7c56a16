package store

import (
	"bytes"
	"os"
	"sync"
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
	raw, err := unix.Mmap(-1, 0, n+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, false
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	head := int((hugePage - addr%hugePage) % hugePage)
	b := raw[head : head+n : head+n]
	if head > 0 {
		_ = unix.Munmap(raw[:head])
	}
	if tail := raw[head+n:]; len(tail) > 0 {
		_ = unix.Munmap(tail)
	}
	if mode == "madvise" {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
	if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err != nil && err != unix.EINVAL { //nolint:errorlint // raw errno
		_ = unix.Munmap(b)
		return nil, false
	}
	return b, true
}

// unmapSlab unmaps what mapSlab mapped.
func unmapSlab(b []byte) { _ = unix.Munmap(b) }

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
