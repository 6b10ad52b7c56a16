package index

import (
	"context"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestSigStateIsTheQuestionsAtOnce: SigState answers, under one lock, what
// SigVersion, SigChangedAt, SigIdentity, SigRecheck and the cached size
// (SigStat with no request) answer one by one, in every state a signature
// goes through: not read, read, re-read after a refresh dropped it, written
// by this handle, to be rechecked, and after everything changed.
func TestSigStateIsTheQuestionsAtOnce(t *testing.T) {
	ctx := context.Background()
	st, _, sigs := sigFixture(t, 40, 0)
	ix := openWith(t, st, Options{ReadAhead: -1})
	e, other := sigs[0], sigs[1]
	check := func(what string, wantSize int64) {
		t.Helper()
		for _, e := range []format.Entry{e, other} {
			s := ix.SigState(e)
			if v := ix.SigVersion(e); s.Version != v {
				t.Errorf("%s: %s: SigState version %d, SigVersion %d", what, e.Key(), s.Version, v)
			}
			if at := ix.SigChangedAt(e); !s.ChangedAt.Equal(at) {
				t.Errorf("%s: %s: SigState changed at %v, SigChangedAt %v", what, e.Key(), s.ChangedAt, at)
			}
			if v, id, ok := ix.SigIdentity(e); v != s.Version || id != s.ID || ok != s.IDKnown {
				t.Errorf("%s: %s: SigState identity %d %+v %v, SigIdentity %d %+v %v", what, e.Key(), s.Version, s.ID, s.IDKnown, v, id, ok)
			}
			if r := ix.SigRecheck(e); r != s.Recheck {
				t.Errorf("%s: %s: SigState recheck %v, SigRecheck %v", what, e.Key(), s.Recheck, r)
			}
			n, mod := ix.sigs.size(e.Key())
			if s.Size != n || !s.ModTime.Equal(timeOf(mod)) {
				t.Errorf("%s: %s: SigState size %d at %v, the cache's %d at %v", what, e.Key(), s.Size, s.ModTime, n, timeOf(mod))
			}
		}
		if s := ix.SigState(e); s.Size != wantSize {
			t.Errorf("%s: size %d, want %d", what, s.Size, wantSize)
		}
	}
	check("not read", -1)
	data, err := ix.ReadSig(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	check("read", int64(len(data)))
	if s := ix.SigState(e); !s.IDKnown || s.ID.Size != int64(len(data)) || s.ID.Sum != ix.sigs.digest(data) {
		t.Errorf("read: identity %+v known %v, want the read's size %d and digest", s.ID, s.IDKnown, len(data))
	}
	before := ix.SigState(e).Version
	ix.sigs.invalidate(e.Key())
	check("dropped by a refresh", -1)
	if s := ix.SigState(e); s.Version <= before || s.IDKnown {
		t.Errorf("dropped by a refresh: version %d (was %d), identity known %v", s.Version, before, s.IDKnown)
	}
	if _, err := ix.ReadSig(ctx, e); err != nil {
		t.Fatal(err)
	}
	check("read again", int64(len(data)))
	own := []byte("an own write of other bytes")
	if err := ix.Put(ctx, e, own); err != nil {
		t.Fatal(err)
	}
	check("written by this handle", int64(len(own)))
	ix.sigs.recheck(e.Key())
	check("to be rechecked", -1)
	if s := ix.SigState(e); !s.Recheck || !s.IDKnown || s.ID.Size != int64(len(own)) {
		t.Errorf("to be rechecked: recheck %v, identity %+v known %v: want the last read's kept to compare", s.Recheck, s.ID, s.IDKnown)
	}
	ix.sigs.clearAll()
	check("after everything changed", -1)
	if s := ix.SigState(format.Entry{Kind: format.KindSeal, Object: e.Object, Value: "x"}); s != (SigState{}) {
		t.Errorf("an entry of another kind: %+v, want the zero state", s)
	}
}

// FuzzAppendEntryKey: the key SigState looks up is the entry's key.
func FuzzAppendEntryKey(f *testing.F) {
	f.Add(uint8(0), "abcdef", "alice")
	f.Add(uint8(3), "a", "")
	f.Add(uint8(5), "", "x/y")
	f.Fuzz(func(t *testing.T, kind uint8, obj, val string) {
		e := format.Entry{Kind: format.Kind(kind % format.NumKinds), Object: obj, Value: val}
		if got, want := string(appendEntryKey(nil, e)), e.Key(); got != want {
			t.Fatalf("appendEntryKey(%+v) = %q, want %q", e, got, want)
		}
	})
}
