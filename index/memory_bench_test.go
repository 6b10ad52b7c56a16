package index

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
)

// memState is a store in one of the states whose memory BenchmarkOpen
// measures, with the key text of the entries its set holds (each distinct
// key once).
type memState struct {
	name string
	n    int // entries
	huge bool
	make func(b *testing.B, n int) (*store.Store, int64)
}

// memStates are the states of issue 16: a clean folded store, right after
// a fold whose journal still holds every folded line (they stay an hour), a
// journal of unfolded lines beside a complete list (1,000: what writers
// that fold as they go leave at most; and half the entries), partial lists
// beside a complete one, signatures only, a store not folded (its journal
// is all an open holds), and 1e7 entries (OXYFS_BENCH_HUGE=1 only).
var memStates = []memState{
	{name: "clean", n: 1e5, make: cleanStore},
	{name: "clean", n: 1e6, make: cleanStore},
	{name: "after-fold", n: 1e5, make: afterFoldStore},
	{name: "after-fold", n: 1e6, make: afterFoldStore},
	{name: "journal-1000", n: 1e5, make: func(b *testing.B, n int) (*store.Store, int64) {
		return journalStore(b, n, format.PartialFoldThreshold)
	}},
	{name: "journal-half", n: 1e5, make: func(b *testing.B, n int) (*store.Store, int64) { return journalStore(b, n, n/2) }},
	{name: "partial-lists", n: 1e5, make: partialStore},
	{name: "sig-only", n: 1e6, make: sigStore},
	{name: "not-folded", n: 1e5, make: notFoldedStore},
	{name: "clean", n: 1e7, huge: true, make: cleanStore},
	{name: "after-fold", n: 1e7, huge: true, make: afterFoldStore}, // a journal of the last 1e6: the journal's cap holds ~2.5e6 lines
}

// BenchmarkOpen measures an open of each state: the heap the loaded index
// keeps (after GC, beside the store's own bytes) per entry and over the key
// text of the set's entries, the set's arrays (Status.MemoryBytes), and the
// requests of one open. The 1e7 states run only with OXYFS_BENCH_HUGE=1
// (each needs about 4 GB and minutes).
func BenchmarkOpen(b *testing.B) {
	huge := os.Getenv("OXYFS_BENCH_HUGE") == "1"
	for _, s := range memStates {
		if s.huge && !huge {
			continue
		}
		b.Run(fmt.Sprintf("%s-%.0e", s.name, float64(s.n)), func(b *testing.B) {
			st, keyText := s.make(b, s.n)
			perEntry, mem := heapPerEntry(b, st, s.n)
			keyBytes := float64(keyText) / float64(s.n)
			before := st.Counts()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				loadIndex(b, st)
			}
			b.StopTimer()
			reqs := st.Counts().Sub(before)
			b.ReportMetric(perEntry, "bytes/entry")
			b.ReportMetric(float64(mem)/float64(s.n), "set-bytes/entry")
			b.ReportMetric(keyBytes, "key-text-bytes/entry")
			b.ReportMetric(perEntry/keyBytes, "mem/key-text")
			b.ReportMetric(float64(reqs.Total())/float64(b.N), "requests/op")
			b.ReportMetric(float64(reqs.List)/float64(b.N), "lists/op")
		})
	}
}

// benchMem is a mem store whose requests may take minutes: a list of 1e7
// entries is 340 MB.
func benchMem(b *testing.B) *store.Store {
	b.Helper()
	st, err := store.Open(context.Background(), "mem://", store.Options{Layout: store.LayoutBucket, RequestTimeout: 30 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// genKeys returns the keys of n entries as Generate draws them (the mix of
// kinds and values BenchmarkOpen measures), in the order drawn.
func genKeys(b *testing.B, n int) []string {
	b.Helper()
	keys := make([]string, 0, n)
	if _, err := storegen.Generate(context.Background(), benchMem(b), storegen.Options{Entries: n, Seed: 42, Fold: true, SkipObjects: true,
		OnEntry: func(e format.Entry, _ string) { keys = append(keys, e.Key()) }}); err != nil {
		b.Fatal(err)
	}
	return keys
}

// putList writes keys as one entry list (complete or partial).
func putList(b *testing.B, st *store.Store, keys []string, complete bool) {
	b.Helper()
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	id, data, err := format.EncodeEntryListSorted(keys)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Put(context.Background(), format.EntryListName(id, complete), data); err != nil {
		b.Fatal(err)
	}
}

// putJournal writes the journal: keys as lines folded at foldedAt (0:
// unfolded).
func putJournal(b *testing.B, st *store.Store, keys []string, foldedAt int64) {
	b.Helper()
	lines := make([]format.JournalLine, len(keys))
	for i, k := range keys {
		lines[i] = format.JournalLine{FoldedAt: foldedAt, Key: k}
	}
	data := format.Journal(lines)
	if _, err := st.UpdateRecord(context.Background(), format.JournalKey, func([]byte, bool) ([]byte, error) { return data, nil }); err != nil {
		b.Fatal(err)
	}
}

func textOf(keys []string) int64 {
	var n int64
	for _, k := range keys {
		n += int64(len(k))
	}
	return n
}

// cleanStore is a folded store: one complete list, an empty journal.
func cleanStore(b *testing.B, n int) (*store.Store, int64) {
	st := benchMem(b)
	rep, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: n, Seed: 42, Fold: true, SkipObjects: true})
	if err != nil {
		b.Fatal(err)
	}
	return st, rep.KeyTextBytes
}

// afterFoldStore is a store right after a complete fold of a journal that
// held every entry (the last 1e6 of more): one complete list, and the lines
// still in the journal, marked folded (the lines stay an hour).
func afterFoldStore(b *testing.B, n int) (*store.Store, int64) {
	keys := genKeys(b, n)
	st := benchMem(b)
	putList(b, st, keys, true)
	putJournal(b, st, keys[max(0, n-1e6):], time.Now().UnixMilli())
	return st, textOf(keys)
}

// journalStore is a folded store whose journal holds j unfolded lines no
// list holds, beside a complete list of the other n-j entries.
func journalStore(b *testing.B, n, j int) (*store.Store, int64) {
	keys := genKeys(b, n)
	st := benchMem(b)
	putList(b, st, keys[:n-j], true)
	putJournal(b, st, keys[n-j:], 0)
	return st, textOf(keys)
}

// partialStore is a complete list of half the entries and 10 partial lists
// of the rest, whose lines are still in the journal, folded (as writers'
// partial folds leave them).
func partialStore(b *testing.B, n int) (*store.Store, int64) {
	keys := genKeys(b, n)
	st := benchMem(b)
	putList(b, st, keys[:n/2], true)
	rest := keys[n/2:]
	for i := range 10 {
		putList(b, st, rest[i*len(rest)/10:(i+1)*len(rest)/10], false)
	}
	putJournal(b, st, rest, time.Now().UnixMilli())
	return st, textOf(keys)
}

// notFoldedStore is a store no fold has run on: a journal of every entry,
// no list. Its set is empty; what an open keeps is what it keeps of the
// journal.
func notFoldedStore(b *testing.B, n int) (*store.Store, int64) {
	keys := genKeys(b, n)
	st := benchMem(b)
	putJournal(b, st, keys, 0)
	return st, textOf(keys)
}
