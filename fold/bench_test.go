package fold

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
)

// BenchmarkCompleteFold folds a mem store of 100,000 entries (per-object
// keys, 1,000 of them also in the journal) completely.
//
//   - changed: one writer's entry is new since the last fold, so each fold
//     writes a list, retires the old one and marks one line;
//   - unchanged: nothing is new, so each fold writes nothing.
//
// It reports the requests of one fold (requests/op; LIST/op and PUT/op
// alone) and the time per entry folded. With LIST pages of 1,000 keys (as
// S3 serves them) the time on mem is mostly memblob's listing, which sorts
// every key of the bucket for each page; page=all lists each prefix in one
// page, which leaves the fold's own cost.
func BenchmarkCompleteFold(b *testing.B) {
	const entries = 100_000
	for _, bc := range []struct {
		changed bool
		page    int
	}{{true, 1000}, {false, 1000}, {true, entries}, {false, entries}} {
		name := "unchanged"
		if bc.changed {
			name = "changed"
		}
		page := fmt.Sprint(bc.page)
		if bc.page == entries {
			page = "all"
		}
		changed := bc.changed
		b.Run(name+"/page="+page, func(b *testing.B) {
			ctx := context.Background()
			clk := store.NewFakeClock(t0)
			st, err := store.Open(ctx, "mem://", store.Options{Layout: store.LayoutBucket, Clock: clk, PageSize: bc.page})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			seedEntries(b, st, entries)
			if _, err := Complete(ctx, st, Options{}); err != nil {
				b.Fatal(err)
			}
			var req store.Counts
			var spent time.Duration
			n := 0
			for b.Loop() {
				if changed {
					b.StopTimer()
					write(b, st, ekey(format.KindSig, fmt.Sprintf("ffff%08x", n), "bench"))
					clk.Advance(time.Second)
					b.StartTimer()
				}
				start := time.Now()
				rep, err := Complete(ctx, st, Options{})
				spent += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if changed != rep.List.Written {
					b.Fatalf("fold wrote a list: %v, want %v", rep.List.Written, changed)
				}
				req.List += rep.Requests.List
				req.Get += rep.Requests.Get
				req.Head += rep.Requests.Head
				req.Put += rep.Requests.Put
				req.Delete += rep.Requests.Delete
				n++
			}
			b.ReportMetric(float64(req.Total())/float64(n), "requests/op")
			b.ReportMetric(float64(req.List)/float64(n), "LIST/op")
			b.ReportMetric(float64(req.Put)/float64(n), "PUT/op")
			b.ReportMetric(float64(spent.Nanoseconds())/float64(n)/entries, "ns/entry")
		})
	}
}

// seedEntries writes n per-object keys straight into the bucket (not
// counted), spread over the kinds, and journals the last 1,000.
func seedEntries(b *testing.B, st *store.Store, n int) {
	b.Helper()
	ctx := context.Background()
	bucket := st.Bucket()
	var journaled []string
	for i := range n {
		kind := format.KindSig
		if i%4 == 3 {
			kind = format.Kinds[1+i%5]
		}
		k := ekey(kind, fmt.Sprintf("%012x", i*7919), fmt.Sprintf("signer-%d", i%13))
		var data []byte
		if kind == format.KindSig {
			data = []byte("a signature of sixty-four bytes, more or less, as ed25519 makes")
		}
		if err := bucket.WriteAll(ctx, k, data, nil); err != nil {
			b.Fatal(err)
		}
		if i >= n-1000 {
			journaled = append(journaled, k)
		}
	}
	if _, err := journal.Append(ctx, st, journaled); err != nil {
		b.Fatal(err)
	}
}
