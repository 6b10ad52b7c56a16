package index

import (
	"context"
	"fmt"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
)

// BenchmarkRefresh measures a refresh of a folded mem store of 100k
// entries (one complete list): "quiet", both records unchanged (2
// conditional GETs, the view kept), and "append", after one journal line
// appended by another writer (the journal's part of the set recomputed).
// Each reports the requests a refresh sent (Status.LastRefresh).
func BenchmarkRefresh(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	b.Run("quiet", func(b *testing.B) {
		st, _ := benchStore(b, n)
		ix := loadIndex(b, st)
		defer ix.Close()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := ix.Refresh(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		reportRefresh(b, ix)
	})
	b.Run("append", func(b *testing.B) {
		st, _ := benchStore(b, n)
		ix := loadIndex(b, st)
		defer ix.Close()
		b.ReportAllocs()
		i := 0
		b.ResetTimer()
		for b.Loop() {
			b.StopTimer()
			e := format.Entry{Kind: format.KindSig, Object: fmt.Sprintf("%064x", 1<<40+i), Value: "bench-writer"}
			i++
			if _, err := journal.AppendThreshold(ctx, st, []string{e.Key()}, 1<<30); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := ix.Refresh(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		reportRefresh(b, ix)
	})
}

// reportRefresh reports what the last refresh sent.
func reportRefresh(b *testing.B, ix *Index) {
	c := ix.Status().LastRefresh
	b.ReportMetric(float64(c.Get), "gets/op")
	b.ReportMetric(float64(c.List), "lists/op")
}
