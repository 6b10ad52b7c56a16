package index

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// BenchmarkBuildSet is the set build alone, without the store: one
// complete list decoded straight into the arrays (decodeList, the zstd
// decoder in a second goroutine) and a journal of folded lines turned into
// a run and merged with it, as an open right after a complete fold does.
// It reports ns and allocations per entry, and the set's bytes per entry.
func BenchmarkBuildSet(b *testing.B) {
	for _, n := range []int{1e5, 1e6} {
		var keys []string
		st := storefixture.NewMem(b)
		if _, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: n, Seed: 5, Fold: true, SkipObjects: true,
			OnEntry: func(e format.Entry, _ string) { keys = append(keys, e.Key()) }}); err != nil {
			b.Fatal(err)
		}
		sn, err := st.ReadSnapshot(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		live := sn.LiveLists()
		if len(live) != 1 {
			b.Fatalf("%d live lists", len(live))
		}
		data, err := st.Get(context.Background(), live[0].Name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("list-%.0e", float64(n)), func(b *testing.B) {
			b.ReportAllocs()
			var set *entrySet
			for b.Loop() {
				bl := newBuilder()
				r, err := bl.decodeList(bl.addSource("list "+live[0].Name), live[0].Name, bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				set = bl.set(r)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
			b.ReportMetric(float64(set.memoryBytes())/float64(n), "set-bytes/entry")
		})
		// The same list mapped from the list cache (listcache.go): what a
		// reopen on this host builds instead of the decode above.
		dir := b.TempDir()
		c, err := OpenListCache(dir, 0)
		if err != nil {
			b.Fatal(err)
		}
		key := listFileKey{store: cacheStoreID(st.URL()), name: live[0].Name, size: live[0].Size}
		d, err := decodeEntryList(1, live[0].Name, bytes.NewReader(data), 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		c.put(key, d, func(m string) { b.Fatal(m) })
		c.Wait()
		b.Run(fmt.Sprintf("mapped-%.0e", float64(n)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := c.load(key)
				if err != nil || d == nil {
					b.Fatal(err)
				}
				bl := newBuilder()
				bl.set(bl.adopt(d, bl.addSource("list "+live[0].Name)))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
		})
		lines := make([]format.JournalLine, len(keys))
		for i, k := range keys {
			lines[i] = format.JournalLine{FoldedAt: 1, Key: k}
		}
		b.Run(fmt.Sprintf("list+journal-%.0e", float64(n)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bl := newBuilder()
				r, err := bl.decodeList(bl.addSource("list "+live[0].Name), live[0].Name, bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				bl.set(bl.mergeRuns([]*run{r, bl.journalEntries(lines).r}))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
		})
	}
}
