package index

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestSigChangesAreEveryWayBytesChange: each way a signature's bytes can
// change under a reader moves its time, and nothing else does: a first read,
// a read of the same size again, and another key's change leave it alone.
func TestSigChangesAreEveryWayBytesChange(t *testing.T) {
	clock := time.Unix(1000, 0)
	c := newSigCache(1<<20, 1<<10)
	c.now = func() time.Time { return clock }
	tick := func() time.Time { clock = clock.Add(time.Second); return clock }
	const k, other = "sig/ab/12/alice", "sig/ab/12/bob"
	want := func(what string, key string, at time.Time) {
		t.Helper()
		if got := c.changedAt(key); !got.Equal(at) {
			t.Errorf("after %s: %s changed at %v, want %v", what, key, got, at)
		}
	}
	ins := func(key string, data []byte) { c.insertLocked(key, data, c.digest(data), 0) }
	ins(k, []byte("four"))
	want("a first read", k, time.Time{})
	tick()
	c.removeLocked(k) // evicted, size and digest remembered
	ins(k, []byte("four"))
	want("a read of the same bytes", k, time.Time{})
	t0 := tick()
	c.removeLocked(k)
	ins(k, []byte("same"))
	want("a read of other bytes of the same size (replaced without a journal line)", k, t0)
	t1 := tick()
	ins(k, []byte("longer now"))
	want("a read of another size (replaced without a journal line)", k, t1)
	want("another key's change", other, time.Time{})
	t2 := tick()
	c.put(k, []byte("own write"), 0)
	want("an own write", k, t2)
	t3 := tick()
	c.invalidate(k)
	want("a refresh that shows it replaced", k, t3)
	t4 := tick()
	c.clearAll()
	want("a directory-layout refresh", other, t4)
	want("a directory-layout refresh", k, t4)
	t5 := tick()
	c.put(k, []byte("x"), 0)
	want("a change after everything changed", k, t5)
	want("a change after everything changed", other, t4)
}

// TestSigChangesStayBounded: past maxSigChanges keys the table starts over
// and every key counts as changed then; past the remembered sizes' bound,
// too (a size forgotten cannot be compared).
func TestSigChangesStayBounded(t *testing.T) {
	clock := time.Unix(1000, 0)
	c := newSigCache(1<<20, 1<<20)
	c.now = func() time.Time { return clock }
	for i := range maxSigChanges + 1 {
		clock = clock.Add(time.Millisecond)
		c.invalidate(fmt.Sprintf("sig/00/%d/x", i))
	}
	if n := len(c.changes.at); n > maxSigChanges {
		t.Errorf("%d changes remembered, bound %d", n, maxSigChanges)
	}
	if got := c.changedAt("sig/ff/never/x"); got.IsZero() {
		t.Error("after the table started over, a key never changed reads as never changed")
	}

	c = newSigCache(1<<20, 4)
	c.now = func() time.Time { return clock }
	for i := range 4 {
		c.insertLocked(fmt.Sprintf("sig/00/%d/x", i), []byte("b"), 0, 0)
	}
	if got := c.changedAt("sig/00/0/x"); !got.IsZero() {
		t.Fatalf("changed at %v before the sizes started over", got)
	}
	clock = clock.Add(time.Second)
	c.insertLocked("sig/00/5/x", []byte("b"), 0, 0)
	if got := c.changedAt("sig/00/0/x"); !got.Equal(clock) {
		t.Errorf("after the sizes started over: changed at %v, want %v", got, clock)
	}
}

// TestWatchSigChangesHearsEveryVersionMove: a subscriber is called with the
// key of each signature whose version moves (an own write, bytes a read
// found replaced) and with "" when every signature's may have; a read of
// the same bytes calls nothing.
func TestWatchSigChangesHearsEveryVersionMove(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")
	storefixture.PutEntries(t, st, a)
	storefixture.WriteEntryList(t, st, true, a)
	ix, err := Open(ctx, st, Options{Warn: func(string) {}, ReadAhead: -1, SigCacheBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	heard := make(chan string, 16)
	ix.Subscribe(func(c Change) { // subscribe.go; publishes are not asked about here
		switch c.Kind {
		case ChangeSig:
			heard <- c.Key
		case ChangeAllSigs:
			heard <- ""
		}
	})
	expect := func(what, want string) {
		t.Helper()
		if got := <-heard; got != want {
			t.Fatalf("after %s the watcher heard %q, want %q", what, got, want)
		}
	}
	v0 := ix.SigVersion(a)
	if _, err := ix.ReadSig(ctx, a); err != nil { // a first read: no change
		t.Fatal(err)
	}
	if err := st.Put(ctx, a.Key(), []byte("other bytes")); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.ReadSig(ctx, a); err != nil { // the cache holds nothing: a GET finds them
		t.Fatal(err)
	}
	expect("a read that found other bytes", a.Key())
	v1 := ix.SigVersion(a)
	if _, err := ix.ReadSig(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := ix.Put(ctx, a, []byte("own")); err != nil {
		t.Fatal(err)
	}
	expect("an own write", a.Key())
	v2 := ix.SigVersion(a)
	ix.sigs.clearAll()
	expect("every signature changed", "")
	if v3 := ix.SigVersion(a); v0 == v1 || v1 == v2 || v2 == v3 {
		t.Errorf("versions %d %d %d %d: each change must move it", v0, v1, v2, v3)
	}
	select {
	case k := <-heard:
		t.Errorf("heard %q more", k)
	default:
	}
}
