package index

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// sigFixture generates a folded store of n entries (about 70% signatures,
// 1–2 per object) on a latency bucket and returns the signatures sorted by
// key, as `cat` of a sorted `find` reads them. wantSig holds their bytes.
func sigFixture(t testing.TB, n int, latency time.Duration) (*store.Store, *latencyBucket, []format.Entry) {
	t.Helper()
	return sigFixtureCapped(t, n, latency, 0)
}

// sigFixtureCapped is sigFixture on a store whose requests in flight are
// capped at maxRequests (store.Options.MaxRequests; 0: the default).
func sigFixtureCapped(t testing.TB, n int, latency time.Duration, maxRequests int) (*store.Store, *latencyBucket, []format.Entry) {
	t.Helper()
	st, lb := newLatencyStoreCapped(t, 0, maxRequests)
	var sigs []format.Entry
	if _, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: n, Seed: 11, Fold: true, OnEntry: func(e format.Entry, _ string) {
		if e.Kind == format.KindSig {
			sigs = append(sigs, e)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(sigs, func(a, b format.Entry) int { return strings.Compare(a.Key(), b.Key()) })
	sigs = slices.CompactFunc(sigs, func(a, b format.Entry) bool { return a == b })
	for _, e := range sigs {
		data, err := st.Bucket().ReadAll(context.Background(), e.Key())
		if err != nil {
			t.Fatal(err)
		}
		wantSig.Store(e.Key(), data)
	}
	lb.latency.Store(int64(latency))
	return st, lb, sigs
}

// wantSig maps a signature key of a sigFixture to its bytes.
var wantSig sync.Map

func openWith(t testing.TB, st *store.Store, opts Options) *Index {
	t.Helper()
	ix, err := Open(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ix
}

// catAll reads every signature through the io/fs view, in order, and
// checks its bytes.
func catAll(t testing.TB, ix *Index, sigs []format.Entry) {
	t.Helper()
	fsys := ix.FS()
	for _, e := range sigs {
		got, err := fs.ReadFile(fsys, e.Key())
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := wantSig.Load(e.Key()); !bytes.Equal(got, want.([]byte)) {
			t.Fatalf("%s: %x, want %x", e.Key(), got, want)
		}
	}
}

func TestReadAheadSendsOneGetPerSignatureInOrder(t *testing.T) {
	st, lb, sigs := sigFixture(t, 600, time.Millisecond)
	ix := openWith(t, st, Options{})
	lb.peak.Store(0)
	d := storefixture.Delta(st, func() {
		catAll(t, ix, sigs)
		ix.Close() // waits for read-ahead: nothing may still be in flight
	})
	if want := (store.Counts{Get: int64(len(sigs))}); d != want {
		t.Fatalf("cat of %d signatures sent %v, want exactly one GET each (no HEAD, no LIST)", len(sigs), d)
	}
	if p, most := lb.peak.Load(), int64(st.MaxRequests()); p < 2 || p > most {
		t.Fatalf("at most %d GETs in flight, want 2..%d (the store's cap)", p, most)
	}
	// Sizes are remembered for all.
	for _, e := range sigs {
		want, _ := wantSig.Load(e.Key())
		if n, _ := ix.sigs.size(e.Key()); n != int64(len(want.([]byte))) {
			t.Fatalf("%s: size %d remembered, want %d", e.Key(), n, len(want.([]byte)))
		}
	}
	t.Logf("%d signatures, %d GETs, peak %d in flight", len(sigs), d.Get, lb.peak.Load())
}

func TestReadAheadOffSendsOneGetPerSignatureOneAtATime(t *testing.T) {
	st, lb, sigs := sigFixture(t, 200, 0)
	ix := openWith(t, st, Options{ReadAhead: -1})
	lb.peak.Store(0)
	d := storefixture.Delta(st, func() { catAll(t, ix, sigs) })
	if d != (store.Counts{Get: int64(len(sigs))}) || lb.peak.Load() != 1 {
		t.Fatalf("sent %v, peak %d in flight", d, lb.peak.Load())
	}
}

// TestReadDirAndStatFetchNothingAhead: `find` and `ls` (ReadDir, Stat,
// readlink) over the whole tree send no request, read-ahead included.
func TestReadDirAndStatFetchNothingAhead(t *testing.T) {
	st, _, sigs := sigFixture(t, 300, 0)
	ix := openWith(t, st, Options{})
	ctx := context.Background()
	d := storefixture.Delta(st, func() {
		err := fs.WalkDir(ix.FS(), ".", func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if de.Type()&fs.ModeSymlink != 0 {
				_, err = ix.FS().(fs.ReadLinkFS).ReadLink(p)
				return err
			}
			_, err = ix.Stat(ctx, p)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range sigs {
			if _, err := ix.ReadDir(ctx, objectPath(e.Kind, e.Object)); err != nil {
				t.Fatal(err)
			}
		}
		ix.Close() // read-ahead done, if any started
	})
	if d.Total() != 0 {
		t.Fatalf("a walk with Stat and ReadDir sent %v", d)
	}
}

// TestReadAheadStaysWithinTheCache: a window larger than a quarter of what
// the cache holds is cut to it, so what is fetched ahead is still cached
// when it is read.
func TestReadAheadStaysWithinTheCache(t *testing.T) {
	st, _, sigs := sigFixture(t, 400, 0)
	ix := openWith(t, st, Options{SigCacheBytes: 8 << 10, ReadAhead: 1000})
	d := storefixture.Delta(st, func() {
		catAll(t, ix, sigs)
		ix.Close()
	})
	if d != (store.Counts{Get: int64(len(sigs))}) {
		t.Fatalf("cat of %d signatures through an 8 KiB cache sent %v", len(sigs), d)
	}
}

// TestCloseCancelsReadAhead: Close cancels the read-ahead GETs in flight
// and returns once its workers stopped; a reader that was waiting for one
// of them reads the signature itself, and reads keep working after Close.
func TestCloseCancelsReadAhead(t *testing.T) {
	ctx := context.Background()
	st, lb, sigs := sigFixture(t, 100, 0)
	first := sigs[0].Key()
	lb.holdGets(func(key string) bool { return strings.HasPrefix(key, "sig/") && key != first })
	ix := openWith(t, st, Options{})
	if _, err := ix.ReadSig(ctx, sigs[0]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for lb.inFlight.Load() < int64(min(readAheadMinWorkers, readAheadFirst, len(sigs)-1)) { // the first round trip: the adapted limit starts at its floor
		if time.Now().After(deadline) {
			t.Fatalf("read-ahead started %d GETs", lb.inFlight.Load())
		}
		time.Sleep(time.Millisecond)
	}
	waiting := make(chan error, 1)
	go func() {
		got, err := ix.ReadSig(ctx, sigs[1]) // joins the held read-ahead GET
		if err == nil && len(got) == 0 {
			err = fmt.Errorf("no bytes")
		}
		waiting <- err
	}()
	time.Sleep(20 * time.Millisecond)
	lb.holdGets(func(key string) bool { return strings.HasPrefix(key, "sig/") && key != first && key != sigs[1].Key() })
	began := time.Now()
	ix.Close()
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("Close took %s", took)
	}
	if n := lb.inFlight.Load(); n > 1 {
		t.Fatalf("%d GETs still in flight after Close (the waiting reader's own at most)", n)
	}
	select {
	case err := <-waiting:
		if err != nil {
			t.Fatalf("reader waiting on a cancelled read-ahead GET: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reader waiting on a cancelled read-ahead GET never returned")
	}
	lb.releaseGets()
	d := storefixture.Delta(st, func() {
		if _, err := ix.ReadSig(ctx, sigs[2]); err != nil {
			t.Fatal(err)
		}
	})
	time.Sleep(20 * time.Millisecond)
	if d != (store.Counts{Get: 1}) || lb.inFlight.Load() != 0 {
		t.Fatalf("a read after Close sent %v; %d in flight (no read-ahead after Close)", d, lb.inFlight.Load())
	}
}

// TestReadAheadGrowsInFlightWhenTheWireIsTheBound: far from the server
// (every GET waits 50 ms and the server does no work), the GETs in flight
// grow past the 64 the read-ahead used to stop at, towards the store's cap
// on requests in flight (`--max-requests`, here 128), and never past it;
// and still one GET is sent per signature. With a cap of 40 they stop at
// 40. congestion_test.go holds the controller to its rules on a model server;
// this is the same rule seen through ReadSig and a bucket.
func TestReadAheadGrowsInFlightWhenTheWireIsTheBound(t *testing.T) {
	for _, tc := range []struct {
		maxRequests int
		over        int64 // the peak must pass this
	}{{128, 72}, {40, 16}} {
		t.Run(fmt.Sprint(tc.maxRequests), func(t *testing.T) {
			st, lb, sigs := sigFixtureCapped(t, 4000, 50*time.Millisecond, tc.maxRequests)
			ix := openWith(t, st, Options{})
			lb.peak.Store(0)
			d := storefixture.Delta(st, func() {
				catAll(t, ix, sigs)
				ix.Close()
			})
			if want := (store.Counts{Get: int64(len(sigs))}); d != want {
				t.Fatalf("cat of %d signatures sent %v, want exactly one GET each", len(sigs), d)
			}
			ra := ix.Status().ReadAhead
			if p := lb.peak.Load(); p <= tc.over || p > int64(tc.maxRequests) || ra.Peak > ra.Max || ra.Max > tc.maxRequests {
				t.Fatalf("peak %d GETs in flight at 50 ms (read-ahead: %+v), want more than %d and at most the store's cap of %d", p, ra, tc.over, tc.maxRequests)
			}
			t.Logf("%d signatures at 50 ms a GET, --max-requests %d: peak %d in flight (read-ahead %+v)", len(sigs), tc.maxRequests, lb.peak.Load(), ra)
		})
	}
}

// TestReadAheadWorkersStayWithinTheStoresCap: the depth read-ahead may
// reach is the store's cap but an eighth, an explicit ReadAheadWorkers
// never passes the cap, and an uncapped store leaves it at
// readAheadUncapped.
func TestReadAheadWorkersStayWithinTheStoresCap(t *testing.T) {
	for _, tc := range []struct{ workers, storeCap, want int }{
		{0, 256, 224}, {0, 64, 56}, {0, 8, 7}, {0, 4, readAheadMinWorkers}, {0, 2, 2}, {0, 1, 1}, {0, 0, readAheadUncapped},
		{500, 128, 128}, {32, 128, 32}, {500, 0, 500},
	} {
		if got := readAheadWorkers(tc.workers, tc.storeCap); got != tc.want {
			t.Errorf("readAheadWorkers(%d, %d) = %d, want %d", tc.workers, tc.storeCap, got, tc.want)
		}
	}
}
