package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// TestConcurrentWritersAndFoldsOnS3: 8 writers, each with its own store and
// index handle, put 50 signatures each into one S3 bucket while complete
// folds run every ~200 ms beside them; then one last fold. No write is lost:
// the store is folded, its one live list is exactly the per-object keys, a
// fresh handle sees every entry whose Put returned nil, and no compare-and-
// swap ran out of tries.
func TestConcurrentWritersAndFoldsOnS3(t *testing.T) {
	t.Parallel()
	srv := testservers.Start(t, "s3")
	url := srv.NewBucket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const writers, perWriter = 8, 50
	const foldEvery = 200 * time.Millisecond

	type writerResult struct {
		landed      []format.Entry
		failed      []error
		maxTries    int64 // most journal CAS tries one Put took
		totalTries  int64
		appends     int64
		journalKeys int64
		requests    store.Counts
		took        time.Duration
	}
	results := make([]writerResult, writers)
	stopFolds := make(chan struct{})
	type foldStats struct {
		runs, wrote, maxTries int
		errs                  []error
	}
	var folds foldStats
	var foldWG sync.WaitGroup
	foldWG.Add(1)
	go func() {
		defer foldWG.Done()
		st, err := store.Open(ctx, url, store.Options{})
		if err != nil {
			folds.errs = append(folds.errs, err)
			return
		}
		defer st.Close()
		tick := time.NewTicker(foldEvery)
		defer tick.Stop()
		for {
			rep, err := fold.Complete(ctx, st, fold.Options{})
			folds.runs++
			if err != nil {
				folds.errs = append(folds.errs, err)
			} else {
				folds.maxTries = max(folds.maxTries, rep.CASTries)
				if rep.List.Written {
					folds.wrote++
				}
			}
			select {
			case <-stopFolds:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	began := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[w]
			start := time.Now()
			st, err := store.Open(ctx, url, store.Options{})
			if err != nil {
				r.failed = append(r.failed, err)
				return
			}
			defer st.Close()
			ix, err := index.Open(ctx, st, index.Options{Warn: func(msg string) { t.Logf("writer %d: warning: %s", w, msg) }})
			if err != nil {
				r.failed = append(r.failed, err)
				return
			}
			if err := ix.Load(ctx); err != nil {
				r.failed = append(r.failed, err)
				return
			}
			for i := range perWriter {
				e := format.Entry{Kind: format.KindSig, Object: newObjectID(w, i), Value: fmt.Sprintf("writer-%02d", w)}
				data := []byte(fmt.Sprintf("signature %d of writer %d", i, w))
				c0 := st.Counts()
				err := ix.Put(ctx, e, data)
				// One PUT for the per-object key, then one GET and one
				// PUT per compare-and-swap try of the journal append.
				tries := st.Counts().Sub(c0).Put - 1
				if err != nil {
					r.failed = append(r.failed, fmt.Errorf("put %s: %w", e.Key(), err))
					continue
				}
				r.landed = append(r.landed, e)
				r.maxTries = max(r.maxTries, tries)
				r.totalTries += tries
			}
			s := ix.Status()
			r.appends, r.journalKeys, r.requests = s.JournalAppends, s.JournalKeys, s.Requests
			if err := ix.Close(); err != nil {
				r.failed = append(r.failed, err)
			}
			r.took = time.Since(start)
		}()
	}
	wg.Wait()
	writing := time.Since(began)
	close(stopFolds)
	foldWG.Wait()

	st, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	final, err := fold.Complete(ctx, st, fold.Options{})
	if err != nil {
		t.Fatalf("final fold: %v", err)
	}

	var landed []format.Entry
	var maxTries, totalTries, appends int64
	for w, r := range results {
		for _, err := range r.failed {
			t.Errorf("writer %d: %v", w, err)
		}
		landed = append(landed, r.landed...)
		maxTries = max(maxTries, r.maxTries)
		totalTries += r.totalTries
		appends += r.appends
		if r.appends != int64(len(r.landed)) || r.journalKeys != int64(len(r.landed)) {
			t.Errorf("writer %d: %d journal appends carrying %d keys for %d sequential Puts, want one each", w, r.appends, r.journalKeys, len(r.landed))
		}
		t.Logf("writer %d: %d puts in %v, %s, CAS tries: max %d per append, %d total", w, len(r.landed), r.took.Round(time.Millisecond), r.requests, r.maxTries, r.totalTries)
	}
	t.Logf("%d writers × %d puts in %v (%.0f puts/s) beside %d folds (%d wrote a list, max CAS tries %d); journal appends %d, CAS tries max %d per append, %d in all (%.2f per append); final fold: %s",
		writers, perWriter, writing.Round(time.Millisecond), float64(len(landed))/writing.Seconds(), folds.runs, folds.wrote, folds.maxTries, appends, maxTries, totalTries, float64(totalTries)/float64(max(appends, 1)), final.Requests)
	for _, err := range folds.errs {
		t.Errorf("a fold beside the writers failed: %v", err)
	}
	if folds.runs < 2 {
		t.Errorf("only %d folds ran beside the writers; the test proves little", folds.runs)
	}
	if len(landed) != writers*perWriter {
		t.Errorf("%d of %d Puts returned nil", len(landed), writers*perWriter)
	}
	if maxTries >= store.MaxCASTries || final.CASTries >= store.MaxCASTries {
		t.Errorf("a compare-and-swap took %d tries (fold: %d), the limit is %d", maxTries, final.CASTries, store.MaxCASTries)
	}

	// The store is folded: one live list, complete, and it is exactly the
	// per-object keys; every journal line is folded.
	sn, err := st.ReadSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := sn.LiveLists()
	if !sn.Folded() || len(live) != 1 || !live[0].Complete {
		t.Fatalf("after the final fold: folded=%v, live lists %+v; want exactly one live complete list", sn.Folded(), live)
	}
	if n := sn.UnfoldedLines(); n != 0 {
		t.Errorf("after the final fold: %d unfolded journal lines, want 0", n)
	}
	data, err := st.Get(ctx, live[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := format.DecodeEntryListAll(data)
	if err != nil {
		t.Fatalf("decode %s: %v", live[0].Name, err)
	}
	var objects []string
	for _, k := range format.Kinds {
		if err := st.List(ctx, k.Prefix(), "", func(it store.ListItem) error {
			objects = append(objects, it.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(objects)
	if !slices.Equal(listed, objects) {
		t.Errorf("the live list %s holds %d keys, the bucket %d per-object keys; they differ", live[0].Name, len(listed), len(objects))
	}
	var want []string
	for _, e := range landed {
		want = append(want, e.Key())
	}
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		missing := 0
		for _, k := range want {
			if _, ok := slices.BinarySearch(listed, k); !ok {
				missing++
				if missing <= 5 {
					t.Errorf("a Put that returned nil is not in the live list: %s", k)
				}
			}
		}
		t.Errorf("the live list holds %d keys, %d Puts returned nil, %d of them missing", len(listed), len(want), missing)
	}

	// A fresh handle, opened as a mount would, sees every entry that landed.
	rst, err := store.Open(ctx, url, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rst.Close()
	ix, err := index.Open(ctx, rst, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s := ix.Status()
	if s.Mode != index.ModeFolded || s.Entries != len(landed) {
		t.Errorf("fresh handle: mode %q, %d entries; want folded and %d", s.Mode, s.Entries, len(landed))
	}
	if o := s.OpenRequests; o.List != 1 || o.Get != 3 {
		t.Errorf("fresh handle's open: %s, want list=1 get=3", o)
	}
	c0 := rst.Counts()
	missing := 0
	for _, e := range landed {
		if _, err := ix.Stat(ctx, e.Key()); err != nil {
			missing++
			if missing <= 5 {
				t.Errorf("fresh handle: stat %s: %v", e.Key(), err)
			}
		}
	}
	if missing > 0 {
		t.Errorf("fresh handle misses %d of %d entries that landed", missing, len(landed))
	}
	if d := rst.Counts().Sub(c0); d.Total() != 0 {
		t.Errorf("%d lookups on the fresh folded handle sent %s, want none", len(landed), d)
	}
	// Spot-check bytes: each writer's first signature.
	for w := range writers {
		e := format.Entry{Kind: format.KindSig, Object: newObjectID(w, 0), Value: fmt.Sprintf("writer-%02d", w)}
		got, err := ix.ReadSig(ctx, e)
		if want := fmt.Sprintf("signature %d of writer %d", 0, w); err != nil || string(got) != want {
			t.Errorf("fresh handle: read %s: %q, %v; want %q", e.Key(), got, err, want)
		}
	}
}

// newObjectID is a 64-hex object id unique to writer w's i-th entry, spread
// over the <hh> buckets.
func newObjectID(w, i int) string {
	return fmt.Sprintf("%02x%02x%060x", (w*perWriterSpread+i*37)%256, w, i)
}

const perWriterSpread = 31
