package index

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// heldBucket holds every request for one key (a GET's key, a LIST's
// prefix) until released or until the request's own context is done, and
// records how each held request ended.
type heldBucket struct {
	key     string
	started chan struct{} // one value per held request
	release chan struct{}
	mu      sync.Mutex
	ends    []error // ctx.Err() of each held request when it ended (nil: released)
}

func newHeldStore(t *testing.T) (*store.Store, *blobtest.Bucket) {
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket})
	t.Cleanup(func() { st.Close() })
	return st, drv
}

func (h *heldBucket) before(ctx context.Context, op blobtest.Op, key string) error {
	if key != h.key {
		return nil
	}
	h.started <- struct{}{}
	var err error
	select {
	case <-h.release:
	case <-ctx.Done():
		err = ctx.Err()
	}
	h.mu.Lock()
	h.ends = append(h.ends, err)
	h.mu.Unlock()
	return err
}

// waitFor waits (up to 10 s) until cond, checked under mu, holds.
func waitFor(t *testing.T, mu *sync.Mutex, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		ok := cond()
		mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
	}
}

func TestSharedSignatureReadOutlivesTheCallerWhoStartedIt(t *testing.T) {
	st, drv := newHeldStore(t)
	e := storefixture.Ent(format.KindSig, "abcd", "alice")
	storefixture.PutEntries(t, st, e)
	storefixture.WriteJournal(t, st, 0, e)
	ix, err := Open(context.Background(), st, Options{Warn: func(string) {}, ReadAhead: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	h := &heldBucket{key: e.Key(), started: make(chan struct{}, 4), release: make(chan struct{})}
	drv.SetHooks(blobtest.Hooks{Before: h.before})

	ctx1, cancel1 := context.WithCancel(context.Background())
	type result struct {
		data []byte
		err  error
	}
	r1, r2 := make(chan result, 1), make(chan result, 1)
	go func() { d, err := ix.ReadSig(ctx1, e); r1 <- result{d, err} }()
	<-h.started
	go func() { d, err := ix.ReadSig(context.Background(), e); r2 <- result{d, err} }()
	waitFor(t, &ix.sigs.mu, func() bool { f := ix.sigs.reading[e.Key()]; return f != nil && f.waiters == 2 })

	cancel1() // the first caller goes away (an HTTP client disconnects)
	if r := <-r1; !errors.Is(r.err, context.Canceled) {
		t.Errorf("first caller, canceled: %q, %v; want context.Canceled", r.data, r.err)
	}
	close(h.release)
	if r := <-r2; string(r.data) != string(storefixture.SigBytes(e.Key())) || r.err != nil {
		t.Errorf("second caller: %q, %v; want the signature", r.data, r.err)
	}
	if got, err := ix.ReadSig(context.Background(), e); string(got) != string(storefixture.SigBytes(e.Key())) || err != nil {
		t.Errorf("cached read: %q, %v", got, err)
	}
	h.mu.Lock()
	if len(h.ends) != 1 || h.ends[0] != nil {
		t.Errorf("GETs of the signature ended %v, want one, released (then the cache)", h.ends)
	}
	h.mu.Unlock()
}

func TestSharedReadIsCanceledWhenEveryCallerHasGone(t *testing.T) {
	st, drv := newHeldStore(t)
	e := storefixture.Ent(format.KindSig, "abcd", "alice")
	storefixture.PutEntries(t, st, e)
	storefixture.WriteJournal(t, st, 0, e)
	ix, err := Open(context.Background(), st, Options{Warn: func(string) {}, ReadAhead: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	h := &heldBucket{key: e.Key(), started: make(chan struct{}, 4), release: make(chan struct{})}
	drv.SetHooks(blobtest.Hooks{Before: h.before})
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { _, err := ix.ReadSig(ctx1, e); errs <- err }()
	<-h.started
	go func() { _, err := ix.ReadSig(ctx2, e); errs <- err }()
	waitFor(t, &ix.sigs.mu, func() bool { f := ix.sigs.reading[e.Key()]; return f != nil && f.waiters == 2 })
	cancel1()
	cancel2()
	for range 2 {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("canceled caller: %v", err)
		}
	}
	waitFor(t, &h.mu, func() bool { return len(h.ends) == 1 })
	if !errors.Is(h.ends[0], context.Canceled) {
		t.Errorf("the GET nobody waits for ended %v, want canceled", h.ends[0])
	}
	// The next caller starts a new read.
	drv.SetHooks(blobtest.Hooks{})
	if got, err := ix.ReadSig(context.Background(), e); string(got) != string(storefixture.SigBytes(e.Key())) || err != nil {
		t.Errorf("read after: %q, %v", got, err)
	}
}

func TestSharedListingOutlivesTheCallerWhoStartedIt(t *testing.T) {
	st, drv := newHeldStore(t)
	e := storefixture.Ent(format.KindSig, "abcd", "alice")
	storefixture.PutEntries(t, st, e) // no list: readers list the object's prefix
	ix, err := Open(context.Background(), st, Options{Warn: func(string) {}, ReadAhead: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	prefix := "sig/ab/cd/"
	h := &heldBucket{key: prefix, started: make(chan struct{}, 4), release: make(chan struct{})}
	drv.SetHooks(blobtest.Hooks{Before: h.before})
	v, err := ix.current(context.Background())
	if err != nil || v.pc == nil {
		t.Fatalf("view %v, %v: want prefix listing", v, err)
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	names := make(chan []Node, 1)
	go func() { _, err := ix.ReadDir(ctx1, "sig/ab/cd"); errs <- err }()
	<-h.started
	go func() {
		n, err := ix.ReadDir(context.Background(), "sig/ab/cd")
		if err != nil {
			t.Errorf("second caller: %v", err)
		}
		names <- n
	}()
	waitFor(t, &v.pc.mu, func() bool { c := v.pc.calls["obj|sig/abcd"]; return c != nil && c.waiters == 2 })
	cancel1()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Errorf("first caller, canceled: %v", err)
	}
	close(h.release)
	if n := <-names; len(n) != 1 || n[0].Name != "alice" {
		t.Errorf("second caller listed %v, want alice", n)
	}
}
