package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// Issue 23: deletion never takes a server's word. Each subtest runs the
// oxyfs binary (or, for a refresh, an index handle) against versitygw,
// fake-gcs-server and Azurite through testkit/lyingproxy, which changes
// only what the server answers, and checks that the collection, fold or
// check fails closed: nothing deleted, no record changed on a lie's
// strength. The store is set up honestly first, in the test process.

// gcLiar is one fresh bucket behind a lying proxy.
type gcLiar struct {
	srv *testservers.Server
	p   *lyingproxy.Proxy
	url string       // the bucket, through the proxy
	st  *store.Store // a handle through the proxy: honest while p.Set() holds no mode
	// The objects: kept stays, forgotten is forgotten.
	kept, forgotten string
}

func newGCLiar(t *testing.T, kind string) *gcLiar {
	t.Helper()
	srv := testservers.Start(t, kind)
	p := lyingproxy.Start(t, srv.Kind, srv.URL)
	g := &gcLiar{srv: srv, p: p, url: p.StoreURL(srv.NewBucket(t)), kept: newObject(t), forgotten: newObject(t)}
	st, err := store.Open(context.Background(), g.url, store.Options{Layout: store.LayoutBucket})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	g.st = st
	return g
}

func (g *gcLiar) key(kind format.Kind, object, value string) string {
	return format.Entry{Kind: kind, Object: object, Value: value}.Key()
}

// forgottenKeys are the forgotten object's entries.
func (g *gcLiar) forgottenKeys() []string {
	return []string{g.key(format.KindReceipt, g.forgotten, "r1"), g.key(format.KindSig, g.forgotten, "alice"), g.key(format.KindSig, g.forgotten, "bob")}
}

// write writes entries as a journaling writer does: their keys, then their
// journal lines.
func (g *gcLiar) write(t *testing.T, keys ...string) {
	t.Helper()
	storefixture.PutObjects(t, g.st, keys...)
	if _, err := journal.Append(context.Background(), g.st, keys); err != nil {
		t.Fatal(err)
	}
}

