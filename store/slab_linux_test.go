package store_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/oxyfs/oxyfs/store"
)

// Where the kernel makes transparent huge pages (always, or when
// advised), a body's full-size buffer is a mapping of its own, aligned to
// a huge page, faulted in as one huge page, and unmapped once released.
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
	huge, _, found := mappingAt(t, addr)
	if !found || huge != 2048 {
		release()
		t.Fatalf("the slab's mapping at %#x: found %v, AnonHugePages %d kB; want one huge page (2048 kB)", addr, found, huge)
	}
	mapped0 := store.SlabsMapped()
	release()
	if got := store.SlabsMapped(); got != mapped0-1 {
		t.Fatalf("%d slabs mapped once one was released, want %d", got, mapped0-1)
	}
	if _, flags, found := mappingAt(t, addr); found && strings.Contains(flags, " hg") {
		t.Fatalf("the slab's mapping at %#x (VmFlags%s) is still there once released", addr, flags)
	}
}

// A streamed body of several slabs leaves none mapped once read.
func TestGetStreamUnmapsItsSlabs(t *testing.T) {
	st := bodyStore(t, nil)
	want := make([]byte, 9<<20)
	if err := st.Put(context.Background(), "pack-x", want); err != nil {
		t.Fatal(err)
	}
	mapped := store.SlabsMapped()
	for _, read := range []int64{-1, 5 << 20} {
		_ = st.GetStream(context.Background(), "pack-x", int64(len(want)), func(body io.Reader) error {
			if read < 0 {
				_, err := io.Copy(io.Discard, body)
				return err
			}
			_, err := io.CopyN(io.Discard, body, read)
			return err
		})
		if got := store.SlabsMapped(); got != mapped {
			t.Fatalf("GetStream reading %d bytes of 9 MiB left %d slabs mapped, want %d", read, got, mapped)
		}
	}
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
