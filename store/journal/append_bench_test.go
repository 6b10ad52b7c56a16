package journal

import (
	"context"
	"fmt"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
)

// BenchmarkAppend is one group-commit journal update (Append of 4 keys, what
// 8 writers through a mount batch per update) on a mem store whose journal
// already holds N lines, folded within the hour (they stay until it
// passes): the CPU and the bytes every write's update pays for the lines it
// carries along. It reports the journal's bytes, which a real store reads
// and writes once each per update.
func BenchmarkAppend(b *testing.B) {
	for _, n := range []int{0, 1000, 100_000} {
		b.Run(fmt.Sprintf("journal-%d", n), func(b *testing.B) {
			st, clk := newMem(b)
			ctx := context.Background()
			lines := make([]format.JournalLine, n)
			for i := range lines {
				lines[i] = format.JournalLine{FoldedAt: clk.NowMs(), Key: fmt.Sprintf("sig/%02x/%062x/signer-%02d", i%256, i, i%16)}
			}
			if err := st.Put(ctx, format.JournalKey, format.Journal(lines)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			var size int
			for b.Loop() {
				keys := make([]string, 4)
				for j := range keys {
					keys[j] = fmt.Sprintf("sig/ab/%062x/bench", i)
					i++
				}
				if _, err := AppendThreshold(ctx, st, keys, 1<<30); err != nil {
					b.Fatal(err)
				}
				if i%4000 == 0 { // keep the journal at its size: drop what the benchmark appended
					b.StopTimer()
					st.Put(ctx, format.JournalKey, format.Journal(lines))
					b.StartTimer()
				}
			}
			if data, err := st.Get(ctx, format.JournalKey); err == nil {
				size = len(data)
			}
			b.ReportMetric(float64(size), "journal-bytes")
		})
	}
}
