package index

import (
	"bytes"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestForgetThenPutAgainOfTheLastLineIsSeen is R1's last case (seed 124 of
// the byte simulation): the key's only line is the view's last unfolded
// one; a collection forgets the object and another writer puts it again
// (and, in the second form, a second collection folds it back into a
// list) between two refreshes. The journal, the lists and every count then
// read as the view saw them; only the forget record tells.
func TestForgetThenPutAgainOfTheLastLineIsSeen(t *testing.T) {
	for _, tc := range []struct {
		name       string
		foldAfter  bool // a second collection folds the put again into a list
		sameLength bool
	}{
		{"put again", false, false},
		{"put again, same length", false, true},
		{"put again, then folded by a second collection", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newResignFixture(t)
			k := storefixture.Ent(format.KindSig, objA, "alice")
			j := storefixture.Ent(format.KindSig, objB, "bob")
			old, again := bytes.Repeat([]byte("o"), 13), bytes.Repeat([]byte("a"), 16)
			if tc.sameLength {
				again = bytes.Repeat([]byte("a"), 13)
			}
			f.put(t, j, old)
			f.complete(t)
			f.put(t, k, old) // k's only line: the last, unfolded
			f.refresh(t)
			f.read(t, k, old, "first read")
			v0 := f.reader.SigVersion(k)
			f.forget(t, k)
			f.put(t, k, again)
			if tc.foldAfter {
				f.complete(t)
			}
			f.refresh(t)
			f.read(t, k, again, "after the forget, another writer's put again and a refresh")
			if f.reader.SigVersion(k) == v0 {
				t.Error("SigVersion did not move")
			}
			f.read(t, j, old, "the other object")
		})
	}
}

