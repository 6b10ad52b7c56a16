package index

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// latencyBucket adds a round trip to every request, as a remote bucket
// would, and can hold the GETs of chosen keys until released (or their
// context ends). It counts the GETs in flight and their peak.
type latencyBucket struct {
	latency atomic.Int64 // ns per request

	mu      sync.Mutex
	hold    func(key string) bool
	release chan struct{}

	inFlight, peak atomic.Int64
}

// newLatencyStore opens a mem store over a latencyBucket.
func newLatencyStore(t testing.TB, latency time.Duration) (*store.Store, *latencyBucket) {
	t.Helper()
	return newLatencyStoreCapped(t, latency, 0)
}

// newLatencyStoreCapped is newLatencyStore with the store's requests in
// flight capped at maxRequests (0: store.DefaultMaxRequests).
func newLatencyStoreCapped(t testing.TB, latency time.Duration, maxRequests int) (*store.Store, *latencyBucket) {
	t.Helper()
	lb := &latencyBucket{release: make(chan struct{})}
	lb.latency.Store(int64(latency))
	drv := blobtest.New(nil)
	drv.SetHooks(blobtest.Hooks{Before: lb.before})
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, MaxRequests: maxRequests})
	t.Cleanup(func() { st.Close() })
	return st, lb
}

// holdGets makes GETs of the keys fn picks wait until releaseGets.
func (b *latencyBucket) holdGets(fn func(key string) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hold = fn
}

func (b *latencyBucket) releaseGets() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hold = nil
	close(b.release)
	b.release = make(chan struct{})
}

func (b *latencyBucket) before(ctx context.Context, op blobtest.Op, key string) error {
	if op != blobtest.OpGet {
		return b.wait(ctx, "")
	}
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	for p := b.peak.Load(); n > p && !b.peak.CompareAndSwap(p, n); p = b.peak.Load() {
	}
	return b.wait(ctx, key)
}

// wait waits one round trip, and while key (a GET's; "" for other
// requests) is held, until it is released.
func (b *latencyBucket) wait(ctx context.Context, key string) error {
	b.mu.Lock()
	held := key != "" && b.hold != nil && b.hold(key)
	release := b.release
	b.mu.Unlock()
	var hold <-chan struct{}
	if held {
		hold = release
	}
	t := time.NewTimer(time.Duration(b.latency.Load()))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-hold:
			hold = nil
		case <-t.C:
			if hold == nil {
				return nil
			}
			t.Reset(time.Hour)
		}
	}
}
