package fold

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// TestForgetLeavesARecordForReaders: a collection that forgets retires a
// forget record naming what it forgot, before it changes anything else; a
// dry run and a collection without Apply write none; a collection over an
// hour later deletes it and drops its line, as any retired key.
func TestForgetLeavesARecordForReaders(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, clk *store.FakeClock) {
		ctx := context.Background()
		obj := "abcdef"
		write(t, st, ekey(format.KindSig, obj, "alice"), ekey(format.KindSig, "0011", "bob"))
		mustComplete(t, st)
		for _, opts := range []CollectOptions{
			{ForgetObjects: []ForgetObject{{Object: obj}}},
			{ForgetObjects: []ForgetObject{{Object: obj}}, Apply: true, DryRun: true},
		} {
			rep, err := Collect(ctx, st, opts)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Forget.Records != nil || forgetRecords(t, st) != nil {
				t.Fatalf("Apply %v, DryRun %v: wrote a forget record %q", opts.Apply, opts.DryRun, rep.Forget.Records)
			}
			// The dry run says the real run writes one first.
			if planned := opts.Apply && opts.DryRun; (rep.Forget.RecordsPlanned == 2) != planned || strings.Contains(rep.String(), "forget record") != planned {
				t.Errorf("Apply %v, DryRun %v: %d forget records planned, report:\n%s", opts.Apply, opts.DryRun, rep.Forget.RecordsPlanned, rep)
			}
		}
		rep, err := Collect(ctx, st, CollectOptions{ForgetObjects: []ForgetObject{{Object: obj, Kinds: []format.Kind{format.KindSig, format.KindSeal}}}, Apply: true})
		if err != nil {
			t.Fatal(err)
		}
		// Two: one before anything is forgotten (step 0), one closing
		// (step 6), dated later.
		if got := forgetRecords(t, st); len(rep.Forget.Records) != 2 || !slices.Equal(got, rep.Forget.Records) {
			t.Fatalf("retired forget records %v, report %q", got, rep.Forget.Records)
		}
		closing, err := st.Get(ctx, rep.Forget.Records[1])
		if err != nil {
			t.Fatal(err)
		}
		if rc, err := format.ParseForgottenRecord(rep.Forget.Records[1], closing); err != nil || rc.At <= rep.Now {
			t.Fatalf("closing record %+v (%v), want it dated after %d", rc, err, rep.Now)
		}
		name := rep.Forget.Records[0]
		data, err := st.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := format.ParseForgottenRecord(name, data)
		if err != nil {
			t.Fatal(err)
		}
		want := []format.ForgottenObject{{Kind: format.KindSeal, Object: obj}, {Kind: format.KindSig, Object: obj}}
		if rec.At != rep.Now || !slices.Equal(rec.Objects, want) {
			t.Fatalf("forget record %+v, want at %d objects %v", rec, rep.Now, want)
		}
		if !strings.Contains(rep.String(), name) {
			t.Errorf("the report does not name the forget record:\n%s", rep)
		}
		sn := snapshot(t, st)
		if sn.Packs != 0 {
			t.Errorf("the pack listing counts the forget record as a pack (%d)", sn.Packs)
		}
		clk.Advance(2 * hour)
		rep2, err := Collect(ctx, st, CollectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(rep2.Deleted, name) || exists(t, st, name) || forgetRecords(t, st) != nil {
			t.Fatalf("a collection two hours later: deleted %v; record there %v", rep2.Deleted, exists(t, st, name))
		}
	})
}

