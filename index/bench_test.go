package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// benchStore is a folded mem store with one complete list of n entries
// (only the list is written: an open never reads the per-object keys).
func benchStore(b *testing.B, n int) (*store.Store, storegen.Report) {
	b.Helper()
	st := storefixture.NewMem(b)
	rep, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: n, Seed: 42, Fold: true, SkipObjects: true})
	if err != nil {
		b.Fatal(err)
	}
	return st, rep
}

func loadIndex(b *testing.B, st *store.Store) *Index {
	ix, err := Open(context.Background(), st, Options{Warn: func(m string) { b.Log(m) }})
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	return ix
}

// heapPerEntry measures what a loaded index keeps: the heap after GC with
// the index alive, minus the heap before it was opened.
func heapPerEntry(b *testing.B, st *store.Store, n int) (float64, int64) {
	// Two collections: the first moves sync.Pool contents (zstd
	// coders) to the victim cache, the second frees them.
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ix := loadIndex(b, st)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	mem := ix.Status().MemoryBytes
	runtime.KeepAlive(ix)
	return float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(n), mem
}

// sigStore is a folded mem store of n signatures only, keys
// sig/<hh>/<62 hex>/signer-NN with 16 signers: the keys of DESIGN §7.
func sigStore(b *testing.B, n int) (*store.Store, int64) {
	b.Helper()
	st := storefixture.NewMem(b)
	rng := rand.New(rand.NewPCG(1, 1))
	keys := make([]string, 0, n)
	var text int64
	for len(keys) < n {
		var obj [32]byte
		for i := range obj {
			obj[i] = byte(rng.Uint32())
		}
		e := format.Entry{Kind: format.KindSig, Object: hexString(obj[:]), Value: fmt.Sprintf("signer-%02d", rng.IntN(16))}
		keys = append(keys, e.Key())
		text += int64(len(e.Key()))
	}
	slices.Sort(keys)
	id, data, err := format.EncodeEntryListSorted(slices.Compact(keys))
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Put(context.Background(), format.EntryListName(id, true), data); err != nil {
		b.Fatal(err)
	}
	return st, text
}

// benchKeys returns the entries of a folded store for lookups.
func benchEntries(b *testing.B, n int) (*Index, []format.Entry) {
	st := storefixture.NewMem(b)
	var es []format.Entry
	_, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: n, Seed: 7, Fold: true, SkipObjects: true,
		OnEntry: func(e format.Entry, _ string) { es = append(es, e) }})
	if err != nil {
		b.Fatal(err)
	}
	return loadIndex(b, st), es
}

func BenchmarkLookup(b *testing.B) {
	ix, es := benchEntries(b, 1e5)
	ctx := context.Background()
	paths := make([]string, len(es))
	for i, e := range es {
		paths[i] = e.Key()
	}
	rand.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	before := ix.Store().Counts()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := ix.Stat(ctx, paths[i%len(paths)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/lookup")
	b.ReportMetric(float64(ix.Store().Counts().Sub(before).Total())/float64(b.N), "requests/op")
}

func BenchmarkReadDir(b *testing.B) {
	ix, _ := benchEntries(b, 1e5)
	ctx := context.Background()
	b.Run("sig", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ix.ReadDir(ctx, "sig"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sig-hh", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := ix.ReadDir(ctx, "sig/"+hexByte[i%256]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("walk-1e5", func(b *testing.B) {
		b.ReportAllocs()
		before := ix.Store().Counts()
		for b.Loop() {
			walkEntries(b, ix)
		}
		b.ReportMetric(float64(ix.Store().Counts().Sub(before).List)/float64(b.N), "lists/op")
	})
}
