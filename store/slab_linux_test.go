package store_test

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/oxyfs/oxyfs/store"
)

// Where the kernel makes transparent huge pages (always, or when
// advised), a body's full-size buffer is a mapping of its own, aligned to
// a huge page, and faulted in as one huge page.
func TestSpoolSlabIsAHugePageMappedAndUnmapped(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Fatalf("read the kernel's huge page mode: %v", err) // every kernel the project runs on has it
	}
	b, mapped, release := store.NewSpoolSlab()
	if strings.Contains(string(mode), "[never]") {
		release()
		if mapped {
			t.Fatal("a slab was mapped where the kernel makes no huge pages")
		}
		return
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if !mapped || addr%(2<<20) != 0 || len(b) != 2<<20 {
		release()
		t.Fatalf("slab at %#x of %d bytes, mapped %v; want a mapping of 2 MiB aligned to 2 MiB", addr, len(b), mapped)
	}
	b[0], b[len(b)-1] = 1, 2 // writable
	huge, found := anonHuge(t, addr)
	if !found || huge != 2048 {
		release()
		t.Fatalf("the slab's mapping at %#x: found %v, AnonHugePages %d kB; want one huge page (2048 kB)", addr, found, huge)
	}
	release() // TestGetStreamReleasesEveryBuffer counts the releases
}

// anonHuge is the AnonHugePages of the mapping that starts at addr, and
// whether there is one.
func anonHuge(t *testing.T, addr uintptr) (kb int, found bool) {
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
		if strings.HasPrefix(line, prefix) {
			found = true
			continue
		}
		if found && strings.HasPrefix(line, "AnonHugePages:") {
			if _, err := fmt.Sscanf(line, "AnonHugePages: %d kB", &kb); err != nil {
				t.Fatalf("parse %q: %v", line, err)
			}
			return kb, true
		}
	}
	return 0, found
}
