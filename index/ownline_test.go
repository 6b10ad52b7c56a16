package index

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestARefreshOfAnOwnWritesLineMovesNoVersion (the ESTALE double move of
// integration/TestManyHandlesOnOneBucket): this handle re-signs, which
// moves the signature's version once; the refresh that then sees the
// write's own journal line must not move it again — the bytes are the
// same, and a reader the first move sent to look the name up again (the
// kernel retries a stale open once) would be sent again, and fail. A
// refresh after another writer re-signed still shows the new bytes, with
// a new version.
func TestARefreshOfAnOwnWritesLineMovesNoVersion(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	k := storefixture.Ent(format.KindSig, objA, "alice")
	storefixture.PutEntries(t, st, k)
	storefixture.WriteEntryList(t, st, true, k)
	ix, _ := openIndex(t, st)
	if _, err := ix.ReadSig(ctx, k); err != nil {
		t.Fatal(err)
	}
	v0 := ix.SigVersion(k)
	own := bytes.Repeat([]byte("own "), 20)
	if err := ix.Put(ctx, k, own); err != nil {
		t.Fatal(err)
	}
	v1 := ix.SigVersion(k)
	if v1 == v0 {
		t.Fatal("the own write did not move the version")
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if v := ix.SigVersion(k); v != v1 {
		t.Errorf("the refresh that saw only the own write's line moved the version %d → %d (the bytes are the same)", v1, v)
	}
	if got, err := ix.ReadSig(ctx, k); err != nil || !bytes.Equal(got, own) {
		t.Fatalf("read after the refresh: %q %v", got, err)
	}
	if v := ix.SigVersion(k); v != v1 {
		t.Errorf("a read of the own bytes after the refresh moved the version %d → %d", v1, v)
	}

	// Another writer re-signs after this handle's write: its append is
	// not one of this handle's, so the journal's sums chain no more, and
	// the refresh moves the version and drops the bytes.
	if err := ix.Put(ctx, k, bytes.Repeat([]byte("own again "), 3)); err != nil {
		t.Fatal(err)
	}
	v2 := ix.SigVersion(k)
	other, _ := openIndex(t, st)
	theirs := []byte("theirs")
	if err := other.Put(ctx, k, theirs); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if v := ix.SigVersion(k); v == v2 {
		t.Error("the refresh after the other writer's re-sign kept the version")
	}
	if n, err := ix.Stat(ctx, k.Key()); err != nil || n.Size >= 0 {
		t.Errorf("after a refresh that saw a new line: size %d %v, want unknown (-1) until read", n.Size, err)
	}
	if got, err := ix.ReadSig(ctx, k); err != nil || !bytes.Equal(got, theirs) {
		t.Fatalf("read after the other writer's re-sign: %q %v, want %q", got, err, theirs)
	}
	if v := ix.SigVersion(k); v == v2 {
		t.Error("the other writer's re-sign, read after the refresh, did not move the version")
	}
	// And a line of a signature this handle never wrote moves it at the
	// refresh, as before.
	v3 := ix.SigVersion(k)
	if err := other.Put(ctx, k, []byte("theirs again")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if v := ix.SigVersion(k); v == v3 {
		t.Error("a refresh that saw another writer's line of a signature this handle did not write last kept its version")
	}
}

// TestOwnLog: the journal's sums chain through own appends only; since
// counts the appends between two reads; prune keeps what a later refresh
// needs, within a bound.
func TestOwnLog(t *testing.T) {
	var o ownLog
	prev := readTicks{begun: o.now(), done: o.now()}
	o.add(1, 2, []string{"a"}, o.now())
	o.add(2, 3, []string{"b", "a"}, o.now())
	during := o.now()
	cur := readTicks{begun: o.now(), done: o.now()}
	o.add(7, 8, []string{"c"}, during) // begun before cur's read, done after it began
	if keys, ok := o.between(1, 3); !ok || !keys["a"] || !keys["b"] || keys["c"] {
		t.Errorf("between(1, 3) = %v %v, want a and b", keys, ok)
	}
	if keys, ok := o.between(2, 3); !ok || !keys["b"] || len(keys) != 2 {
		t.Errorf("between(2, 3) = %v %v, want b and a", keys, ok)
	}
	for _, c := range [][2]uint64{{1, 8}, {3, 8}, {1, 1}, {4, 5}} {
		if keys, ok := o.between(c[0], c[1]); ok {
			t.Errorf("between(%d, %d) = %v: another update came between", c[0], c[1], keys)
		}
	}
	if n := o.since(prev, cur); n["a"] != 2 || n["b"] != 1 || n["c"] != 0 {
		t.Errorf("since = %v, want a 2, b 1 (c landed during the read: maybe not in it)", n)
	}
	o.prune(cur)
	if len(o.links) != 1 || o.links[0].keys[0] != "c" {
		t.Errorf("prune kept %v, want the append that landed during the read", o.links)
	}
	next := readTicks{begun: o.now(), done: o.now()}
	if n := o.since(cur, next); len(n) != 0 {
		t.Errorf("since(cur, next) = %v: c began before cur's read was done", n)
	}
	for i := range maxOwnLinks + 10 {
		o.add(uint64(i+100), uint64(i+101), nil, o.now())
	}
	if len(o.links) > maxOwnLinks {
		t.Errorf("%d links kept, over the bound %d", len(o.links), maxOwnLinks)
	}
}

// TestForgetThenPutAgainAfterAnOwnWriteIsSeen (the byte simulation's seed
// 46, op 306): the reader's view holds k with one unfolded line; the
// reader re-signs k itself (its own line); a collection forgets k's object
// (its key and both lines) and another writer puts k again (one line).
// The journal then reads as the view's: one unfolded line of k, the last.
// The reader's own line tells it one is missing, and it reads k again.
func TestForgetThenPutAgainAfterAnOwnWriteIsSeen(t *testing.T) {
	f := newResignFixture(t)
	k := storefixture.Ent(format.KindSig, objA, "alice")
	old, own, again := bytes.Repeat([]byte("o"), 64), bytes.Repeat([]byte("w"), 50), bytes.Repeat([]byte("a"), 16)
	f.put(t, k, old)
	f.refresh(t)
	f.read(t, k, old, "first read")
	f.clk.Advance(time.Millisecond)
	if err := f.reader.Put(f.ctx, k, own); err != nil {
		t.Fatal(err)
	}
	f.read(t, k, own, "after the own write")
	f.forget(t, k)
	f.put(t, k, again)
	f.refresh(t)
	f.read(t, k, again, "after the forget, another writer's put again and a refresh")
}
