package fold

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// The objects of the lying-server tests: forgotten is forgotten, kept is
// kept, and older has an older writer's key (no journal line).
const (
	forgotten = "f0aa"
	kept      = "c0bb"
	older     = "d0cc"
)

// newLiarStore opens a mem store over a blobtest driver whose lies a test
// sets, holding a folded store: kept's and forgotten's entries journaled and
// folded.
func newLiarStore(t *testing.T) (*store.Store, *blobtest.Bucket, *store.FakeClock) {
	t.Helper()
	clk := store.NewFakeClock(t0)
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: clk})
	t.Cleanup(func() { st.Close() })
	write(t, st, ekey(format.KindSig, kept, "alice"), ekey(format.KindSeal, kept, "s1"),
		ekey(format.KindSig, forgotten, "alice"), ekey(format.KindSig, forgotten, "bob"), ekey(format.KindReceipt, forgotten, "r1"))
	if _, err := Complete(context.Background(), st, Options{}); err != nil {
		t.Fatal(err)
	}
	return st, drv, clk
}

// allKeys returns every key of the bucket, asked of the bucket without lies.
func allKeys(t *testing.T, st *store.Store, drv *blobtest.Bucket) []string {
	t.Helper()
	l := drv.Lies()
	drv.SetLiar(blobtest.Liar{})
	defer drv.SetLiar(l)
	var keys []string
	if err := st.List(context.Background(), "", "", func(it store.ListItem) error {
		keys = append(keys, it.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// ofForgotten reports whether key is an entry of forgotten.
func ofForgotten(key string) bool {
	e, err := format.ParseKey(key)
	return err == nil && e.Object == forgotten
}

func forgetApply(objs ...string) CollectOptions {
	o := CollectOptions{Apply: true}
	for _, obj := range objs {
		o.ForgetObjects = append(o.ForgetObjects, ForgetObject{Object: obj})
	}
	return o
}

// TestForgetRefusesAListingThatIgnoresItsPrefix (issue 23 item 1): a LIST
// of the forgotten object's prefix that answers every key of the bucket made
// `gc --forget-objects F --apply` delete the bucket. Now a listed key that is
// not an entry of the forgotten object stops the collection before anything
// is changed: one outside the prefix fails the listing in the store
// (store.ErrBadListing) or, failing that, the plan (ErrWrongAnswer); one
// under the prefix that is no entry of the object fails the plan.
func TestForgetRefusesAListingThatIgnoresItsPrefix(t *testing.T) {
	prefix := format.Entry{Kind: format.KindSig, Object: forgotten}.Key()
	for _, c := range []struct {
		name    string
		prepare func(t *testing.T, st *store.Store, drv *blobtest.Bucket)
		want    []error
	}{
		{"whole bucket", func(t *testing.T, st *store.Store, drv *blobtest.Bucket) {
			drv.SetLiar(blobtest.Liar{IgnorePrefix: func(p string) bool { return p == prefix }})
		}, []error{ErrWrongAnswer, store.ErrBadListing}},
		{"no entry of the object", func(t *testing.T, st *store.Store, drv *blobtest.Bucket) {
			putRecord(t, st, prefix+"not/an-entry", "")
		}, []error{ErrWrongAnswer}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, drv, _ := newLiarStore(t)
			c.prepare(t, st, drv)
			before := allKeys(t, st, drv)
			journal := readRecordText(t, st, format.JournalKey)
			rep, err := Collect(context.Background(), st, forgetApply(forgotten))
			if !slices.ContainsFunc(c.want, func(w error) bool { return errors.Is(err, w) }) {
				t.Fatalf("collect: %v, want one of %v (forget report %+v)", err, c.want, rep.Forget)
			}
			if after := allKeys(t, st, drv); !slices.Equal(after, before) {
				t.Errorf("keys before %v\nafter %v", before, after)
			}
			if got := readRecordText(t, st, format.JournalKey); got != journal {
				t.Errorf("journal changed: %q, was %q", got, journal)
			}
		})
	}
}

// TestForgetStopsWhenTheListingHidesAnEntry (issue 23 item 5): the forgotten
// object's sig/ LIST answers an empty page; the journal and the live list
// name its signatures. gc said "deleted" and the signatures stayed. Now the
// two sources must agree: a key they name that a HEAD finds stops it.
func TestForgetStopsWhenTheListingHidesAnEntry(t *testing.T) {
	st, drv, _ := newLiarStore(t)
	before := allKeys(t, st, drv)
	prefix := format.Entry{Kind: format.KindSig, Object: forgotten}.Key()
	drv.SetLiar(blobtest.Liar{Omit: func(p, _ string) bool { return p == prefix }})
	_, err := Collect(context.Background(), st, forgetApply(forgotten))
	if !errors.Is(err, ErrIncompleteListing) {
		t.Fatalf("collect over an empty sig/ page of the forgotten object: %v, want ErrIncompleteListing", err)
	}
	if after := allKeys(t, st, drv); !slices.Equal(after, before) {
		t.Errorf("keys before %v\nafter %v", before, after)
	}
}

// TestForgetStopsOnA404ForAKeyTheListingShowed: a HEAD that answers 404 for
// a key the listing just showed is a lie or a stale read: it stops the plan.
func TestForgetStopsOnA404ForAKeyTheListingShowed(t *testing.T) {
	st, drv, _ := newLiarStore(t)
	before := allKeys(t, st, drv)
	key := ekey(format.KindSig, forgotten, "bob")
	drv.SetLiar(blobtest.Liar{NotFound: func(op blobtest.Op, k string) bool { return op == blobtest.OpHead && k == key }})
	_, err := Collect(context.Background(), st, forgetApply(forgotten))
	if !errors.Is(err, ErrWrongAnswer) || !strings.Contains(err.Error(), key) {
		t.Fatalf("collect with a HEAD 404 for a listed key: %v, want ErrWrongAnswer naming %s", err, key)
	}
	if after := allKeys(t, st, drv); !slices.Equal(after, before) {
		t.Errorf("keys before %v\nafter %v", before, after)
	}
}

// TestForgetPlansExactlyTheObjectsEntries: with no lie, the plan is the
// forgotten object's entries, each confirmed, and they are gone after.
func TestForgetPlansExactlyTheObjectsEntries(t *testing.T) {
	st, drv, _ := newLiarStore(t)
	rep, err := Collect(context.Background(), st, forgetApply(forgotten))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ekey(format.KindReceipt, forgotten, "r1"), ekey(format.KindSig, forgotten, "alice"), ekey(format.KindSig, forgotten, "bob")}
	if !slices.Equal(rep.Forget.Keys, want) || rep.Forget.Deleted != len(want) || len(rep.Forget.Failed) != 0 {
		t.Errorf("forget %+v, want keys %v all deleted", rep.Forget, want)
	}
	for _, k := range allKeys(t, st, drv) {
		if ofForgotten(k) {
			t.Errorf("%s left", k)
		}
	}
}

// TestDeleteThatLiesIsAFailedDelete (issue 23 item 6): DELETE answers 204
// and the server keeps the object. gc reported the keys deleted (forget), or
// dropped the retired lines of lists it believed deleted, which makes them
// live again. A HEAD after each DELETE now tells: a key still there is a
// failed deletion, the collection fails, and its retired line stays.
func TestDeleteThatLiesIsAFailedDelete(t *testing.T) {
	t.Run("forget", func(t *testing.T) {
		st, drv, _ := newLiarStore(t)
		drv.SetLiar(blobtest.Liar{KeepOnDelete: ofForgotten})
		rep, err := Collect(context.Background(), st, forgetApply(forgotten))
		if !errors.Is(err, ErrDeleteFailed) {
			t.Fatalf("collect whose DELETEs lie: %v, want ErrDeleteFailed", err)
		}
		if rep.Forget.Deleted != 0 || len(rep.Forget.Failed) != 3 {
			t.Errorf("forget report %+v: want 0 deleted, 3 failed", rep.Forget)
		}
	})
	t.Run("retired", func(t *testing.T) {
		st, drv, clk := newLiarStore(t)
		old := snapshot(t, st).LiveLists()[0].Name
		write(t, st, ekey(format.KindSig, kept, "carol"))
		if _, err := Complete(context.Background(), st, Options{}); err != nil { // retires old
			t.Fatal(err)
		}
		clk.Advance(hour + time.Millisecond)
		drv.SetLiar(blobtest.Liar{KeepOnDelete: func(k string) bool { return k == old }})
		rep, err := Collect(context.Background(), st, CollectOptions{})
		if !errors.Is(err, ErrDeleteFailed) {
			t.Fatalf("collect whose DELETE of %s lies: %v, want ErrDeleteFailed (%+v)", old, err, rep)
		}
		if !slices.Equal(rep.Failed, []string{old}) || len(rep.Deleted) != 0 || rep.RetiredLinesDropped != 0 {
			t.Errorf("report: deleted %v failed %v retired lines dropped %d", rep.Deleted, rep.Failed, rep.RetiredLinesDropped)
		}
		if !strings.Contains(readRecordText(t, st, format.RetiredKey), old) {
			t.Errorf("the retired line of %s, still there, was dropped: it reads as live again", old)
		}
		if slices.ContainsFunc(snapshot(t, st).LiveLists(), func(l store.ListInfo) bool { return l.Name == old }) {
			t.Errorf("%s is live again", old)
		}
	})
}

// TestCollectStopsWhenThePackListingHidesALiveList (issue 23 item 3): a
// pack- LIST that hides the live complete list: gc --forget --apply exited
// 0 and never retired the list it could not see, which then named keys gc
// deleted. The journal's folded lines name keys no live list the listing
// showed holds: the collection stops before it changes anything.
func TestCollectStopsWhenThePackListingHidesALiveList(t *testing.T) {
	st, drv, _ := newLiarStore(t)
	live := snapshot(t, st).LiveLists()[0].Name
	before := allKeys(t, st, drv)
	drv.SetLiar(blobtest.Liar{Omit: func(_, k string) bool { return k == live }})
	_, err := Collect(context.Background(), st, forgetApply(forgotten))
	if !errors.Is(err, ErrIncompletePackListing) {
		t.Fatalf("collect over a pack listing that hides %s: %v, want ErrIncompletePackListing", live, err)
	}
	if after := allKeys(t, st, drv); !slices.Equal(after, before) {
		t.Errorf("keys before %v\nafter %v", before, after)
	}
}

// TestCollectStopsWhenThePackListingHidesAListRetiredWithinTheHour: the
// retired record names a list retired within its hour; the listing lacks
// it, and a HEAD finds it: the listing is wrong.
func TestCollectStopsWhenThePackListingHidesAListRetiredWithinTheHour(t *testing.T) {
	st, drv, _ := newLiarStore(t)
	old := snapshot(t, st).LiveLists()[0].Name
	write(t, st, ekey(format.KindSig, kept, "carol"))
	if _, err := Complete(context.Background(), st, Options{}); err != nil { // retires old
		t.Fatal(err)
	}
	drv.SetLiar(blobtest.Liar{Omit: func(_, k string) bool { return k == old }})
	_, err := Collect(context.Background(), st, CollectOptions{})
	if !errors.Is(err, ErrIncompletePackListing) || !strings.Contains(err.Error(), old) {
		t.Fatalf("collect over a pack listing that hides %s: %v, want ErrIncompletePackListing naming it", old, err)
	}
}

// TestCollectGoesOnWhenARetiredListIsGoneBeforeItsHour: a damaged store
// (a list retired within the hour deleted by hand) does not refuse every
// collection: the HEAD finds it gone.
func TestCollectGoesOnWhenARetiredListIsGoneBeforeItsHour(t *testing.T) {
	st, _, _ := newLiarStore(t)
	old := snapshot(t, st).LiveLists()[0].Name
	write(t, st, ekey(format.KindSig, kept, "carol"))
	if _, err := Complete(context.Background(), st, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	if _, err := Collect(context.Background(), st, CollectOptions{}); err != nil {
		t.Fatalf("collect of a store missing a retired list: %v", err)
	}
}

// TestCollectGoesOnAfterAFoldRetiredEveryList: a fold that found its set
// under a list retired too long ago retires every live list and leaves the
// store unfolded (revive.go's tooLate); journal lines folded before that
// retirement then name keys no live list holds, and that is no hidden list.
// The same lines with no retirement after them are one.
func TestCollectGoesOnAfterAFoldRetiredEveryList(t *testing.T) {
	forgetRecord := format.ForgottenName([]byte("a forget record"))
	for _, c := range []struct {
		name      string
		retiredAt int64 // the list's retirement, against the lines folded at t0
		also      string
		want      error
	}{
		{"retired after the lines were folded", t0 + 1, "", nil},
		{"retired before", t0 - 1, "", ErrIncompletePackListing},
		// A forget record retired after the lines is no list's retirement.
		{"retired before, a forget record after", t0 - 1, fmt.Sprintf("%d %s\n", t0+1, forgetRecord), ErrIncompletePackListing},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, clk := newMem(t)
			k := ekey(format.KindSig, kept, "alice")
			storefixture.PutObjects(t, st, k)
			l := storefixture.WriteList(t, st, true, k)
			putRecord(t, st, format.JournalKey, fmt.Sprintf("%d %s\n", t0, k))
			putRecord(t, st, format.RetiredKey, fmt.Sprintf("%d %s\n", c.retiredAt, l)+c.also)
			clk.Set(t0 + ms(hour)/2)
			_, err := Collect(context.Background(), st, CollectOptions{})
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Errorf("collect: %v, want %v", err, c.want)
			}
		})
	}
}

