package index

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// hostileForgetFixture: a reader that read two signatures (k, j), and a
// retired record rewritten by hand to name forget records.
type hostileForgetFixture struct {
	*resignFixture
	k, j format.Entry
	gets atomic.Int64 // GETs of forget records
}

var oldSig = bytes.Repeat([]byte("o"), 13)

func newHostileForgetFixture(t *testing.T) *hostileForgetFixture {
	t.Helper()
	rf, drv := newResignFixtureOn(t)
	f := &hostileForgetFixture{resignFixture: rf}
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		if op == blobtest.OpGet && format.IsForgottenName(key) {
			f.gets.Add(1)
		}
		return nil
	}})
	f.k = storefixture.Ent(format.KindSig, objA, "alice")
	f.j = storefixture.Ent(format.KindSig, objB, "bob")
	f.put(t, f.j, oldSig)
	f.put(t, f.k, oldSig)
	f.refresh(t)
	f.read(t, f.k, oldSig, "first read")
	f.read(t, f.j, oldSig, "first read")
	return f
}

// retire adds a retired line for each of names, as a collection would.
func (f *hostileForgetFixture) retire(t *testing.T, names ...string) {
	t.Helper()
	now := f.clk.NowMs()
	if _, err := f.wst.UpdateRecord(f.ctx, format.RetiredKey, func(old []byte, _ bool) ([]byte, error) {
		rec := format.ParseRetiredRecord(old)
		for _, n := range names {
			rec.Add(format.RetiredLine{RetiredAt: now, Key: n})
		}
		return rec.Text(), nil
	}); err != nil {
		t.Fatal(err)
	}
}

// forgetWarnings counts the reader's warnings about forget records.
func (f *hostileForgetFixture) forgetWarnings() int {
	n := 0
	for _, w := range f.reader.Status().Warnings {
		if strings.Contains(w, "forget record") {
			n++
		}
	}
	return n
}

// readOnce: a record the handle could not act on one by one (read but not
// kept: its name is its digest; or missing) is not read again: the cache
// started over for it once (issue 37 item 3).
func readOnce(refresh int) (lo, hi int64) {
	if refresh == 0 {
		return 1, 1
	}
	return 0, 0
}

func fakeForgetName(i int) string {
	return format.ForgottenName([]byte(fmt.Sprintf("no such record %d", i)))
}

// validForgetRecord is a forget record naming n objects no signature of
// the fixture has, the i-th of its kind.
func validForgetRecord(t testing.TB, i, n int) (string, []byte) {
	t.Helper()
	objs := make([]format.ForgottenObject, n)
	for o := range objs {
		objs[o] = format.ForgottenObject{Kind: format.KindSig, Object: fmt.Sprintf("ee%06x%08x", i, o)}
	}
	name, text, err := format.ForgottenRecord{At: int64(i), Objects: objs}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return name, text
}

// TestForgetRecordsAStoreLiesAbout: whatever a retired record names as a
// forget record — missing, garbage, another record's bytes, too large,
// thousands of them — a refresh sends a bounded number of GETs, warns once
// per record (or once for too many), trusts no cached signature (both
// versions move) and never panics; a later refresh that still sees them
// sends no GET of them and moves nothing (it moved every version at every
// refresh of the records' hour before: issue 37 item 3).
func TestForgetRecordsAStoreLiesAbout(t *testing.T) {
	_, otherText, err := format.ForgottenRecord{At: 7, Objects: []format.ForgottenObject{{Kind: format.KindSig, Object: objA}}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		records  int                              // forget records named
		body     func(i int) []byte               // what each holds; nil: none (404)
		wantGets func(refresh int) (lo, hi int64) // GETs of forget records a refresh sends
		warnings int                              // warnings about forget records in all
	}{
		{"missing", 1, nil, readOnce, 1},
		{"garbage", 1, func(int) []byte { return []byte("\x00garbage\n") }, readOnce, 1},
		{"another record's bytes", 1, func(int) []byte { return otherText }, readOnce, 1},
		{"over its cap", 1, func(int) []byte { return make([]byte, format.MaxForgottenBytes+1) }, readOnce, 1},
		{"several missing", maxForgetReads + 3, nil, readOnce, 1}, // the first unread one settles it
		{"thousands", 5000, nil, func(int) (int64, int64) { return 0, 0 }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHostileForgetFixture(t)
			var names []string
			for i := range tc.records {
				n := fakeForgetName(i)
				names = append(names, n)
				if tc.body != nil {
					if err := f.wst.Put(f.ctx, n, tc.body(i)); err != nil {
						t.Fatal(err)
					}
				}
			}
			f.retire(t, names...)
			for r := range 3 {
				vk, vj := f.reader.SigVersion(f.k), f.reader.SigVersion(f.j)
				before := f.gets.Load()
				f.refresh(t)
				lo, hi := tc.wantGets(r)
				if gets := f.gets.Load() - before; gets < lo || gets > hi {
					t.Errorf("refresh %d: %d GETs of forget records, want %d to %d", r, gets, lo, hi)
				}
				moved := f.reader.SigVersion(f.k) != vk || f.reader.SigVersion(f.j) != vj
				if r == 0 && (f.reader.SigVersion(f.k) == vk || f.reader.SigVersion(f.j) == vj) {
					t.Errorf("refresh %d: a cached signature kept its version under a forget record it cannot read", r)
				}
				if r > 0 && moved {
					t.Errorf("refresh %d: a version moved again for forget records acted on already", r)
				}
				f.read(t, f.k, oldSig, "after the refresh")
				f.read(t, f.j, oldSig, "after the refresh")
			}
			if got := f.forgetWarnings(); got != tc.warnings {
				t.Errorf("%d warnings about forget records, want %d: %q", got, tc.warnings, f.reader.Status().Warnings)
			}
		})
	}
}

