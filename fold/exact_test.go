package fold

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestCollectionThatForgetsAnObjectLeavesNoTraceOfIt: keys a, b, fold; put
// x, fold (retires {a, b}); forget x. The new set {a, b} is the list retired
// minutes earlier: the fold revives it in place of the list naming x, so a
// fresh reader shows exactly {a, b} and check finds nothing wrong.
func TestCollectionThatForgetsAnObjectLeavesNoTraceOfIt(t *testing.T) {
	ctx := context.Background()
	forBackends(t, func(t *testing.T, st *store.Store, clk *store.FakeClock) {
		a, b := ekey(format.KindSig, "aa01", "alice"), ekey(format.KindSeal, "bb02", "s1")
		x := ekey(format.KindSig, "cc03", "xavier")
		write(t, st, a, b)
		listAB := mustComplete(t, st).List.Name
		clk.Advance(time.Minute)
		write(t, st, x)
		listABX := mustComplete(t, st).List.Name
		clk.Advance(5 * time.Minute)

		// The dry run plans the fold on what the collection leaves.
		forget := []ForgetObject{{Object: "cc03"}}
		dry, err := Collect(ctx, st, CollectOptions{DryRun: true, ForgetObjects: forget, Apply: true})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Collect(ctx, st, CollectOptions{ForgetObjects: forget, Apply: true})
		if err != nil {
			t.Fatal(err)
		}
		f := rep.Fold
		if f.List.Name != listAB || !f.List.Revived || f.Deferred != "" || !slices.Equal(f.Retired, []string{listABX}) || f.LeftOut != 1 {
			t.Fatalf("fold after forgetting x: list %+v retired %v deferred %q left out %d; want %s revived in place of %s",
				f.List, f.Retired, f.Deferred, f.LeftOut, listAB, listABX)
		}
		samePlan(t, dry.Fold, f)
		if live := liveLists(t, st); len(live) != 1 || live[0].Name != listAB {
			t.Fatalf("live lists %+v, want only %s", live, listAB)
		}
		v, err := freshReader(ctx, st)
		if err != nil || !v.folded || !maps.Equal(v.keys, map[string]bool{a: true, b: true}) {
			t.Fatalf("fresh reader: folded %v keys %v (%v), want exactly {a, b}", v.folded, v.keys, err)
		}
		crep, err := Check(ctx, st, CheckOptions{})
		if err != nil || len(crep.Problems) != 0 {
			t.Fatalf("check after the collection: %v %v", crep.Problems, err)
		}
		// The revived list is not deleted by the next collection an hour on.
		clk.Advance(2 * hour)
		rep, err = Collect(ctx, st, CollectOptions{})
		if err != nil || slices.Contains(rep.Deleted, listAB) || !slices.Contains(rep.Deleted, listABX) {
			t.Fatalf("next collection deleted %v (%v); want %s and not %s", rep.Deleted, err, listABX, listAB)
		}
		if live := liveLists(t, st); len(live) != 1 || live[0].Name != listAB {
			t.Fatalf("live lists %+v, want only %s", live, listAB)
		}
	})
}

// hidingBucket answers listings without the keys hide picks, as a server
// that returns a short or empty page does.
type hidingBucket struct {
	*blobtest.Bucket
	hide func(key string) bool
}

func (b *hidingBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	page, err := b.Bucket.ListPaged(ctx, opts)
	if err != nil || b.hide == nil {
		return page, err
	}
	page.Objects = slices.DeleteFunc(page.Objects, func(o *driver.ListObject) bool { return b.hide(o.Key) })
	return page, nil
}

