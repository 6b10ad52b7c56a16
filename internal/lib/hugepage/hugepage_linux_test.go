package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Where the kernel makes huge pages, Map's memory is a mapping of its own
// aligned to a huge page, populated as huge pages, writable, and gone
// once unmapped; where it makes none, Map says no.
func TestMapIsAnAlignedHugePageMapping(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Fatalf("read the kernel's huge page mode: %v", err) // every kernel the project runs on has it
	}
	before := Mapped()
	b, ok := Map(2 * Size)
	if strings.Contains(string(mode), "[never]") {
		if ok {
			t.Fatal("Map mapped memory where the kernel makes no huge pages")
		}
		return
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if !ok || addr%Size != 0 || len(b) != 2*Size || Mapped() != before+1 {
		t.Fatalf("Map: %v, %d bytes at %#x, %d mapped (before: %d); want 4 MiB aligned to 2 MiB, one more mapped", ok, len(b), addr, Mapped(), before)
	}
	b[0], b[len(b)-1] = 1, 2
	kb, flags, found := mappingAt(t, addr)
	if !found || kb != 4096 {
		t.Fatalf("the mapping at %#x: found %v, AnonHugePages %d kB (VmFlags%s); want two huge pages, 4096 kB", addr, found, kb, flags)
	}
	if err := Unmap(b); err != nil || Mapped() != before {
		t.Fatalf("Unmap = %v, %d mapped; want nil and %d", err, Mapped(), before)
	}
	if _, flags, found := mappingAt(t, addr); found && strings.Contains(flags, " hg") {
		t.Fatalf("the mapping at %#x (VmFlags%s) is still there once unmapped", addr, flags)
	}
	if _, ok := Map(Size + 1); ok {
		t.Fatal("Map of a size not a multiple of a huge page: mapped")
	}
}

// Where the kernel makes huge pages only when advised, Populate maps the
// whole 2 MiB blocks of a range as huge pages and leaves that range
// advised against them (what such a kernel does unadvised), so memory
// reused there later does not ask for huge pages; elsewhere it leaves no
// advice at all. The memory is left as it was: zero, and writable.
func TestPopulateMapsHugePagesAndLeavesNoAdviceForThem(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Fatalf("read the kernel's huge page mode: %v", err)
	}
	// Memory never touched (a heap array may reuse pages a 4 KiB fault
	// mapped, which no advice makes huge): a mapping of its own.
	m, err := unix.Mmap(-1, 0, 9<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	b := m[4096+7:] // neither end on a page
	if !Populate(b) {
		t.Fatal("Populate: not supported by this kernel (MADV_POPULATE_WRITE, Linux 5.14)")
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hs := addr + (Size-addr%Size)%Size
	he := (addr + uintptr(len(b))) &^ (Size - 1)
	kb, flags, found := mappingAt(t, hs)
	if !strings.Contains(string(mode), "[madvise]") {
		if found && strings.Contains(flags, " hg") {
			t.Fatalf("the range at %#x was left advised to have huge pages (%s)", hs, flags)
		}
		return
	}
	if !found {
		t.Fatalf("no mapping starts at %#x, the range's first huge page: the advice split none off", hs)
	}
	if want := int(he-hs) >> 10; kb != want {
		t.Fatalf("the aligned range at %#x has %d kB of huge pages, want %d", hs, kb, want)
	}
	if !strings.Contains(flags, " nh") || strings.Contains(flags, " hg") {
		t.Fatalf("the aligned range at %#x is left with VmFlags%s; want nh (no huge pages later), not hg", hs, flags)
	}
	for i := range b {
		if b[i] != 0 {
			t.Fatalf("byte %d is %d after Populate, want 0", i, b[i])
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
