package index

import (
	"bytes"
	"context"
	"errors"
	iofs "io/fs"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestResignWithOneFoldedLineBeforeAndAfterIsSeen (issue 22, item 1): a
// signer signs again an hour after a fold, the journal update that appends
// the new line drops the old folded one past its hour, and a fold marks the
// new line. The key has one folded line before and after: a reader that
// counted lines kept serving the old bytes from its cache. The refresh
// sees a line folded after its view's newest fold, and the reader reads the
// new bytes, with a new SigVersion.
func TestResignWithOneFoldedLineBeforeAndAfterIsSeen(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	k := storefixture.Ent(format.KindSig, objA, "alice")
	other := storefixture.Ent(format.KindSig, objC, "bob")
	old, resigned := bytes.Repeat([]byte("o"), 64), bytes.Repeat([]byte("n"), 100)
	if err := st.Put(ctx, k.Key(), old); err != nil {
		t.Fatal(err)
	}
	storefixture.PutEntries(t, st, other)
	storefixture.WriteEntryList(t, st, true, k, other)
	storefixture.WriteJournal(t, st, 1_000_000, k, other)
	reader, _ := openIndex(t, st)
	if got, err := reader.ReadSig(ctx, k); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("first read: %q %v", got, err)
	}
	v0, o0 := reader.SigVersion(k), reader.SigVersion(other)

	// The re-sign: new bytes, the old line dropped, the new one folded
	// later (the other key's line stays as it was).
	if err := st.Put(ctx, k.Key(), resigned); err != nil {
		t.Fatal(err)
	}
	storefixture.WriteJournalText(t, st, string(format.Journal([]format.JournalLine{
		{FoldedAt: 1_000_000, Key: other.Key()},
		{FoldedAt: 1_000_000 + 3_600_000, Key: k.Key()},
	})))
	if err := reader.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := reader.ReadSig(ctx, k); err != nil || !bytes.Equal(got, resigned) {
		t.Fatalf("after the re-sign and a refresh: %d bytes %v, want the new %d", len(got), err, len(resigned))
	}
	if reader.SigVersion(k) == v0 {
		t.Error("SigVersion of the re-signed signature did not move")
	}
	if reader.SigVersion(other) != o0 {
		t.Error("SigVersion of a signature whose line did not change moved")
	}
}

// resignFixture is a folded mem store on a simulated clock, written through
// one handle (journaling writers: the key, then journal.Append) and read by an
// index on another.
type resignFixture struct {
	ctx    context.Context
	clk    *store.FakeClock
	wst    *store.Store
	reader *Index
}

func newResignFixture(t *testing.T) *resignFixture {
	t.Helper()
	f := &resignFixture{ctx: context.Background(), clk: store.NewFakeClock(1_700_000_000_000)}
	f.wst = storefixture.Open(t, "mem://", store.Options{Layout: store.LayoutBucket, Clock: f.clk})
	f.put(t, storefixture.Ent(format.KindSeal, objC, "s1"), nil)
	f.complete(t)
	f.reader, _ = openIndex(t, store.New(f.wst.Bucket(), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: f.clk}))
	return f
}

// put writes e as a journaling writer does (put --force for a signature
// that exists): its key, then its journal line.
func (f *resignFixture) put(t *testing.T, e format.Entry, data []byte) {
	t.Helper()
	f.clk.Advance(time.Millisecond)
	if err := f.wst.Put(f.ctx, e.Key(), data); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Append(f.ctx, f.wst, []string{e.Key()}); err != nil {
		t.Fatal(err)
	}
}

func (f *resignFixture) complete(t *testing.T) {
	t.Helper()
	f.clk.Advance(time.Millisecond)
	if _, err := fold.Complete(f.ctx, f.wst, fold.Options{}); err != nil {
		t.Fatal(err)
	}
}

// foldAndDrop folds, lets the hour pass and runs gc, which drops the
// folded lines past their hour.
func (f *resignFixture) foldAndDrop(t *testing.T) {
	t.Helper()
	f.complete(t)
	f.clk.Advance(format.GracePeriod + time.Minute)
	if _, err := fold.Collect(f.ctx, f.wst, fold.CollectOptions{}); err != nil {
		t.Fatal(err)
	}
}

