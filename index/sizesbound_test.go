package index

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// heapAlloc is the live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestStatedMemoryBoundCoversTheSizesTable (issue 38): the table of the
// sizes of signatures read (sigCache.sizes, up to maxKnownSizes) is in the
// bound Status states: sig_sizes_bound is at least what the table holds,
// filled to its limit with keys of the length the generator's signatures
// have (a 9-byte signer: 79-byte keys), as each GET's key is its own
// string; and memory_bound counts it beside the set, the signature
// cache's bound and the collector's headroom.
func TestStatedMemoryBoundCoversTheSizesTable(t *testing.T) {
	ix, s, n := openSizesTable(t)
	if n != maxKnownSizes {
		t.Fatalf("the table holds %d sizes at most, want %d (no memory limit)", n, maxKnownSizes)
	}
	if s.SigSizesBound < int64(n)*sizeItemBytes || s.MemoryBound != s.MemoryBytes+s.SigCacheBound+s.SigSizesBound+gcHeadroomBytes {
		t.Fatalf("status: sig_sizes_bound %d for %d sizes, memory_bound %d (set %d, cache bound %d): the sizes are not in the stated bound",
			s.SigSizesBound, n, s.MemoryBound, s.MemoryBytes, s.SigCacheBound)
	}
	got, grew := fillSizesTable(ix, n, "signer-42")
	if got != n {
		t.Fatalf("the table holds %d sizes, want %d", got, n)
	}
	t.Logf("%d sizes: the heap grew %d bytes, %.1f a size; sig_sizes_bound %d", n, grew, float64(grew)/float64(n), s.SigSizesBound)
	if grew > s.SigSizesBound {
		t.Errorf("the heap grew %d bytes (%.1f a size) for a full table: past sig_sizes_bound %d", grew, float64(grew)/float64(n), s.SigSizesBound)
	}
}

// openSizesTable opens an index on an empty mem store: its status and the
// most sizes its table holds.
func openSizesTable(t *testing.T) (*Index, Status, int) {
	t.Helper()
	ix, err := Open(context.Background(), storefixture.NewMem(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix, ix.Status(), ix.sigs.sizesN
}

// fillSizesTable remembers n sizes of distinct signatures of signer (no
// bytes kept), and reports how many the table holds and how much the
// live heap grew.
func fillSizesTable(ix *Index, n int, signer string) (held int, grew int64) {
	c := ix.sigs
	before := heapAlloc()
	c.mu.Lock()
	c.max = 0 // the table alone: no signature's bytes are kept
	for i := range n {
		e := format.Entry{Kind: format.KindSig, Object: fmt.Sprintf("%064x", i*2654435761), Value: signer}
		c.insertLocked(e.Key(), nil, uint64(i), int64(i))
	}
	held = len(c.sizes)
	c.mu.Unlock()
	grew = int64(heapAlloc()) - int64(before)
	runtime.KeepAlive(ix)
	return held, grew
}

// TestLongKeysKeepTheSizesTableInItsBound: keys longer than the
// generator's (a 200-byte signer: 270-byte keys, 288-byte allocations) do
// not take the table past sig_sizes_bound; it starts over when their
// share is spent (sizeKeyCost), as when it is full — so it holds what is
// left of the inserts past the last whole table of them. It failed before
// the keys were counted: 1<<20 such sizes grew the heap by 419 MB, 400 B a
// size against the 208 the bound states (218 MB); 80 MB since.
func TestLongKeysKeepTheSizesTableInItsBound(t *testing.T) {
	ix, s, n := openSizesTable(t)
	signer := strings.Repeat("s", 200)
	keyLen := len(format.Entry{Kind: format.KindSig, Object: fmt.Sprintf("%064x", 0), Value: signer}.Key())
	perTable := int(int64(n) * (sizeItemBytes - sizeSlotBytes) / sizeKeyCost(keyLen))
	want := (n-1)%perTable + 1
	got, grew := fillSizesTable(ix, n, signer)
	t.Logf("%d inserts of %d-byte keys: %d sizes held, the heap grew %d bytes; sig_sizes_bound %d", n, keyLen, got, grew, s.SigSizesBound)
	if got != want {
		t.Errorf("the table holds %d sizes after %d inserts of %d-byte keys; want %d (it starts over every %d)", got, n, keyLen, want, perTable)
	}
	if grew > s.SigSizesBound {
		t.Errorf("the heap grew %d bytes for a table of long keys: past sig_sizes_bound %d", grew, s.SigSizesBound)
	}
}
