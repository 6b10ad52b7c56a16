package index

import (
	"bytes"
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// TestReadAheadPipelinesOverS3: over a real S3 server (versitygw), a read
// of every signature in order finds each one fetched by read-ahead in
// pipelined batches (the store's Pipeline: batches written, none cut):
// one GET a signature, the bytes exact, the GETs in flight within the
// limit. (A reader in this process outruns the server, so how often it
// waits says nothing here; through a mount it hardly waits:
// docs/performance.md, Target 3.)
func TestReadAheadPipelinesOverS3(t *testing.T) {
	srv := testservers.Start(t, "s3")
	ctx := context.Background()
	st, err := store.Open(ctx, srv.NewBucket(t), store.Options{Layout: store.LayoutBucket, PipelineDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var sigs []format.Entry
	if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 1500, Seed: 12, Fold: true, OnEntry: func(e format.Entry, _ string) {
		if e.Kind == format.KindSig {
			sigs = append(sigs, e)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(sigs, func(a, b format.Entry) int { return strings.Compare(a.Key(), b.Key()) })
	sigs = slices.CompactFunc(sigs, func(a, b format.Entry) bool { return a == b })
	want := map[string][]byte{}
	for _, e := range sigs {
		data, err := st.Get(ctx, e.Key())
		if err != nil {
			t.Fatal(err)
		}
		want[e.Key()] = data
	}
	ix := openWith(t, st, Options{})
	ps0, ok := st.Pipeline()
	if !ok {
		t.Fatalf("read path %q: no pipeline", st.ReadPath())
	}
	fsys := ix.FS()
	d := storefixture.Delta(st, func() {
		for _, e := range sigs {
			got, err := fs.ReadFile(fsys, e.Key())
			if err != nil || !bytes.Equal(got, want[e.Key()]) {
				t.Fatalf("%s: %d bytes, %v; want %d", e.Key(), len(got), err, len(want[e.Key()]))
			}
		}
		ix.Close()
	})
	if d != (store.Counts{Get: int64(len(sigs))}) {
		t.Errorf("a read of %d signatures sent %v, want one GET each", len(sigs), d)
	}
	ps, _ := st.Pipeline()
	s := ix.Status()
	t.Logf("%d signatures: pipeline %+v, read-ahead peak %d, limit %d, cache misses %d", len(sigs), ps, s.ReadAhead.Peak, s.ReadAhead.Limit, s.SigCache.Misses)
	if ps.Batches-ps0.Batches < int64(len(sigs)/(2*ps.MaxDepth)) || ps.Cut != 0 || ps.Owed != 0 {
		t.Errorf("pipeline %+v after %d signatures read ahead: want batches of up to %d, none cut", ps, len(sigs), ps.MaxDepth)
	}
	if s.ReadAhead.Peak > s.ReadAhead.Max {
		t.Errorf("read-ahead had %d GETs in flight, over its most %d", s.ReadAhead.Peak, s.ReadAhead.Max)
	}
	if s.ReadAhead.Pipeline == nil || !strings.Contains(s.ReadAhead.ReadPath, "pipelined") {
		t.Errorf("status read path %q, pipeline %v", s.ReadAhead.ReadPath, s.ReadAhead.Pipeline)
	}
}
