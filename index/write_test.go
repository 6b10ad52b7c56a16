package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// foldedStore is a mem store folded with one entry.
func foldedStore(t *testing.T) (*store.Store, format.Entry) {
	t.Helper()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")
	storefixture.PutEntries(t, st, a)
	storefixture.WriteEntryList(t, st, true, a)
	return st, a
}

func TestOwnWriteVisibleAtOnce(t *testing.T) {
	ctx := context.Background()
	st, _ := foldedStore(t)
	ix, _ := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	g := ix.Generation()
	b := storefixture.Ent(format.KindSig, objB, "bob")
	c := storefixture.Ent(format.KindReceipt, objC, "runner-1")
	if err := ix.Put(ctx, b, []byte("bob's sig")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Put(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	if ix.Generation() == g {
		t.Fatal("an own write did not bump the generation")
	}
	d := storefixture.Delta(st, func() {
		n, err := ix.Stat(ctx, b.Key())
		if err != nil || n.Source != sourceOwnWrite || n.Size != int64(len("bob's sig")) {
			t.Fatalf("Stat %+v %v", n, err)
		}
		if got := mustReadDir(t, ix, "sig/ab"); !slices.Equal(got, []string{objA[2:], objB[2:]}) {
			t.Fatalf("sig/ab %v", got)
		}
		if got := mustReadDir(t, ix, "receipt"); !slices.Equal(got, []string{"cd"}) {
			t.Fatalf("receipt %v", got)
		}
		if got := mustReadDir(t, ix, "by-signer"); !slices.Equal(got, []string{"alice", "bob"}) {
			t.Fatalf("by-signer %v", got)
		}
		if n, err := ix.Stat(ctx, "by-signer/bob/"+objB); err != nil || n.Target != "../../sig/ab/"+objB[2:]+"/bob" {
			t.Fatalf("link %+v %v", n, err)
		}
		if data, err := ix.ReadSig(ctx, b); err != nil || string(data) != "bob's sig" {
			t.Fatalf("ReadSig %q %v", data, err)
		}
	})
	if d.Total() != 0 {
		t.Fatalf("lookups of own writes sent %v", d)
	}
	if s := ix.Status(); s.Entries != 3 || s.OwnWrites != 2 {
		t.Fatalf("status entries %d own %d", s.Entries, s.OwnWrites)
	}
	// After a refresh the journal holds them; the overlay empties.
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if s := ix.Status(); s.Entries != 3 || s.OwnWrites != 0 {
		t.Fatalf("after refresh: entries %d own %d", s.Entries, s.OwnWrites)
	}
	if n, err := ix.Stat(ctx, b.Key()); err != nil || n.Source != sourceJournal {
		t.Fatalf("after refresh: %+v %v", n, err)
	}
}

func TestPutRefusesBadWrites(t *testing.T) {
	ctx := context.Background()
	st, _ := foldedStore(t)
	ix, _ := openIndex(t, st)
	for name, w := range map[string]Write{
		"bad value":          {Entry: storefixture.Ent(format.KindSig, objA, "a/b"), Data: []byte("x")},
		"bad object":         {Entry: storefixture.Ent(format.KindSig, "ABCD", "a"), Data: []byte("x")},
		"empty signature":    {Entry: storefixture.Ent(format.KindSig, objA, "a")},
		"bytes in an index":  {Entry: storefixture.Ent(format.KindSeal, objA, "s"), Data: []byte("x")},
		"one bad in a batch": {Entry: storefixture.Ent(format.KindSeal, objA, ".."), Data: nil},
	} {
		d := storefixture.Delta(st, func() {
			err := ix.PutBatch(ctx, []Write{{Entry: storefixture.Ent(format.KindCert, objC, "ok")}, w})
			if !errors.Is(err, format.ErrBadKey) {
				t.Errorf("%s: %v, want ErrBadKey", name, err)
			}
		})
		if d.Total() != 0 {
			t.Errorf("%s: a refused batch sent %v", name, d)
		}
	}
}

func TestPutWritesObjectBeforeJournal(t *testing.T) {
	ctx := context.Background()
	st, _ := foldedStore(t)
	ix, _ := openIndex(t, st)
	real := ix.appendFn
	var checked []string
	ix.appendFn = func(ctx context.Context, s *store.Store, keys []string) (journal.AppendResult, error) {
		for _, k := range keys {
			if ok, err := st.Bucket().Exists(ctx, k); err != nil || !ok {
				t.Errorf("journal append of %s before its key was written", k)
			}
			checked = append(checked, k)
		}
		return real(ctx, s, keys)
	}
	ws := []Write{
		{Entry: storefixture.Ent(format.KindSig, objB, "bob"), Data: []byte("b")},
		{Entry: storefixture.Ent(format.KindSeal, objC, "s")},
	}
	if err := ix.PutBatch(ctx, ws); err != nil {
		t.Fatal(err)
	}
	want := keysOf([]format.Entry{ws[0].Entry, ws[1].Entry})
	if slices.Sort(checked); !slices.Equal(checked, want) {
		t.Fatalf("appended %v", checked)
	}
	got := storefixture.JournalKeys(t, st)
	if slices.Sort(got); !slices.Equal(got, want) {
		t.Fatalf("journal %v", got)
	}
	if ix.Status().JournalAppends != 1 {
		t.Fatalf("a batch took %d journal updates", ix.Status().JournalAppends)
	}
}

func TestJournalFailureReportsUnjournaledKeys(t *testing.T) {
	ctx := context.Background()
	st, _ := foldedStore(t)
	ix, _ := openIndex(t, st)
	ix.appendFn = func(context.Context, *store.Store, []string) (journal.AppendResult, error) {
		return journal.AppendResult{}, errors.New("injected CAS failure")
	}
	b := storefixture.Ent(format.KindSig, objB, "bob")
	err := ix.Put(ctx, b, []byte("b"))
	if err == nil || !strings.Contains(err.Error(), "injected CAS failure") || !strings.Contains(err.Error(), "journal lines were not") {
		t.Fatalf("Put: %v", err)
	}
	if ok, _ := st.Bucket().Exists(ctx, b.Key()); !ok {
		t.Fatal("the per-object key was not written first")
	}
	if _, err := ix.Stat(ctx, b.Key()); err == nil {
		t.Fatal("a write whose journal line failed is visible as an own write")
	}
}

func TestFailedPartialFoldAfterLandedLinesStillAcknowledges(t *testing.T) {
	ctx := context.Background()
	st, _ := foldedStore(t)
	ix, _ := openIndex(t, st)
	real := ix.appendFn
	ix.appendFn = func(ctx context.Context, s *store.Store, keys []string) (journal.AppendResult, error) {
		res, err := real(ctx, s, keys)
		if err != nil {
			return res, err
		}
		return res, fmt.Errorf("append: %w: injected", journal.ErrPartialFold)
	}
	b := storefixture.Ent(format.KindSig, objB, "bob")
	if err := ix.Put(ctx, b, []byte("b")); err != nil {
		t.Fatalf("Put whose journal line landed: %v", err)
	}
	if _, err := ix.Stat(ctx, b.Key()); err != nil {
		t.Fatalf("acknowledged write not visible: %v", err)
	}
}

func TestGroupCommitBatchesJournalUpdates(t *testing.T) {
	ctx := context.Background()
	st, _ := foldedStore(t)
	ix, _ := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	var es []format.Entry
	for i := 0; i < n; i++ {
		es = append(es, storefixture.Ent(format.KindSig, fmt.Sprintf("%064x", i+1), "signer"))
	}
	d := storefixture.Delta(st, func() {
		var wg sync.WaitGroup
		for _, e := range es {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := ix.Put(ctx, e, []byte("sig")); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	})
	s := ix.Status()
	journalPuts := d.Put - n
	t.Logf("%d concurrent Puts: %d journal updates (%d journal PUT requests), %v", n, s.JournalAppends, journalPuts, d)
	if s.JournalAppends >= n/2 || journalPuts >= n/2 {
		t.Fatalf("%d Puts took %d journal updates (%d PUTs): no grouping", n, s.JournalAppends, journalPuts)
	}
	if s.JournalKeys != n {
		t.Fatalf("journaled %d keys, want %d", s.JournalKeys, n)
	}
	if got := storefixture.JournalKeys(t, st); len(got) != n {
		t.Fatalf("journal has %d lines, want %d", len(got), n)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if s := ix.Status(); s.Entries != n+1 {
		t.Fatalf("after refresh %d entries", s.Entries)
	}
}

func TestCloseWaitsForPendingAppends(t *testing.T) {
	ctx := context.Background()
	st, _ := foldedStore(t)
	ix, _ := openIndex(t, st)
	entered, release := make(chan struct{}), make(chan struct{})
	real := ix.appendFn
	ix.appendFn = func(ctx context.Context, s *store.Store, keys []string) (journal.AppendResult, error) {
		close(entered)
		<-release
		return real(ctx, s, keys)
	}
	done := make(chan error)
	go func() { done <- ix.Put(ctx, storefixture.Ent(format.KindSig, objB, "b"), []byte("b")) }()
	<-entered
	closed := make(chan struct{})
	go func() { ix.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned before the pending append landed")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-closed
	if got := storefixture.JournalKeys(t, st); len(got) != 1 {
		t.Fatalf("journal %v", got)
	}
	if err := ix.Put(ctx, storefixture.Ent(format.KindSig, objC, "c"), []byte("c")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
}

func TestSigCacheBoundedAndInvalidatedOnReplace(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	var sigs []format.Entry
	if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 200, Seed: 9, Fold: true, OnEntry: func(e format.Entry, _ string) {
		if e.Kind == format.KindSig {
			sigs = append(sigs, e)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	const bound = 4 << 10
	ix, err := Open(ctx, st, Options{SigCacheBytes: bound, ReadAhead: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	d := storefixture.Delta(st, func() {
		for _, e := range sigs {
			if _, err := ix.ReadSig(ctx, e); err != nil {
				t.Fatal(err)
			}
			if used := ix.Status().SigCacheBytes; used > bound {
				t.Fatalf("cache holds %d bytes, bound %d", used, bound)
			}
		}
	})
	if d != (store.Counts{Get: int64(len(sigs))}) {
		t.Fatalf("reading %d signatures sent %v", len(sigs), d)
	}
	last := sigs[len(sigs)-1]
	// The most recent one is cached; sizes are known for all.
	d = storefixture.Delta(st, func() {
		for i := 0; i < 3; i++ {
			ix.ReadSig(ctx, last)
		}
		for _, e := range sigs {
			if n, err := ix.Stat(ctx, e.Key()); err != nil || n.Size < 64 {
				t.Fatalf("Stat %+v %v", n, err)
			}
			if n, err := ix.SigSize(ctx, e); err != nil || n < 64 {
				t.Fatalf("SigSize %d %v", n, err)
			}
		}
	})
	if d.Total() != 0 {
		t.Fatalf("cached reads sent %v", d)
	}
	// The first one was evicted: reading it again is one GET.
	if d := storefixture.Delta(st, func() { ix.ReadSig(ctx, sigs[0]) }); d != (store.Counts{Get: 1}) {
		t.Fatalf("evicted read sent %v", d)
	}
	// Replacing it through this handle replaces the cached bytes.
	if err := ix.Put(ctx, last, []byte("replaced")); err != nil {
		t.Fatal(err)
	}
	d = storefixture.Delta(st, func() {
		if b, err := ix.ReadSig(ctx, last); err != nil || string(b) != "replaced" {
			t.Fatalf("after replace %q %v", b, err)
		}
	})
	if d.Total() != 0 {
		t.Fatalf("read after replace sent %v", d)
	}
}

func TestSignerReplacesSignature(t *testing.T) {
	ctx := context.Background()
	st, a := foldedStore(t)
	writer, _ := openIndex(t, st)
	reader, _ := openIndex(t, otherHandle(st))
	if b, err := reader.ReadSig(ctx, a); err != nil || !bytes.Equal(b, storefixture.SigBytes(a.Key())) {
		t.Fatalf("first read %q %v", b, err)
	}
	if err := writer.Put(ctx, a, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if err := writer.Put(ctx, a, []byte("v3")); err != nil {
		t.Fatal(err)
	}
	nodes, err := writer.ReadDir(ctx, objectPath(format.KindSig, objA))
	if err != nil || len(nodes) != 1 || nodes[0].Size != 2 {
		t.Fatalf("one signer, one file: %+v %v", nodes, err)
	}
	if b, _ := writer.ReadSig(ctx, a); string(b) != "v3" {
		t.Fatalf("writer reads %q", b)
	}
	// The other reader's cached bytes go when a refresh shows new journal lines.
	if err := reader.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err := reader.ReadSig(ctx, a); err != nil || string(b) != "v3" {
		t.Fatalf("reader after refresh %q %v", b, err)
	}
}

func TestRefreshSeesOtherWriter(t *testing.T) {
	ctx := context.Background()
	st, a := foldedStore(t)
	reader, _ := openIndex(t, st)
	writer, _ := openIndex(t, otherHandle(st))
	if err := reader.Load(ctx); err != nil {
		t.Fatal(err)
	}
	g := reader.Generation()
	// Nothing changed: two conditional GETs, no LIST, same generation.
	if d := storefixture.Delta(st, func() { reader.Refresh(ctx) }); d != (store.Counts{Get: 2}) {
		t.Fatalf("idle refresh sent %v", d)
	}
	if reader.Generation() != g {
		t.Fatal("an idle refresh bumped the generation")
	}
	b := storefixture.Ent(format.KindSig, objB, "bob")
	if err := writer.Put(ctx, b, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Stat(ctx, b.Key()); err == nil {
		t.Fatal("seen before refresh")
	}
	// The journal changed: the pack listing, no list read.
	d := storefixture.Delta(st, func() {
		if err := reader.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if d != (store.Counts{List: 1, Get: 2}) {
		t.Fatalf("refresh sent %v, want 1 LIST + 2 GETs", d)
	}
	if reader.Generation() == g {
		t.Fatal("a refresh that changed the tree kept the generation")
	}
	if got := walkEntries(t, reader); !slices.Equal(got, keysOf([]format.Entry{a, b})) {
		t.Fatalf("tree %v", got)
	}
	// A complete fold: its new list is the only one read.
	if _, err := fold.Complete(ctx, otherHandle(st), fold.Options{}); err != nil {
		t.Fatal(err)
	}
	if d := storefixture.Delta(st, func() { reader.Refresh(ctx) }); d != (store.Counts{List: 1, Get: 3}) {
		t.Fatalf("refresh after a fold sent %v", d)
	}
	if got := walkEntries(t, reader); !slices.Equal(got, keysOf([]format.Entry{a, b})) {
		t.Fatalf("tree after fold %v", got)
	}
}

func TestBigBatchFoldsPartialListAndStaysVisible(t *testing.T) {
	ctx := context.Background()
	st, a := foldedStore(t)
	ix, _ := openIndex(t, st)
	reader, _ := openIndex(t, otherHandle(st))
	var ws []Write
	var es []format.Entry
	for i := 0; i < format.PartialFoldThreshold+200; i++ {
		e := storefixture.Ent(format.KindSeal, fmt.Sprintf("%08x", i), "s")
		ws = append(ws, Write{Entry: e})
		es = append(es, e)
	}
	if err := ix.PutBatch(ctx, ws); err != nil {
		t.Fatal(err)
	}
	if n := ix.Status().JournalAppends; n != 1 {
		t.Fatalf("one batch took %d journal updates", n)
	}
	want := keysOf(append(es, a))
	for _, x := range []*Index{ix, reader} {
		if err := x.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got := walkEntries(t, x); !slices.Equal(got, want) {
			t.Fatalf("%d entries, want %d", len(got), len(want))
		}
		t.Logf("status: mode %s, live lists %d, journal %d lines (%d folded)", x.Status().Mode, len(x.Status().LiveLists), x.Status().JournalLines, x.Status().JournalFolded)
	}
}

// TestCanceledPutBatchSaysCanceled (issue 37 item 4): a PutBatch whose
// context ends before its keys are sent fails with the context's error,
// naming each key: it said "put: 1 of 1 keys could not be written:
// %!w(<nil>)" (the keys par.ForEach skipped kept a nil error) and was not
// errors.Is(err, context.Canceled). Nothing is written.
func TestCanceledPutBatchSaysCanceled(t *testing.T) {
	st, _ := foldedStore(t)
	ix, _ := openIndex(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := storefixture.Ent(format.KindSig, objB, "bob")
	c := storefixture.Ent(format.KindSeal, objC, "s1")
	for _, ws := range [][]Write{{{Entry: b, Data: []byte("sig")}}, {{Entry: b, Data: []byte("sig")}, {Entry: c}}} {
		err := ix.PutBatch(ctx, ws)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("PutBatch of %d on a canceled context: %v, want context.Canceled", len(ws), err)
		}
		if err != nil && (strings.Contains(err.Error(), "%!") || !strings.Contains(err.Error(), b.Key())) {
			t.Errorf("PutBatch of %d on a canceled context: %q, want each key named and no bad verb", len(ws), err)
		}
		if _, err := ix.Stat(context.Background(), b.Key()); err == nil {
			t.Errorf("a canceled put shows %s", b.Key())
		}
	}
	if ok, err := st.Exists(context.Background(), b.Key()); err != nil || ok {
		t.Errorf("a canceled put wrote %s: %v %v", b.Key(), ok, err)
	}
}