// forget runs gc --forget-objects on e's object, for signatures.
func (f *resignFixture) forget(t *testing.T, e format.Entry) {
	t.Helper()
	f.clk.Advance(time.Millisecond)
	fo := fold.ForgetObject{Object: e.Object, Kinds: []format.Kind{format.KindSig}}
	rep, err := fold.Collect(f.ctx, f.wst, fold.CollectOptions{ForgetObjects: []fold.ForgetObject{fo}, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Forget.Deleted == 0 {
		t.Fatalf("forget %s deleted nothing: %+v", fo, rep.Forget)
	}
}

func (f *resignFixture) refresh(t *testing.T) {
	t.Helper()
	if err := f.reader.Refresh(f.ctx); err != nil {
		t.Fatal(err)
	}
}

// read checks that the reader reads want for e.
func (f *resignFixture) read(t *testing.T, e format.Entry, want []byte, when string) {
	t.Helper()
	got, err := f.reader.ReadSig(f.ctx, e)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: read %s: %d bytes %q, %v; want the %d bytes %q", when, e.Key(), len(got), got, err, len(want), want)
	}
}

// TestResignAfterTheHourWithTheSameLineCountsIsSeen (R1, form 1): the
// reader saw the key with one unfolded line; a fold marked it, the hour
// passed, and a re-sign appended one new unfolded line (the same update
// dropped the old one): one unfolded line before and after. Or the key
// had no line at all before and after (the re-sign's line folded and
// dropped within the gap). Nothing in the journal can tell; a refresh
// whose last look is older than its window trusts no cached signature.
func TestResignAfterTheHourWithTheSameLineCountsIsSeen(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before is what happens between the first put and the reader's
		// first read; after between the re-sign and the refresh.
		before, after func(f *resignFixture, t *testing.T)
	}{
		{"one unfolded line before and after", func(*resignFixture, *testing.T) {}, func(*resignFixture, *testing.T) {}},
		{"one folded line before and after", (*resignFixture).complete, (*resignFixture).complete},
		{"no line before or after", (*resignFixture).foldAndDrop, (*resignFixture).foldAndDrop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newResignFixture(t)
			k := storefixture.Ent(format.KindSig, objA, "alice")
			old, resigned := bytes.Repeat([]byte("o"), 64), bytes.Repeat([]byte("n"), 100)
			f.put(t, k, old)
			tc.before(f, t)
			f.read(t, k, old, "first read")
			before, ok := journalMarks(f.reader.v.Load())[k.Key()]
			if tc.name == "no line before or after" && ok {
				t.Fatalf("fixture: the key has lines %+v", before)
			}
			v0 := f.reader.SigVersion(k)

			f.complete(t) // marks the line, if unfolded
			f.clk.Advance(format.GracePeriod + time.Minute)
			f.put(t, k, resigned) // drops the old line past its hour
			tc.after(f, t)
			f.refresh(t)
			if after := journalMarks(f.reader.v.Load())[k.Key()]; after != before {
				t.Fatalf("fixture: the key's lines count %+v after, %+v before: the counts tell", after, before)
			}
			f.read(t, k, resigned, "after the re-sign and a refresh")
			if f.reader.SigVersion(k) == v0 {
				t.Error("SigVersion of the re-signed signature did not move")
			}
		})
	}
}

// TestForgetThenPutAgainIsSeen (R1, form 2): gc --forget-objects deletes
// the signature and its journal lines, another writer puts it again with
// other bytes, and the reader refreshes only then: the key has one
// unfolded line before and after. The reader sees a line of its view gone
// and reads the new bytes.
func TestForgetThenPutAgainIsSeen(t *testing.T) {
	k := storefixture.Ent(format.KindSig, objA, "alice")
	j := storefixture.Ent(format.KindSig, objB, "bob")
	for _, tc := range []struct {
		name  string
		order []format.Entry // the puts before the reader's first read
	}{
		{"a line after it", []format.Entry{k, j}},
		{"a line before it, marked by the collection's fold", []format.Entry{j, k}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newResignFixture(t)
			old, again := bytes.Repeat([]byte("o"), 64), bytes.Repeat([]byte("a"), 64)
			for _, e := range tc.order {
				f.put(t, e, old)
			}
			f.read(t, k, old, "first read")
			f.read(t, j, old, "first read")
			f.forget(t, k)
			f.put(t, k, again)
			f.refresh(t)
			f.read(t, k, again, "after the forget, the put again and a refresh")
		})
	}
}