// TestFoldStopsWhenTheListingLeavesOutAKeyThatExists: 300 entries are
// folded; then a listing of sig/ comes back without the sig/ab/ keys. A
// complete fold (and a collection, and their dry runs) must stop with an
// error naming the prefix, writing no list, retiring nothing, marking
// nothing; readers keep seeing all 300.
func TestFoldStopsWhenTheListingLeavesOutAKeyThatExists(t *testing.T) {
	ctx := context.Background()
	clk := store.NewFakeClock(1_700_000_000_000)
	hb := &hidingBucket{Bucket: blobtest.New(nil)}
	st := store.New(blob.NewBucket(hb), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: clk})
	t.Cleanup(func() { st.Close() })
	var keys []string
	for i := range 300 {
		obj := fmt.Sprintf("%s%04x", []string{"ab", "cd", "ef"}[i%3], i)
		keys = append(keys, ekey(format.KindSig, obj, "signer"))
	}
	storefixture.PutObjects(t, st, keys...) // no journal lines: only the list names them
	good := mustComplete(t, st).List.Name
	write(t, st, ekey(format.KindSeal, "cd99", "new")) // an unfolded line the fold must not mark
	journalBefore := readRecordText(t, st, format.JournalKey)
	retiredBefore := readRecordText(t, st, format.RetiredKey)

	hb.hide = func(k string) bool { return strings.HasPrefix(k, "sig/ab/") }
	for _, run := range []struct {
		name string
		fn   func() error
	}{
		{"fold --dry-run", func() error { _, err := Complete(ctx, st, Options{DryRun: true}); return err }},
		{"fold", func() error { _, err := Complete(ctx, st, Options{}); return err }},
		{"gc --dry-run", func() error { _, err := Collect(ctx, st, CollectOptions{DryRun: true}); return err }},
		{"gc", func() error { _, err := Collect(ctx, st, CollectOptions{}); return err }},
	} {
		err := run.fn()
		if !errors.Is(err, ErrIncompleteListing) || !strings.Contains(err.Error(), "sig/ab/") {
			t.Fatalf("%s with a listing that hides sig/ab/: %v, want ErrIncompleteListing naming sig/ab/", run.name, err)
		}
		if live := liveLists(t, st); len(live) != 1 || live[0].Name != good {
			t.Fatalf("%s: live lists %+v, want only %s", run.name, live, good)
		}
		if j, r := readRecordText(t, st, format.JournalKey), readRecordText(t, st, format.RetiredKey); j != journalBefore || r != retiredBefore {
			t.Fatalf("%s changed a record:\njournal %q\nretired %q", run.name, j, r)
		}
	}
	hb.hide = nil
	v, err := freshReader(ctx, st)
	if err != nil || len(v.keys) != 301 {
		t.Fatalf("fresh reader holds %d keys (%v), want 301", len(v.keys), err)
	}
	if rep := mustComplete(t, st); rep.LeftOut != 0 || !rep.List.Written {
		t.Fatalf("fold with an honest listing: %+v left out %d", rep.List, rep.LeftOut)
	}
}

// samePlan fails the test unless a dry run planned exactly what the run
// right after it did.
func samePlan(t *testing.T, dry, did *Report) {
	t.Helper()
	type plan struct {
		Name                         string
		Entries                      int
		Unchanged, Revived, Deferred bool
		Unfolded, Marker             bool
		Retired                      string
		Marked, Dropped, LeftOut     int
		Copied                       int
	}
	of := func(r *Report) plan {
		return plan{r.List.Name, r.List.Entries, r.List.Unchanged, r.List.Revived, r.Deferred != "", r.Unfolded,
			r.Legacy.Marker, strings.Join(r.Retired, ","), r.Marked, r.Dropped, r.LeftOut, r.Legacy.Copied}
	}
	if of(dry) != of(did) {
		t.Errorf("the dry run planned\n%+v\nthe run did\n%+v", of(dry), of(did))
	}
}

