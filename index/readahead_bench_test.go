package index

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkCatEverySignature is `cat` of every signature in key order (as
// `find sig -type f | sort | xargs cat` reads them) through the io/fs view
// of a folded store whose every request takes a round trip, with read-ahead
// off and on. Each op opens a fresh index (cold cache; the open itself is
// not timed or counted) and reads every signature once. It reports
// GET/sig and HEAD/op (the promise: one GET per signature, no HEAD) and
// ns/sig.
func BenchmarkCatEverySignature(b *testing.B) {
	for _, latency := range []time.Duration{0, 20 * time.Millisecond} {
		for _, ra := range []struct {
			name string
			n    int
		}{{"off", -1}, {"on", 0}} {
			b.Run(fmt.Sprintf("latency=%s/readahead=%s", latency, ra.name), func(b *testing.B) {
				st, lb, sigs := sigFixture(b, 300, 0)
				lb.latency.Store(int64(latency))
				var gets, heads, ops int64
				var took time.Duration
				for b.Loop() {
					b.StopTimer()
					ix, err := Open(context.Background(), st, Options{ReadAhead: ra.n})
					if err != nil {
						b.Fatal(err)
					}
					if err := ix.Load(context.Background()); err != nil {
						b.Fatal(err)
					}
					before := st.Counts()
					began := time.Now()
					b.StartTimer()
					catAll(b, ix, sigs)
					b.StopTimer()
					took += time.Since(began)
					ix.Close()
					d := st.Counts().Sub(before)
					gets, heads, ops = gets+d.Get, heads+d.Head, ops+1
					b.StartTimer()
				}
				n := float64(ops) * float64(len(sigs))
				b.ReportMetric(float64(gets)/n, "GET/sig")
				b.ReportMetric(float64(heads)/float64(ops), "HEAD/op")
				b.ReportMetric(float64(took.Nanoseconds())/n, "ns/sig")
				b.ReportMetric(float64(len(sigs)), "sigs")
			})
		}
	}
}
