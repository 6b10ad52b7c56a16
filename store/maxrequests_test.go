package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// heldBucket holds every GET in its Before hook until release is closed,
// and records how many were held at once.
type heldBucket struct {
	entered chan struct{} // one send per GET that reached the bucket
	release chan struct{}
	mu      sync.Mutex
	now     int
	peak    int
	gets    int
}

func heldStore(t *testing.T, maxRequests int) (*store.Store, *heldBucket) {
	t.Helper()
	hb := &heldBucket{entered: make(chan struct{}, 100), release: make(chan struct{})}
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, MaxRequests: maxRequests})
	t.Cleanup(func() { st.Close() })
	for i := range 10 {
		if err := st.Put(context.Background(), fmt.Sprintf("k%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, _ string) error {
		if op != blobtest.OpGet {
			return nil
		}
		hb.mu.Lock()
		hb.now++
		hb.gets++
		hb.peak = max(hb.peak, hb.now)
		hb.mu.Unlock()
		hb.entered <- struct{}{}
		<-hb.release
		hb.mu.Lock()
		hb.now--
		hb.mu.Unlock()
		return nil
	}})
	return st, hb
}

// getAll sends n GETs at once and returns a channel closed when all are done.
func getAll(t *testing.T, st *store.Store, n int) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := st.Get(context.Background(), fmt.Sprintf("k%d", i)); err != nil {
				t.Error(err)
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	return done
}

func TestMaxRequestsCapsRequestsInFlight(t *testing.T) {
	for _, tc := range []struct{ max, want int }{{3, 3}, {1, 1}, {-1, 10}, {0, 10}} {
		t.Run(fmt.Sprint(tc.max), func(t *testing.T) {
			st, hb := heldStore(t, tc.max)
			done := getAll(t, st, 10)
			for range tc.want {
				<-hb.entered // the cap's worth of GETs reach the bucket
			}
			close(hb.release)
			<-done
			hb.mu.Lock()
			defer hb.mu.Unlock()
			if hb.peak != tc.want || hb.gets != 10 {
				t.Fatalf("MaxRequests %d: peak %d GETs in flight of %d sent, want %d of 10", tc.max, hb.peak, hb.gets, tc.want)
			}
		})
	}
}

func TestMaxRequestsCancelReleasesWaiter(t *testing.T) {
	st, hb := heldStore(t, 1)
	done := getAll(t, st, 1)
	<-hb.entered // the one slot is taken
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := st.Get(ctx, "k1")
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled waiter: %v, want context.Canceled", err)
	}
	before := st.Counts().Get
	close(hb.release)
	<-done
	if _, err := st.Get(context.Background(), "k2"); err != nil {
		t.Fatalf("after the held GET finished: %v", err)
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.gets != 2 || before != 1 {
		t.Fatalf("GETs sent %d (counted %d while waiting), want 2 (1): the canceled one sent nothing", hb.gets, before)
	}
}
