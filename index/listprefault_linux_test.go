package index

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Where the kernel makes huge pages only when advised, prefault maps the
// 2 MiB-aligned blocks of an array as huge pages, and leaves that range
// advised against them (what such a kernel does unadvised), so the Go
// heap memory is not left asking for huge pages once the array is gone.
// Elsewhere it leaves no advice at all.
func TestPrefaultMapsHugePagesAndLeavesNoAdviceForThem(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Fatalf("read the kernel's huge page mode: %v", err)
	}
	// Memory never touched (a heap array may reuse pages a 4 KiB fault
	// mapped, which no advice makes huge): a mapping of its own.
	b, err := unix.Mmap(-1, 0, 9<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	b = b[4096+7:] // neither end on a page
	if !prefault(b) {
		t.Fatal("prefault: not supported by this kernel (MADV_POPULATE_WRITE, Linux 5.14)")
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hs := addr + (hugePage-addr%hugePage)%hugePage
	he := (addr + uintptr(len(b))) &^ (hugePage - 1)
	kb, flags, found := mappingAt(t, hs)
	if !strings.Contains(string(mode), "[madvise]") {
		if found && strings.Contains(flags, " hg") {
			t.Fatalf("the array's range at %#x was left advised to have huge pages (%s)", hs, flags)
		}
		return
	}
	if !found {
		t.Fatalf("no mapping starts at %#x, the array's first huge page: the advice split none off", hs)
	}
	if want := int(he-hs) >> 10; kb != want {
		t.Fatalf("the array's aligned range at %#x has %d kB of huge pages, want %d", hs, kb, want)
	}
	if !strings.Contains(flags, " nh") || strings.Contains(flags, " hg") {
		t.Fatalf("the array's aligned range at %#x is left with VmFlags%s; want nh (no huge pages later), not hg", hs, flags)
	}
	for i := range b { // the memory is the array's as before: zero, and writable
		if b[i] != 0 {
			t.Fatalf("byte %d of the array is %d after prefault, want 0", i, b[i])
		}
	}
	b[len(b)-1] = 1
}

// mappingAt is the AnonHugePages and VmFlags of the mapping that starts
// at addr in /proc/self/smaps, and whether there is one.
func mappingAt(t *testing.T, addr uintptr) (kb int, flags string, found bool) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	prefix := fmt.Sprintf("%x-", addr)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, prefix):
			found = true
		case found && strings.HasPrefix(line, "AnonHugePages:"):
			if _, err := fmt.Sscanf(line, "AnonHugePages: %d kB", &kb); err != nil {
				t.Fatalf("parse %q: %v", line, err)
			}
		case found && strings.HasPrefix(line, "VmFlags:"):
			return kb, strings.TrimPrefix(line, "VmFlags:"), true
		}
	}
	return kb, "", found
}