// TestForgetRecordOfObjectsNeverSeen: a forget record naming objects the
// reader never saw costs its GET once and changes nothing else: the
// reader's own signatures keep their versions.
func TestForgetRecordOfObjectsNeverSeen(t *testing.T) {
	f := newHostileForgetFixture(t)
	name, text, err := format.ForgottenRecord{At: f.clk.NowMs(), Objects: []format.ForgottenObject{
		{Kind: format.KindSig, Object: strings.Repeat("ee", 64)},
		{Kind: format.KindSeal, Object: objA}, // not a signature
	}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.wst.Put(f.ctx, name, text); err != nil {
		t.Fatal(err)
	}
	f.retire(t, name)
	vk, vj := f.reader.SigVersion(f.k), f.reader.SigVersion(f.j)
	for r := range 2 {
		before := f.gets.Load()
		f.clk.Advance(time.Millisecond)
		f.refresh(t)
		if gets, want := f.gets.Load()-before, int64(1-r); gets != want {
			t.Errorf("refresh %d: %d GETs of forget records, want %d", r, gets, want)
		}
	}
	if f.reader.SigVersion(f.k) != vk || f.reader.SigVersion(f.j) != vj {
		t.Error("a forget record of other objects moved a signature's version")
	}
	if n := f.forgetWarnings(); n != 0 {
		t.Errorf("warnings: %q", f.reader.Status().Warnings)
	}
}

// TestForgetRecordsPastTheBounds: readable forget records past what a
// refresh reads, or past what a handle keeps (records or objects), have
// the refresh that meets them trust no cached signature, once: the next
// refreshes neither read them nor start the cache over again (issue 37
// item 3). Requests stay bounded either way.
func TestForgetRecordsPastTheBounds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []int // objects of each record
		gets    []int64
		trusted []bool // whether the refresh kept the cached signatures
	}{
		{"more than a refresh reads", make([]int, maxForgetReads+3), []int64{maxForgetReads, 0, 0}, []bool{false, true, true}},
		{"more than a handle keeps", make([]int, maxForgetRecords+1), []int64{0, 0, 0}, []bool{false, true, true}},
		{"more objects than a handle keeps", []int{maxForgetObjects, 1}, []int64{2, 0, 0}, []bool{false, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHostileForgetFixture(t)
			var names []string
			for i, n := range tc.records {
				name, text := validForgetRecord(t, i, n)
				if err := f.wst.Put(f.ctx, name, text); err != nil {
					t.Fatal(err)
				}
				names = append(names, name)
			}
			f.retire(t, names...)
			for r := range tc.gets {
				vk := f.reader.SigVersion(f.k)
				before := f.gets.Load()
				f.refresh(t)
				if gets := f.gets.Load() - before; gets != tc.gets[r] {
					t.Errorf("refresh %d: %d GETs of forget records, want %d", r, gets, tc.gets[r])
				}
				if trusted := f.reader.SigVersion(f.k) == vk; trusted != tc.trusted[r] {
					t.Errorf("refresh %d: cached signatures trusted %v, want %v", r, trusted, tc.trusted[r])
				}
				f.read(t, f.k, oldSig, "after the refresh")
			}
			if n := f.forgetWarnings(); n > 1 {
				t.Errorf("%d warnings: %q", n, f.reader.Status().Warnings)
			}
		})
	}
}

// TestForgetRecordPastItsHourIsLeft: a forget record whose retired line is
// over its hour old (one no collection deleted) is neither read nor
// heeded; one within its hour is.
func TestForgetRecordPastItsHourIsLeft(t *testing.T) {
	for _, tc := range []struct {
		name   string
		age    time.Duration
		heeded bool
	}{
		{"within its hour", format.GracePeriod / 2, true},
		{"past its hour", 2 * format.GracePeriod, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHostileForgetFixture(t)
			name, text, err := format.ForgottenRecord{At: 5, Objects: []format.ForgottenObject{{Kind: format.KindSig, Object: objA}}}.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if err := f.wst.Put(f.ctx, name, text); err != nil {
				t.Fatal(err)
			}
			at := f.clk.NowMs() - tc.age.Milliseconds()
			if _, err := f.wst.UpdateRecord(f.ctx, format.RetiredKey, func(old []byte, _ bool) ([]byte, error) {
				rec := format.ParseRetiredRecord(old)
				rec.Add(format.RetiredLine{RetiredAt: at, Key: name})
				return rec.Text(), nil
			}); err != nil {
				t.Fatal(err)
			}
			before := f.gets.Load()
			f.refresh(t)
			if heeded := f.reader.SigRecheck(f.k); heeded != tc.heeded || (f.gets.Load()-before == 1) != tc.heeded {
				t.Errorf("heeded %v (%d GETs of it), want %v", heeded, f.gets.Load()-before, tc.heeded)
			}
		})
	}
}