// TestFirstFoldLooksUpJournalKeysTheListingLacks (issue 23 item 4): an
// unfolded store with older writers' keys, and a sig/ page cut in half: the
// first fold wrote a list without the cut keys (readers lost them), having
// warned that journal keys were missing from the listing. It now looks them
// up, finds them, and stops having written nothing.
func TestFirstFoldLooksUpJournalKeysTheListingLacks(t *testing.T) {
	clk := store.NewFakeClock(t0)
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: clk})
	t.Cleanup(func() { st.Close() })
	var journaled []string
	for i := range 8 {
		obj := fmt.Sprintf("%02x%02x", 0x10+i*0x10, i)
		storefixture.PutObjects(t, st, ekey(format.KindSig, obj, "older-writer"))
		journaled = append(journaled, ekey(format.KindSig, obj, "alice"))
	}
	write(t, st, journaled...)
	cut := ekey(format.KindSig, "8004", "") // the page ends before this
	drv.SetLiar(blobtest.Liar{Omit: func(p, k string) bool { return strings.HasPrefix(p, "sig/") && k >= cut }})
	rep, err := Complete(context.Background(), st, Options{})
	if !errors.Is(err, ErrIncompleteListing) {
		t.Fatalf("first fold over a cut sig/ page: %v (list %+v), want ErrIncompleteListing", err, rep.List)
	}
	drv.SetLiar(blobtest.Liar{})
	if sn := snapshot(t, st); len(sn.Lists) != 0 || sn.UnfoldedLines() != len(journaled) {
		t.Errorf("after the refused fold: lists %v, %d unfolded lines", sn.Lists, sn.UnfoldedLines())
	}
}

