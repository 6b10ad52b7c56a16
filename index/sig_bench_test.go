package index

import (
	"context"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
)

// BenchmarkSigPath is one signature's read, open and stat as the mount asks
// them (ReadSig; OpenSig and Release; Stat of its path then SigStat, a
// GETATTR), warm (its bytes cached) and cold (dropped from the cache
// before each op: one GET of a store in memory, read-ahead off). It reports
// GET/op: a warm op sends none, a cold one exactly one.
func BenchmarkSigPath(b *testing.B) {
	ops := []struct {
		name string
		do   func(ix *Index, e format.Entry) error
	}{
		{"read", func(ix *Index, e format.Entry) error { _, err := ix.ReadSig(context.Background(), e); return err }},
		{"open", func(ix *Index, e format.Entry) error {
			h, err := ix.OpenSig(context.Background(), e)
			if err == nil {
				h.Release()
			}
			return err
		}},
		{"stat", func(ix *Index, e format.Entry) error {
			if _, err := ix.Stat(context.Background(), e.Key()); err != nil {
				return err
			}
			_, _, err := ix.SigStat(context.Background(), e)
			return err
		}},
	}
	for _, cold := range []bool{false, true} {
		for _, op := range ops {
			name := "warm/" + op.name
			if cold {
				name = "cold/" + op.name
			}
			b.Run(name, func(b *testing.B) {
				st, _, sigs := sigFixture(b, 64, 0)
				ix := openWith(b, st, Options{ReadAhead: -1})
				for _, e := range sigs {
					if err := op.do(ix, e); err != nil {
						b.Fatal(err)
					}
				}
				before := st.Counts()
				ops := 0
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					e := sigs[i%len(sigs)]
					if cold {
						ix.sigs.invalidate(e.Key())
					}
					if err := op.do(ix, e); err != nil {
						b.Fatal(err)
					}
					ops++
				}
				b.ReportMetric(float64(st.Counts().Sub(before).Get)/float64(ops), "GET/op")
			})
		}
	}
}

// BenchmarkSigQuestions is what the mount asks the index of a warm
// signature per kernel request, asked one by one as it did before issue 40
// (LOOKUP: Stat, SigVersion, Stat again, SigIdentity; GETATTR: SigVersion,
// Stat, SigVersion) and with one SigState (LOOKUP and GETATTR: SigState,
// Stat).
func BenchmarkSigQuestions(b *testing.B) {
	ctx := context.Background()
	seqs := []struct {
		name string
		do   func(ix *Index, e format.Entry, p string)
	}{
		{"lookup/one-by-one", func(ix *Index, e format.Entry, p string) {
			_, _ = ix.Stat(ctx, p)
			_ = ix.SigVersion(e)
			_, _ = ix.Stat(ctx, p)
			_, _, _ = ix.SigIdentity(e)
		}},
		{"lookup/state", func(ix *Index, e format.Entry, p string) {
			_ = ix.SigState(e)
			_, _ = ix.Stat(ctx, p)
		}},
		{"getattr/one-by-one", func(ix *Index, e format.Entry, p string) {
			_ = ix.SigVersion(e)
			_, _ = ix.Stat(ctx, p)
			_ = ix.SigVersion(e)
		}},
		{"getattr/state", func(ix *Index, e format.Entry, p string) {
			_ = ix.SigState(e)
			_, _ = ix.Stat(ctx, p)
		}},
	}
	for _, s := range seqs {
		b.Run(s.name, func(b *testing.B) {
			st, _, sigs := sigFixture(b, 64, 0)
			ix := openWith(b, st, Options{ReadAhead: -1})
			paths := make([]string, len(sigs))
			for i, e := range sigs {
				if _, err := ix.ReadSig(ctx, e); err != nil {
					b.Fatal(err)
				}
				paths[i] = e.Key()
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				j := i % len(sigs)
				s.do(ix, sigs[j], paths[j])
			}
		})
	}
}