// TestCollectDryRunPlansTheFoldOnWhatTheCollectionLeaves: the journal's
// lines are past their hour, one naming a key that is gone, and the marker
// is missing. gc drops the lines before it folds, so its fold writes a list
// without that key; the dry run must say the same, and that it would write
// the marker.
func TestCollectDryRunPlansTheFoldOnWhatTheCollectionLeaves(t *testing.T) {
	ctx := context.Background()
	forBackends(t, func(t *testing.T, st *store.Store, clk *store.FakeClock) {
		a, b, j := ekey(format.KindSig, "aa01", "alice"), ekey(format.KindSig, "aa01", "bob"), ekey(format.KindSeal, "bb02", "gone")
		write(t, st, a, b, j)
		if _, err := Complete(ctx, st, Options{DryRun: true}); err != nil {
			t.Fatal(err)
		}
		first := mustComplete(t, st)
		if err := st.Delete(ctx, j); err != nil {
			t.Fatal(err)
		}
		if err := st.Delete(ctx, format.LegacyFoldedMarker); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * hour)
		dry, err := Collect(ctx, st, CollectOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		did, err := Collect(ctx, st, CollectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if did.Fold.List.Entries != 2 || !did.Fold.List.Written || !slices.Equal(did.Fold.Retired, []string{first.List.Name}) || !did.Fold.Legacy.Marker {
			t.Fatalf("gc's fold: %+v retired %v marker %v; want a new list of 2, the old one retired, the marker", did.Fold.List, did.Fold.Retired, did.Fold.Legacy.Marker)
		}
		if dry.JournalLinesDropped != did.JournalLinesDropped || !slices.Equal(dry.Deleted, did.Deleted) || dry.RetiredLinesDropped != did.RetiredLinesDropped {
			t.Errorf("dry run: %d lines, deleted %v, %d retired lines; gc: %d, %v, %d", dry.JournalLinesDropped, dry.Deleted,
				dry.RetiredLinesDropped, did.JournalLinesDropped, did.Deleted, did.RetiredLinesDropped)
		}
		samePlan(t, dry.Fold, did.Fold)
		if out := dry.String(); !strings.Contains(out, "would write") || !strings.Contains(out, format.LegacyFoldedMarker+" to write") {
			t.Errorf("dry run report does not say it would write the list and the marker:\n%s", out)
		}
	})
}

// TestCollectionWhoseFoldFailsDeletesNoForgottenKey: gc --forget-objects
// --apply whose fold fails (its pack listing fails) must not have deleted
// the forgotten keys: the live list still names them, so they must still be
// there (found by the simulation, F1: a list naming keys that are gone).
func TestCollectionWhoseFoldFailsDeletesNoForgottenKey(t *testing.T) {
	ctx := context.Background()
	clk := store.NewFakeClock(1_700_000_000_000)
	st, fb := newFaultStore(t, clk)
	a, x := ekey(format.KindSig, "aa01", "alice"), ekey(format.KindSig, "cc03", "xavier")
	write(t, st, a, x)
	mustComplete(t, st)
	packLists := 0
	fb.failIf(func(op, key string) bool {
		if op == "list" && strings.HasPrefix(key, format.PackPrefix) {
			packLists++
			return packLists > 1 // the plan's snapshot passes, the fold's fails
		}
		return false
	})
	_, err := Collect(ctx, st, CollectOptions{ForgetObjects: []ForgetObject{{Object: "cc03"}}, Apply: true})
	if !errors.Is(err, errInjected) {
		t.Fatalf("collection whose fold cannot list: %v", err)
	}
	fb.failIf(nil)
	if !exists(t, st, x) {
		t.Fatal("the forgotten key was deleted although the fold that leaves it out failed")
	}
	v, err := freshReader(ctx, st)
	if err != nil || !maps.Equal(v.keys, map[string]bool{a: true, x: true}) {
		t.Fatalf("fresh reader: %v (%v)", v.keys, err)
	}
	// Run again: now it goes.
	if _, err := Collect(ctx, st, CollectOptions{ForgetObjects: []ForgetObject{{Object: "cc03"}}, Apply: true}); err != nil {
		t.Fatal(err)
	}
	v, err = freshReader(ctx, st)
	if err != nil || exists(t, st, x) || !maps.Equal(v.keys, map[string]bool{a: true}) {
		t.Fatalf("after the second collection: key there %v, reader %v (%v)", exists(t, st, x), v.keys, err)
	}
}

// TestCheckReportsAnExistingEntryAFoldLeftOutAsAProblem: the state an old
// fold left behind a listing that lied — a complete list of 90 of the 300
// entries live, the good list retired. check must call the 210 entries a
// problem (a fold dropped them), not a note; an older writer's key that no
// list ever held stays a note.
func TestCheckReportsAnExistingEntryAFoldLeftOutAsAProblem(t *testing.T) {
	ctx := context.Background()
	st, clk := newMem(t)
	var keys []string
	for i := range 300 {
		keys = append(keys, ekey(format.KindSig, fmt.Sprintf("%02x%04x", i%3*0x11+0xab, i), "signer"))
	}
	slices.Sort(keys)
	storefixture.PutObjects(t, st, keys...)
	good := mustComplete(t, st).List.Name
	short := storefixture.WriteList(t, st, true, keys[:90]...)
	putRecord(t, st, format.RetiredKey, fmt.Sprintf("%d %s\n", clk.NowMs(), good))
	older := ekey(format.KindSeal, "cd01", "older")
	storefixture.PutObjects(t, st, older)
	rep, err := Check(ctx, st, CheckOptions{MaxItems: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// One finding: the gap, its 210 keys, the retired list that held them.
	if rep.OK() || len(rep.Problems) != 1 || rep.Problems[0].Count != 210 || len(rep.Problems[0].Keys) != 210 {
		t.Fatalf("check of a store whose live list %s left out 210 existing entries: %d problems, OK %v:\n%s", short, len(rep.Problems), rep.OK(), rep)
	}
	if p := rep.Problems[0]; p.Code != CodeEntryLeftOut || !strings.Contains(p.Message, "a fold left them out") || !strings.Contains(p.Message, good) {
		t.Fatalf("problem %s does not name the gap and the retired list", p)
	}
	if noteWith(rep, older, "waiting for a fold") == "" {
		t.Fatalf("the older writer's key is not noted as waiting: %v", rep.Notes)
	}
}
