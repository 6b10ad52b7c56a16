package index

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// clockWorld is one mem:// bucket seen by hosts whose wall clocks differ:
// world is the store's time (and a correct host's), each handle has its
// own local clock.
type clockWorld struct {
	world *store.FakeClock
	base  *store.Store
}

func newClockWorld(t *testing.T) *clockWorld {
	world := store.NewFakeClock(1_700_000_000_000)
	base := storefixture.Open(t, "mem://", store.Options{Layout: store.LayoutBucket, Clock: world})
	return &clockWorld{world: world, base: base}
}

// host is a handle on the world's bucket whose own clock is local.
func (w *clockWorld) host(local store.Clock) *store.Store {
	return store.New(w.base.Bucket(), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: local, StoreClock: w.world})
}

// quiet brings the store to journal and retired record both present and
// empty, a state a collection returns them to.
func (w *clockWorld) quiet(t *testing.T, writer *Index) {
	t.Helper()
	ctx := context.Background()
	// Two rounds: the second fold retires the first's list, so the
	// collection leaves a retired record that exists.
	for _, e := range []format.Entry{storefixture.Ent(format.KindSeal, objC, "s1"), storefixture.Ent(format.KindSeal, objC, "s2")} {
		if err := writer.Put(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := fold.Complete(ctx, w.base, fold.Options{}); err != nil {
			t.Fatal(err)
		}
		w.world.Advance(format.GracePeriod + time.Minute)
		if _, err := fold.Collect(ctx, w.base, fold.CollectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{format.JournalKey, format.RetiredKey} {
		if data, v, err := w.base.ReadRecord(ctx, k); err != nil || !v.Exists || len(data) != 0 {
			t.Fatalf("%s after the collection: %q %+v %v, want it there and empty", k, data, v, err)
		}
	}
}

// TestRefreshAfterAFoldFromAClockHoursBehind is issue 22 item 7: a fold by
// a host whose clock runs 2 h behind, then a collection on a correct
// clock, return the journal and the retired record to the bytes a handle
// saw a minute ago while the live list changed. A handle that trusts the
// unchanged records misses the entry a fresh reader shows. The fold must
// refuse, naming the skew, and the handle then shows what a fresh reader
// shows.
func TestRefreshAfterAFoldFromAClockHoursBehind(t *testing.T) {
	ctx := context.Background()
	w := newClockWorld(t)
	writer, _ := openIndex(t, w.host(w.world))
	w.quiet(t, writer)

	reader, _ := openIndex(t, w.host(w.world))
	if err := reader.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if s := reader.Status(); s.Mode != ModeFolded {
		t.Fatalf("reader: %+v", s)
	}

	// A writer adds x (a journal line); a fold on a host 2 h behind lists
	// it and marks its line, then a collection on a correct clock finds
	// the retired list and the folded line over an hour old.
	x := storefixture.Ent(format.KindSeal, objD, "s7")
	if err := writer.Put(ctx, x, nil); err != nil {
		t.Fatal(err)
	}
	behind := store.NewFakeClock(w.world.NowMs() - (2 * time.Hour).Milliseconds())
	_, err := fold.Complete(ctx, w.host(behind), fold.Options{})
	var se *store.SkewError
	if !errors.As(err, &se) || !errors.Is(err, store.ErrClockSkew) || se.Skew != -2*time.Hour {
		t.Errorf("the fold from a clock 2 h behind: %v, want it refused naming a skew of -2h", err)
	}
	w.world.Advance(time.Minute)
	if _, err := fold.Collect(ctx, w.host(w.world), fold.CollectOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := reader.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	fresh, _ := openIndex(t, w.host(w.world))
	if err := fresh.Load(ctx); err != nil {
		t.Fatal(err)
	}
	want := walkEntries(t, fresh)
	if !slices.Contains(want, x.Key()) {
		t.Fatalf("a fresh reader does not show %s: %v", x.Key(), want)
	}
	if got := walkEntries(t, reader); !slices.Equal(got, want) {
		t.Fatalf("after a refresh the handle shows\n%v\na fresh reader shows\n%v", got, want)
	}
}

// TestTrustWindowIsMeasuredOnTheStoresClock: the records come back to the
// bytes a handle saw while the live list changed, over an hour later on
// the store's clock (a fold, then a collection an hour on), but a minute
// later on the handle's own clock (set back meanwhile). The handle must
// not trust them: its window is measured on the store's clock (and a host
// clock an hour off the store's is trusted for nothing either).
func TestTrustWindowIsMeasuredOnTheStoresClock(t *testing.T) {
	ctx := context.Background()
	w := newClockWorld(t)
	writer, _ := openIndex(t, w.host(w.world))
	w.quiet(t, writer)

	local := store.NewFakeClock(w.world.NowMs())
	reader, _ := openIndex(t, w.host(local))
	if err := reader.Load(ctx); err != nil {
		t.Fatal(err)
	}
	x := storefixture.Ent(format.KindSeal, objD, "s7")
	if err := writer.Put(ctx, x, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fold.Complete(ctx, w.base, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	w.world.Advance(format.GracePeriod + time.Minute)
	if _, err := fold.Collect(ctx, w.base, fold.CollectOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{format.JournalKey, format.RetiredKey} {
		if data := readRecord(t, w.base, k); len(data) != 0 {
			t.Fatalf("%s: %q, want the empty record the reader saw", k, data)
		}
	}
	local.Advance(time.Minute) // this host's clock was set back meanwhile

	if err := reader.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := reader.Status().LastRefresh; got.List != 1 {
		t.Errorf("refresh sent %v, want it to list the pack prefix", got)
	}
	fresh, _ := openIndex(t, w.host(w.world))
	if err := fresh.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := walkEntries(t, reader), walkEntries(t, fresh); !slices.Equal(got, want) || !slices.Contains(want, x.Key()) {
		t.Fatalf("after a refresh the handle shows\n%v\na fresh reader shows\n%v", got, want)
	}
}

// TestUnknownLookIsOutlived (issue 37 item 2): a look whose time on the
// store's clock is not known (lookUnknown: a store whose answers carry no
// Date) is as old as can be. lookOutlived (now lookTrusted) subtracted it without checking:
// now − math.MinInt64 wrapped negative and read "not outlived", so the
// signature cache never started over and a re-sign after the hour with
// the same line counts was served stale for as long as the handle lived.
func TestUnknownLookIsOutlived(t *testing.T) {
	f := newResignFixture(t)
	k := storefixture.Ent(format.KindSig, objA, "alice")
	old, resigned := bytes.Repeat([]byte("o"), 64), bytes.Repeat([]byte("n"), 64)
	f.put(t, k, old)
	f.read(t, k, old, "first read")
	if !f.reader.lookTrusted() {
		t.Fatal("a look just made is not trusted")
	}
	f.reader.lookedAt.Store(lookUnknown) // the store gave no time at that look
	if f.reader.lookTrusted() {
		t.Error("a look of unknown time is trusted")
	}
	before := journalMarks(f.reader.v.Load())[k.Key()]
	f.complete(t) // marks the line
	f.clk.Advance(format.GracePeriod + time.Minute)
	f.put(t, k, resigned) // drops the old line past its hour: one unfolded line again
	f.refresh(t)
	if after := journalMarks(f.reader.v.Load())[k.Key()]; after != before {
		t.Fatalf("fixture: the key's lines count %+v after, %+v before: the counts tell", after, before)
	}
	f.read(t, k, resigned, "after the re-sign past the hour, from a look of unknown time")
}

// TestStoreWithNoDateTrustsNoLook (issue 37 item 2, issue 40): a handle on
// a store whose answers carry no Date (a backend with no clock of its
// own, as behind a proxy that strips the header) never knows its look's
// time: lookedAt is lookUnknown, the window lapses at once. Every refresh
// lists the pack prefix (no unchanged record is trusted) and starts the
// signature cache over (the next read sends a GET), and says why once.
func TestStoreWithNoDateTrustsNoLook(t *testing.T) {
	ctx := context.Background()
	base := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")
	storefixture.PutEntries(t, base, a)
	storefixture.WriteEntryList(t, base, true, a)
	st := store.New(base.Bucket(), "nodate", "", store.Options{Layout: store.LayoutBucket}) // HTTP-like: a Date is its only clock, and none comes
	if _, ok := st.StoreNowMs(); ok {
		t.Fatal("fixture: the store gives a time")
	}
	ix, ws := openIndex(t, st)
	if _, err := ix.ReadSig(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := ix.lookedAt.Load(); got != lookUnknown {
		t.Fatalf("lookedAt %d after the open, want lookUnknown", got)
	}
	for i := range 2 {
		if err := ix.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got := ix.Status().LastRefresh; got.List != 1 {
			t.Errorf("refresh %d sent %v, want it to list the pack prefix", i, got)
		}
		before := st.Counts()
		if _, err := ix.ReadSig(ctx, a); err != nil {
			t.Fatal(err)
		}
		if got := st.Counts().Sub(before); got.Get != 1 {
			t.Errorf("a read after refresh %d sent %v, want the signature read again (the cache started over)", i, got)
		}
	}
	n := 0
	for _, w := range ws.all() {
		if strings.Contains(w, store.ErrNoStoreClock.Error()) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warnings name the missing clock, want 1: %q", n, ws.all())
	}
}