// TestForgetRecordUnreadableTrustsNoCachedSignature: a forget record the
// refresh cannot read (here deleted behind the retired line, as when the
// collection's PUT failed) tells that something was forgotten, not what:
// the refresh reads every cached signature again, and warns.
func TestForgetRecordUnreadableTrustsNoCachedSignature(t *testing.T) {
	f := newResignFixture(t)
	k := storefixture.Ent(format.KindSig, objA, "alice")
	j := storefixture.Ent(format.KindSig, objB, "bob")
	old, again := bytes.Repeat([]byte("o"), 13), bytes.Repeat([]byte("a"), 16)
	f.put(t, j, old)
	f.complete(t)
	f.put(t, k, old)
	f.refresh(t)
	f.read(t, k, old, "first read")
	f.read(t, j, old, "first read")
	vj := f.reader.SigVersion(j)
	f.forget(t, k)
	sn, err := f.wst.ReadSnapshot(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, r := range sn.Retired {
		if format.IsForgottenName(r.Key) {
			if err := f.wst.Delete(f.ctx, r.Key); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	if deleted != 2 { // step 0's and the closing one (fold/collect.go)
		t.Fatalf("the forget retired %d forget records, want 2: %+v", deleted, sn.Retired)
	}
	f.put(t, k, again)
	f.refresh(t)
	f.read(t, k, again, "after an unreadable forget record")
	if f.reader.SigVersion(j) == vj {
		t.Error("a signature of another object kept its version after an unreadable forget record")
	}
	found := false
	for _, w := range f.reader.Status().Warnings {
		found = found || bytes.Contains([]byte(w), []byte("forget record"))
	}
	if !found {
		t.Errorf("no warning names the forget record: %q", f.reader.Status().Warnings)
	}
}

// TestForgetRecordReadMovesVersionsOnce: the refresh that reads a forget
// record moves the versions of its objects' signatures; the later
// refreshes of the record's hour move nothing (a handle refreshed often
// would otherwise give them a new node at every refresh: an open that
// races two moves is ESTALE on a mount).
func TestForgetRecordReadMovesVersionsOnce(t *testing.T) {
	f := newResignFixture(t)
	k := storefixture.Ent(format.KindSig, objA, "alice")
	old, again := bytes.Repeat([]byte("o"), 13), bytes.Repeat([]byte("a"), 16)
	f.put(t, k, old)
	f.refresh(t)
	f.read(t, k, old, "first read")
	f.forget(t, k)
	f.put(t, k, again)
	f.refresh(t) // reads the records: the version moves
	f.read(t, k, again, "after the forget, the put again and a refresh")
	v1 := f.reader.SigVersion(k)
	for i := range 3 {
		f.refresh(t) // the records are still named
		f.read(t, k, again, "a refresh later")
		if v := f.reader.SigVersion(k); v != v1 {
			t.Fatalf("refresh %d after the records: version %d, want %d", i+2, v, v1)
		}
	}
}

// TestForgetThenPutAgainWhileHeldOpensTheNewBytes (issue 37 item 1): a
// reader holds the old version open (a mount's descriptor, serve's answer)
// while a collection forgets the key and another writer puts it again. The
// refresh that reads the forget record drops the cached bytes
// (sigCache.recheck) and its version does not move until a read finds
// other bytes: a new open must not be handed the held copy of the old
// version (it read the old bytes on every open while one was held), and
// the held reader keeps reading its own.
func TestForgetThenPutAgainWhileHeldOpensTheNewBytes(t *testing.T) {
	for _, sameLength := range []bool{false, true} {
		name := "longer"
		if sameLength {
			name = "same length"
		}
		t.Run(name, func(t *testing.T) {
			f := newResignFixture(t)
			k := storefixture.Ent(format.KindSig, objA, "alice")
			j := storefixture.Ent(format.KindSig, objB, "bob")
			old, again := bytes.Repeat([]byte("o"), 13), bytes.Repeat([]byte("a"), 16)
			if sameLength {
				again = again[:13]
			}
			f.put(t, j, old)
			f.complete(t)
			f.put(t, k, old) // k's only line: the last, unfolded
			f.refresh(t)
			held, err := f.reader.OpenSig(f.ctx, k)
			if err != nil || !bytes.Equal(held.Bytes(), old) {
				t.Fatalf("first open: %v", err)
			}
			defer held.Release()
			f.forget(t, k)
			f.put(t, k, again)
			f.refresh(t)
			for i := range 2 {
				h, err := f.reader.OpenSig(f.ctx, k)
				if err != nil {
					t.Fatalf("open %d after the forget and the put again: %v", i+1, err)
				}
				if !bytes.Equal(h.Bytes(), again) {
					t.Errorf("open %d after the forget, the put again and a refresh, while the old version is held: %q, want %q", i+1, h.Bytes(), again)
				}
				h.Release()
			}
			f.read(t, k, again, "ReadSig after the forget and the put again")
			if !bytes.Equal(held.Bytes(), old) {
				t.Errorf("the held reader's bytes changed: %q, want %q", held.Bytes(), old)
			}
		})
	}
}

// TestUnknownForgetRecordClearsOnce (issue 37 item 3): a forget record the
// handle cannot act on one by one — one that does not parse, or one gone
// behind its retired line — starts the signature cache over once, at the
// refresh that first meets it, as a record read is acted on once. It did
// so at every refresh while the record was named (its hour and the
// margin: ~70 refreshes at the default minute), moving every signature's
// version and telling the mount to drop every name each time.
func TestUnknownForgetRecordClearsOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(f *resignFixture, t *testing.T, key string)
	}{
		{"a record that does not parse", func(f *resignFixture, t *testing.T, key string) {
			if err := f.wst.Put(f.ctx, key, []byte("not a forget record\n")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a record gone", func(f *resignFixture, t *testing.T, key string) {
			if err := f.wst.Delete(f.ctx, key); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newResignFixture(t)
			k := storefixture.Ent(format.KindSig, objA, "alice")
			j := storefixture.Ent(format.KindSig, objB, "bob")
			old := bytes.Repeat([]byte("o"), 13)
			f.put(t, j, old)
			f.complete(t)
			f.put(t, k, old)
			f.refresh(t)
			f.read(t, j, old, "first read")
			v0 := f.reader.SigVersion(j)
			f.forget(t, k)
			sn, err := f.wst.ReadSnapshot(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			spoiled := 0
			for _, r := range sn.Retired {
				if format.IsForgottenName(r.Key) {
					tc.spoil(f, t, r.Key)
					spoiled++
				}
			}
			if spoiled == 0 {
				t.Fatal("the forget retired no forget record")
			}
			f.refresh(t)
			f.read(t, j, old, "after the forget")
			v1 := f.reader.SigVersion(j)
			if v1 == v0 {
				t.Fatal("a record the handle cannot read did not start the cache over")
			}
			for i := range 4 {
				f.clk.Advance(time.Minute)
				f.refresh(t) // the records are still named
				f.read(t, j, old, "a refresh later")
				if v := f.reader.SigVersion(j); v != v1 {
					t.Fatalf("refresh %d after the record: version %d, want %d (the cache started over again)", i+2, v, v1)
				}
			}
		})
	}
}
