package index

import (
	"context"
	"math"
	"runtime/debug"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

func TestMemorySettingsUnderALimit(t *testing.T) {
	for _, c := range []struct {
		limit int64
		cache int64
		sizes int
		why   string
	}{
		{math.MaxInt64, DefaultSigCacheBytes, maxKnownSizes, "no limit: the defaults"},
		{0, DefaultSigCacheBytes, maxKnownSizes, "0 is no limit"},
		{2 << 30, DefaultSigCacheBytes, maxKnownSizes, "an eighth of 2 GiB is more than the defaults"},
		{1 << 30, DefaultSigCacheBytes, 128 << 20 / sizeItemBytes, "an eighth of 1 GiB: the cache's default, fewer sizes"},
		{256 << 20, 32 << 20, 32 << 20 / sizeItemBytes, "an eighth of 256 MiB each"},
		{512 << 10, minSigCacheBytes, 1024, "at least 1 MiB of cache and 1024 sizes"},
		{4 << 20, minSigCacheBytes, 4 << 20 / 8 / sizeItemBytes, "4 MiB: the least cache, an eighth in sizes"},
	} {
		if got := sigCacheBytesFor(c.limit); got != c.cache {
			t.Errorf("%s: cache %d, want %d", c.why, got, c.cache)
		}
		if got := knownSizesFor(c.limit); got != c.sizes {
			t.Errorf("%s: sizes %d, want %d", c.why, got, c.sizes)
		}
	}
	for _, c := range []struct {
		set  int64
		gogc int
	}{
		{0, 100}, {4 << 20, 100}, {64 << 20, 100}, {128 << 20, 50}, {256 << 20, 25}, {1 << 30, 25},
	} {
		if got := gcPercentFor(c.set); got != c.gogc {
			t.Errorf("a set of %d bytes: GOGC %d, want %d", c.set, got, c.gogc)
		}
	}
}

// TestOpenSizesTheCacheByTheMemoryLimit: with GOMEMLIMIT (here
// debug.SetMemoryLimit) at 128 MiB, an index whose options leave the cache
// bound 0 takes an eighth of it; an explicit bound is kept.
func TestOpenSizesTheCacheByTheMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(128 << 20)
	defer debug.SetMemoryLimit(old)
	st := storefixture.NewMem(t)
	ix, err := Open(context.Background(), st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if got := ix.Status().SigCacheBound; got != 16<<20 {
		t.Fatalf("cache bound %d under a 128 MiB limit, want %d", got, 16<<20)
	}
	if ix.sigs.sizesN != 16<<20/sizeItemBytes {
		t.Fatalf("sizes remembered %d, want %d", ix.sigs.sizesN, 16<<20/sizeItemBytes)
	}
	ix2, err := Open(context.Background(), st, Options{SigCacheBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer ix2.Close()
	if got := ix2.Status().SigCacheBound; got != 1<<30 {
		t.Fatalf("explicit cache bound became %d", got)
	}
}

// TestSettleMemorySetsGOGCForTheSet: unless the GOGC variable chose one,
// SettleMemory sets the GC percent for the loaded set (a small one: 100).
func TestSettleMemorySetsGOGCForTheSet(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	st, _ := foldedStore(t)
	ix, _ := openIndex(t, st)
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOGC", "")
	debug.SetGCPercent(7)
	SettleMemory(ix)
	if got := debug.SetGCPercent(7); got != 100 {
		t.Fatalf("GOGC %d after SettleMemory of a small set, want 100", got)
	}
	t.Setenv("GOGC", "7")
	SettleMemory(ix)
	if got := debug.SetGCPercent(100); got != 7 {
		t.Fatalf("GOGC %d after SettleMemory with GOGC=7 set, want it kept", got)
	}
}