// TestRefreshDropsWhatAForgetDeleted (R1, form 2): a refresh after
// gc --forget-objects no longer holds the signature; the reader's cache
// no longer serves its bytes (a fresh reader finds no key), and after the
// put again with other bytes and a refresh, it reads those.
func TestRefreshDropsWhatAForgetDeleted(t *testing.T) {
	f := newResignFixture(t)
	k := storefixture.Ent(format.KindSig, objA, "alice")
	old, again := bytes.Repeat([]byte("o"), 64), bytes.Repeat([]byte("a"), 64)
	f.put(t, k, old)
	f.complete(t)
	f.read(t, k, old, "first read")
	v0 := f.reader.SigVersion(k)
	f.forget(t, k)
	f.refresh(t)
	if _, err := f.reader.ReadSig(f.ctx, k); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("a refresh after the forget: ReadSig %v, want a key that does not exist", err)
	}
	if f.reader.SigVersion(k) == v0 {
		t.Error("SigVersion of the forgotten signature did not move")
	}
	f.put(t, k, again)
	f.complete(t)
	f.refresh(t)
	f.read(t, k, again, "after the put again and a refresh")
}

// TestRefreshEveryMinuteKeepsCachedSignatures: what R1's fix costs. A
// handle refreshed every minute for two hours of nothing changing sends 2
// GETs a refresh, no LIST, and reads no cached signature again; a refresh
// after a gap of two hours starts the cache over, and the next read of the
// signature is one GET.
func TestRefreshEveryMinuteKeepsCachedSignatures(t *testing.T) {
	f := newResignFixture(t)
	k := storefixture.Ent(format.KindSig, objA, "alice")
	data := bytes.Repeat([]byte("s"), 64)
	f.put(t, k, data)
	f.complete(t)
	f.read(t, k, data, "first read")
	f.refresh(t)
	rst := f.reader.st
	d := storefixture.Delta(rst, func() {
		for range 120 {
			f.clk.Advance(time.Minute)
			f.refresh(t)
			f.read(t, k, data, "a refresh a minute")
		}
	})
	if d != (store.Counts{Get: 240}) {
		t.Fatalf("two hours of a refresh and a read a minute sent %v, want 240 GETs (2 a refresh) and nothing else", d)
	}
	f.clk.Advance(2 * time.Hour)
	f.refresh(t)
	d = storefixture.Delta(rst, func() { f.read(t, k, data, "after a gap of two hours") })
	if d != (store.Counts{Get: 1}) {
		t.Fatalf("the read after a refresh two hours after the last sent %v, want 1 GET", d)
	}
}

// TestForgetThenPutAgainWithFewerLinesIsSeen (the byte simulation's seed
// 109): the reader's view holds k with folded lines and, last, one
// unfolded line; a collection forgets k (its key and every line) and
// another writer puts it again (one unfolded line, the last again). The
// unfolded lines read as the view's, in the same order; only the count of
// k's lines went down, which the hour alone cannot do to lines folded
// minutes ago — so k is read again.
func TestForgetThenPutAgainWithFewerLinesIsSeen(t *testing.T) {
	f := newResignFixture(t)
	k := storefixture.Ent(format.KindSig, objA, "alice")
	v1, v2, v3, again := []byte("one"), []byte("two"), []byte("three"), []byte("4")
	f.put(t, k, v1)
	f.complete(t)
	f.put(t, k, v2)
	f.complete(t)
	f.put(t, k, v3)
	f.refresh(t)
	f.read(t, k, v3, "first read")
	f.forget(t, k)
	f.put(t, k, again)
	f.refresh(t)
	f.read(t, k, again, "after the forget, the put again and a refresh")
}