// TestCheckLooksUpAKeyBeforeCallingItMissing (issue 23 item 8): on an empty
// sig/ page, check reported every existing key the live list names as
// missing. It now looks them up and names the listing instead.
func TestCheckLooksUpAKeyBeforeCallingItMissing(t *testing.T) {
	st, drv, _ := newLiarStore(t)
	drv.SetLiar(blobtest.Liar{Omit: func(p, _ string) bool { return strings.HasPrefix(p, "sig/") }})
	rep, err := Check(context.Background(), st, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		if p.Code == CodeEntryMissingKey {
			t.Errorf("check called an existing key missing: %s", p)
		}
	}
	if problemWith(rep, CodeListingIncomplete, "listing of the entry prefixes did not show") == "" {
		t.Errorf("check did not name the listing: %q", rep.Problems)
	}
	// A key really gone is still reported.
	drv.SetLiar(blobtest.Liar{})
	gone := ekey(format.KindSig, kept, "alice")
	if err := st.Delete(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	rep, err = Check(context.Background(), st, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if problemWith(rep, CodeEntryMissingKey, gone) == "" {
		t.Errorf("check did not report %s missing: %q", gone, rep.Problems)
	}
}

// TestCollectDryRunNamesOnlyKeysThatExist (issue 22 item 5): a retired key
// deleted already was named "would delete". The dry run looks each up.
func TestCollectDryRunNamesOnlyKeysThatExist(t *testing.T) {
	st, _, clk := newLiarStore(t)
	putRecord(t, st, "pack-0123.pack", "a pack a repack retired")
	storefixture.Retire(t, st, "pack-0123.pack", "pack-4567.pack") // the second is gone already
	clk.Advance(hour + time.Millisecond)
	rep, err := Collect(context.Background(), st, CollectOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Deleted, []string{"pack-0123.pack"}) || !slices.Equal(rep.Missing, []string{"pack-4567.pack"}) {
		t.Errorf("dry run: would delete %v, missing %v; want [pack-0123.pack] and [pack-4567.pack]", rep.Deleted, rep.Missing)
	}
}