// TestForgetThatCannotRetireItsRecordForgetsNothing: step 0 failing ends
// the collection before any line is dropped or key deleted, and no record
// is written that no collection would delete.
func TestForgetThatCannotRetireItsRecordForgetsNothing(t *testing.T) {
	clk := store.NewFakeClock(t0)
	st, fb := newFaultStore(t, clk)
	k := ekey(format.KindSig, "abcdef", "alice")
	write(t, st, k)
	mustComplete(t, st)
	journal, retired := readRecordText(t, st, format.JournalKey), readRecordText(t, st, format.RetiredKey)
	fb.failIf(func(op, key string) bool { return op == "put" && key == format.RetiredKey })
	_, err := Collect(context.Background(), st, CollectOptions{ForgetObjects: []ForgetObject{{Object: "abcdef"}}, Apply: true})
	fb.failIf(nil)
	if err == nil || !strings.Contains(err.Error(), "forget record") {
		t.Fatalf("collection: %v, want the forget record's failure", err)
	}
	if !exists(t, st, k) || readRecordText(t, st, format.JournalKey) != journal || readRecordText(t, st, format.RetiredKey) != retired {
		t.Fatal("a collection whose forget record failed changed the store")
	}
	var stray []string
	if err := st.List(context.Background(), format.PackPrefix, "", func(it store.ListItem) error {
		if format.IsForgottenName(it.Key) {
			stray = append(stray, it.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if stray != nil {
		t.Fatalf("forget records written although not retired: %v", stray)
	}
}

// forgetRecords lists the forget records the retired record names.
func forgetRecords(t *testing.T, st *store.Store) []string {
	t.Helper()
	var out []string
	for _, r := range snapshot(t, st).Retired {
		if format.IsForgottenName(r.Key) {
			out = append(out, r.Key)
		}
	}
	return out
}

// TestForgetRecordIsRetiredWhenWritten: the forget record's retired line
// (and its time) is the store's time when the collection writes it, not
// its plan's start: readers heed it for an hour after the forget, however
// long the plan took (here 20 minutes of listing).
func TestForgetRecordIsRetiredWhenWritten(t *testing.T) {
	clk := store.NewFakeClock(t0)
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: clk})
	t.Cleanup(func() { st.Close() })
	obj := "abcdef"
	write(t, st, ekey(format.KindSig, obj, "alice"))
	mustComplete(t, st)
	// The hook runs on the plan's parallel requests: the first sig/ listing
	// (one, whichever) advances the clock.
	var listed atomic.Bool
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		if op == blobtest.OpList && strings.HasPrefix(key, format.KindSig.Prefix()) && listed.CompareAndSwap(false, true) {
			clk.Advance(20 * time.Minute)
		}
		return nil
	}})
	rep, err := Collect(context.Background(), st, CollectOptions{ForgetObjects: []ForgetObject{{Object: obj}}, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if !listed.Load() {
		t.Fatal("the plan listed no sig/ prefix")
	}
	if len(rep.Forget.Records) != 2 {
		t.Fatalf("forget records %v", rep.Forget.Records)
	}
	for _, r := range snapshot(t, st).Retired {
		if r.Key == rep.Forget.Records[0] && r.RetiredAt < rep.Now+(20*time.Minute).Milliseconds() {
			t.Errorf("forget record retired at %d, the plan's start (%d), not when it was written", r.RetiredAt, rep.Now)
		}
	}
}

// TestCheckNotesForgetRecordsReadersCannotRead: check says when a forget
// record named within its hour is gone or does not parse (readers then
// trust no cached signature), and nothing of a sound one.
func TestCheckNotesForgetRecordsReadersCannotRead(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		write(t, st, ekey(format.KindSig, "abcdef", "alice"), ekey(format.KindSig, "0011", "bob"))
		mustComplete(t, st)
		rep, err := Collect(ctx, st, CollectOptions{ForgetObjects: []ForgetObject{{Object: "abcdef"}}, Apply: true})
		if err != nil {
			t.Fatal(err)
		}
		sound := rep.Forget.Records[0]
		check := func() string {
			t.Helper()
			crep, err := Check(ctx, st, CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return allText(crep.Notes)
		}
		if notes := check(); strings.Contains(notes, "forget record") {
			t.Errorf("check of a sound forget record: %s", notes)
		}
		if err := st.Put(ctx, sound, []byte("garbage\n")); err != nil {
			t.Fatal(err)
		}
		if notes := check(); !strings.Contains(notes, "malformed forget record") {
			t.Errorf("check of a garbled forget record: %s", notes)
		}
		if err := st.Delete(ctx, sound); err != nil {
			t.Fatal(err)
		}
		if notes := check(); !strings.Contains(notes, CodeForgetRecordGone+": forget records retired within the hour are gone") || !strings.Contains(notes, sound) {
			t.Errorf("check of a missing forget record: %s", notes)
		}
	})
}