// folded makes the store folded: kept's and forgotten's entries journaled
// and folded into one complete list, whose name it returns.
func (g *gcLiar) folded(t *testing.T) string {
	t.Helper()
	g.write(t, append([]string{g.key(format.KindSig, g.kept, "alice"), g.key(format.KindSeal, g.kept, "s1")}, g.forgottenKeys()...)...)
	rep, err := fold.Complete(context.Background(), g.st, fold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep.List.Name
}

// gcForget runs `oxyfs gc URL --forget-objects FILE --apply`.
func (g *gcLiar) gcForget(t *testing.T) result {
	t.Helper()
	file := filepath.Join(t.TempDir(), "forget")
	if err := os.WriteFile(file, []byte(g.forgotten+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return oxyfs(t, g.srv, "gc", g.url, "--forget-objects", file, "--apply")
}

// state reads every key and the records, honestly.
func (g *gcLiar) state(t *testing.T) bucketState {
	t.Helper()
	g.p.Set()
	return readBucket(t, g.st)
}

// refused checks that a run failed and left the bucket as before, but for
// the new keys allowed.
func (g *gcLiar) refused(t *testing.T, r result, before bucketState, allowNew ...string) {
	t.Helper()
	if r.code != 1 {
		t.Errorf("want exit 1 (refused), got %s", r)
	}
	after := g.state(t)
	for _, k := range allowNew {
		delete(after.keys, k)
	}
	if d := before.diff(after); d != "" {
		t.Errorf("the bucket changed: %s\n%s", d, r)
	}
}

func TestGCThroughALyingServer(t *testing.T) {
	for _, kind := range []string{"s3", "gcs", "azure"} {
		t.Run(kind, func(t *testing.T) {
			for _, c := range gcLiarCases {
				t.Run(c.name, func(t *testing.T) { c.run(t, newGCLiar(t, kind)) })
			}
		})
	}
}

var gcLiarCases = []struct {
	name string
	run  func(t *testing.T, g *gcLiar)
}{
	// Item 1: the LIST of the forgotten object's prefix answers the whole
	// bucket; gc deleted every key of it and exited 0.
	{"1-forget-listing-ignores-prefix", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		before := g.state(t)
		g.p.Set(lyingproxy.IgnorePrefix(), lyingproxy.ListsUnder(g.key(format.KindSig, g.forgotten, "")))
		g.refused(t, g.gcForget(t), before)
	}},
	// Item 1, the plan's own check: a key under the forgotten object's
	// prefix that is no entry of it is not deleted on the listing's word.
	{"1-forget-listing-shows-no-entry", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		storefixture.PutObjects(t, g.st, g.key(format.KindSig, g.forgotten, "")+"not/an-entry")
		before := g.state(t)
		g.refused(t, g.gcForget(t), before)
	}},
	// Item 3: the pack listing hides the live complete list; gc exited 0
	// and left it live, naming the keys it deleted.
	{"3-pack-listing-hides-live-list", func(t *testing.T, g *gcLiar) {
		live := g.folded(t)
		before := g.state(t)
		g.p.Set(lyingproxy.OmitKeys(live))
		r := g.gcForget(t)
		g.refused(t, r, before)
		if !strings.Contains(r.stderr, "pack listing") {
			t.Errorf("the refusal does not name the pack listing:\n%s", r)
		}
	}},
	// Item 4: a first fold over a sig/ page cut in half, on a store with
	// older writers' keys: it wrote a list without the cut keys.
	{"4-first-fold-cut-page", func(t *testing.T, g *gcLiar) {
		var journaled []string
		for range 8 {
			obj := newObject(t)
			storefixture.PutObjects(t, g.st, g.key(format.KindSig, obj, "older-writer"))
			journaled = append(journaled, g.key(format.KindSig, obj, "alice"))
		}
		g.write(t, journaled...)
		before := g.state(t)
		g.p.Set(lyingproxy.CutPage(), lyingproxy.ListsUnder("sig/"))
		// The marker of the older lists' fold (there are none) comes
		// before the listing; no list, no mark.
		g.refused(t, oxyfs(t, g.srv, "fold", g.url), before, format.LegacyFoldedMarker)
	}},
	// Item 5: the forgotten object's sig/ LIST is empty; gc said the keys
	// were deleted, and they stayed.
	{"5-forget-empty-listing", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		before := g.state(t)
		g.p.Set(lyingproxy.EmptyPages(), lyingproxy.ListsUnder(g.key(format.KindSig, g.forgotten, "")))
		g.refused(t, g.gcForget(t), before)
	}},
	// Item 6: DELETE answers 204/202 and keeps the object: gc reported the
	// forgotten keys deleted.
	{"6-forget-delete-lies", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		g.p.Set(lyingproxy.KeepOnDelete(g.forgottenKeys()...))
		r := g.gcForget(t)
		if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "still there") {
			t.Errorf("want exit 1 naming the keys still there, got %s", r)
		}
	}},
	// Item 6: a retired list's DELETE lies: gc dropped its retired line,
	// which made the list live again.
	{"6-retired-delete-lies", func(t *testing.T, g *gcLiar) {
		old := g.folded(t)
		g.write(t, g.key(format.KindSig, g.kept, "carol"))
		if _, err := fold.Complete(context.Background(), g.st, fold.Options{}); err != nil { // retires old
			t.Fatal(err)
		}
		// Retired long ago: due now.
		if _, err := g.st.UpdateRecord(context.Background(), format.RetiredKey, func(data []byte, _ bool) ([]byte, error) {
			out := "1 " + old + "\n"
			for l := range strings.Lines(string(data)) {
				if !strings.HasSuffix(l, " "+old+"\n") {
					out += l
				}
			}
			return []byte(out), nil
		}); err != nil {
			t.Fatal(err)
		}
		g.p.Set(lyingproxy.KeepOnDelete(old))
		r := oxyfs(t, g.srv, "gc", g.url)
		if r.code != 1 {
			t.Errorf("want exit 1, got %s", r)
		}
		s := g.state(t)
		if !strings.Contains(s.retired, old) {
			t.Errorf("the retired line of %s, still there, was dropped: it reads as live again\n%s", old, r)
		}
	}},
	// Item 7: a refresh that gets 404 for a record it read kept no view.
	{"7-refresh-record-404", func(t *testing.T, g *gcLiar) {
		ctx := context.Background()
		g.folded(t)
		if _, err := fold.Collect(ctx, g.st, fold.CollectOptions{Apply: true, ForgetObjects: []fold.ForgetObject{{Object: g.forgotten}}}); err != nil {
			t.Fatal(err)
		}
		w, err := index.Open(ctx, g.st, index.Options{Warn: func(string) {}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		journalOnly := format.Entry{Kind: format.KindSeal, Object: g.kept, Value: "s2"}
		if err := w.Put(ctx, journalOnly, nil); err != nil {
			t.Fatal(err)
		}
		for _, record := range []string{format.JournalKey, format.RetiredKey} {
			g.p.Set()
			ix, err := index.Open(ctx, g.st, index.Options{Warn: func(string) {}})
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.Load(ctx); err != nil {
				t.Fatal(err)
			}
			before := ix.Status().Entries
			g.p.Set(lyingproxy.NotFound(record))
			if err := ix.Refresh(ctx); !errors.Is(err, index.ErrRecordVanished) {
				t.Errorf("refresh with %s answering 404: %v, want ErrRecordVanished", record, err)
			}
			if n := ix.Status().Entries; n != before {
				t.Errorf("after a 404 for %s the handle shows %d entries, want %d as before", record, n, before)
			}
			ix.Close()
		}
	}},
	// Item 7 through a real mount: a SIGHUP refresh that gets 404 for a
	// record keeps what the mount shows.
	{"7-mount-refresh-record-404", func(t *testing.T, g *gcLiar) {
		testservers.RequireFUSE(t)
		ctx := context.Background()
		g.folded(t)
		if _, err := fold.Collect(ctx, g.st, fold.CollectOptions{Apply: true, ForgetObjects: []fold.ForgetObject{{Object: g.forgotten}}}); err != nil {
			t.Fatal(err)
		}
		w, err := index.Open(ctx, g.st, index.Options{Warn: func(string) {}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if err := w.Put(ctx, format.Entry{Kind: format.KindSeal, Object: g.kept, Value: "s2"}, nil); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		m := startMount(t, g.srv, g.url, dir)
		files := func() []string {
			return lines(run(t, "find", dir, "-path", dir+"/.oxy", "-prune", "-o", "-type", "f", "-print"))
		}
		before := files()
		if len(before) != 3 { // kept's alice and s1, and s2 in the journal only
			t.Fatalf("the mount shows %v, want kept's 3 entries", before)
		}
		for _, record := range []string{format.JournalKey, format.RetiredKey} {
			g.p.Set(lyingproxy.NotFound(record))
			n, _ := m.stderr.count("(SIGHUP)") // "refreshed (SIGHUP)" or "refresh (SIGHUP): error"
			m.signal(syscall.SIGHUP)
			if err := m.waitLog("(SIGHUP)", n+1, cmdTimeout); err != nil {
				t.Fatalf("refresh with %s answering 404: %v\n%s", record, err, m.stderr)
			}
			if k, _ := m.stderr.count("refresh (SIGHUP): open index: refresh: " + record + ": a record this handle read answers 404"); k != 1 {
				t.Errorf("the refresh with %s answering 404 did not fail saying so\n%s", record, m.stderr)
			}
			if got := files(); !slices.Equal(got, before) {
				t.Errorf("after a 404 for %s the mount shows %v, want %v as before", record, got, before)
			}
			g.p.Set()
			m.refresh()
			if got := files(); !slices.Equal(got, before) {
				t.Errorf("once %s answers: %v, want %v", record, got, before)
			}
		}
	}},
	// Item 8: on an empty sig/ page check called every key missing.
	{"8-check-empty-page", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		g.p.Set(lyingproxy.EmptyPages(), lyingproxy.ListsUnder("sig/"))
		r := oxyfs(t, g.srv, "check", g.url)
		if strings.Contains(r.stdout+r.stderr, "which does not exist") || !strings.Contains(r.stdout+r.stderr, "did not show") {
			t.Errorf("check over an empty sig/ page: want the listing named and no key called missing, got %s", r)
		}
	}},
	// Issue 22 item 5: the dry run named a key already gone "would delete".
	{"22.5-dry-run-names-only-keys-that-exist", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		gone := "pack-0123456789abcdef.pack"
		if _, err := g.st.UpdateRecord(context.Background(), format.RetiredKey, func(data []byte, _ bool) ([]byte, error) {
			return append([]byte("1 "+gone+"\n"), data...), nil
		}); err != nil {
			t.Fatal(err)
		}
		r := mustOxyfs(t, g.srv, "gc", g.url, "--dry-run")
		if strings.Contains(r.stdout, "would delete "+gone) || !strings.Contains(r.stdout, "gone already "+gone) {
			t.Errorf("dry run names %s, which is gone, as to delete:\n%s", gone, r)
		}
	}},
	// A guard that held before and must hold: a complete fold over an
	// empty sig/ page on a folded store writes nothing.
	{"guard-fold-empty-page", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		before := g.state(t)
		g.p.Set(lyingproxy.EmptyPages(), lyingproxy.ListsUnder("sig/"))
		g.refused(t, oxyfs(t, g.srv, "fold", g.url), before)
	}},
	// And with no lie, forgetting deletes exactly the object's entries.
	{"honest-forget", func(t *testing.T, g *gcLiar) {
		g.folded(t)
		before := g.state(t)
		r := g.gcForget(t)
		if r.code != 0 {
			t.Fatalf("%s", r)
		}
		after := g.state(t)
		var gone []string
		for k := range before.keys {
			if _, ok := after.keys[k]; !ok {
				if e, err := format.ParseKey(k); err == nil {
					gone = append(gone, e.Key())
				}
			}
		}
		slices.Sort(gone)
		if want := g.forgottenKeys(); !slices.Equal(gone, want) {
			t.Errorf("entries deleted %v, want %v\n%s", gone, want, r)
		}
	}},
}
