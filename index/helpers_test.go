package index

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/oxyfs/oxyfs/store"
)

// newMem opens a fresh in-memory bucket store.
func newMem(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "mem://", store.Options{Layout: store.LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newFile opens a fresh file:// store in a temporary directory.
func newFile(t testing.TB, layout store.Layout) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "file://"+t.TempDir(), store.Options{Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// otherHandle opens a second handle on the same bucket: another writer.
func otherHandle(st *store.Store) *store.Store {
	return store.New(st.Bucket(), st.Backend(), "", store.Options{Layout: st.Layout()})
}

// warnings collects an index's warnings.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(m string) { w.mu.Lock(); w.msgs = append(w.msgs, m); w.mu.Unlock() }
func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// openIndex opens an index whose warnings are collected.
func openIndex(t testing.TB, st *store.Store) (*Index, *warnings) {
	t.Helper()
	w := &warnings{}
	ix, err := Open(context.Background(), st, Options{Warn: w.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix, w
}

// delta runs fn and returns the requests it sent.
func delta(st *store.Store, fn func()) store.Counts {
	before := st.Counts()
	fn()
	return st.Counts().Sub(before)
}

// put writes raw per-object keys (uncounted concerns aside) as a writer does.
func putKeys(t testing.TB, st *store.Store, es ...store.Entry) {
	t.Helper()
	for _, e := range es {
		var data []byte
		if e.Kind == store.KindSig {
			data = []byte("sig of " + e.Key())
		}
		if err := st.Put(context.Background(), e.Key(), data); err != nil {
			t.Fatal(err)
		}
	}
}

// writeList writes a list of the entries' keys; it returns its name.
func writeList(t testing.TB, st *store.Store, complete bool, es ...store.Entry) string {
	t.Helper()
	keys := make([]string, len(es))
	for i, e := range es {
		keys[i] = e.Key()
	}
	id, data, err := store.EncodeEntryList(keys)
	if err != nil {
		t.Fatal(err)
	}
	name := store.EntryListName(id, complete)
	if err := st.Put(context.Background(), name, data); err != nil {
		t.Fatal(err)
	}
	return name
}

// writeJournal replaces the journal with lines naming the entries (folded at
// foldedAt, 0 = unfolded).
func writeJournal(t testing.TB, st *store.Store, foldedAt int64, es ...store.Entry) {
	t.Helper()
	lines := make([]store.JournalLine, len(es))
	for i, e := range es {
		lines[i] = store.JournalLine{FoldedAt: foldedAt, Key: e.Key()}
	}
	writeJournalText(t, st, string(store.FormatJournal(lines)))
}

func writeJournalText(t testing.TB, st *store.Store, text string) {
	t.Helper()
	_, err := st.UpdateRecord(context.Background(), store.JournalKey, func([]byte, bool) ([]byte, error) {
		return []byte(text), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// retire writes the retired record naming keys.
func retire(t testing.TB, st *store.Store, keys ...string) {
	t.Helper()
	lines := make([]store.RetiredLine, len(keys))
	for i, k := range keys {
		lines[i] = store.RetiredLine{RetiredAt: 1, Key: k}
	}
	_, err := st.UpdateRecord(context.Background(), store.RetiredKey, func([]byte, bool) ([]byte, error) {
		return store.FormatRetired(lines), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ent(kind store.Kind, obj, val string) store.Entry {
	return store.Entry{Kind: kind, Object: obj, Value: val}
}

// names returns the nodes' names.
func names(nodes []Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return out
}

// walkEntries lists every file path of the tree via ReadDir.
func walkEntries(t testing.TB, ix *Index) []string {
	t.Helper()
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		nodes, err := ix.ReadDir(context.Background(), dir)
		if err != nil {
			t.Fatalf("ReadDir %q: %v", dir, err)
		}
		for _, n := range nodes {
			p := n.Name
			if dir != "" {
				p = dir + "/" + n.Name
			}
			switch n.Type {
			case NodeDir:
				walk(p)
			case NodeFile:
				out = append(out, p)
			}
		}
	}
	for _, k := range store.Kinds {
		walk(k.String())
	}
	sort.Strings(out)
	return out
}

// keysOf returns sorted keys of entries.
func keysOf(es []store.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key()
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func hasWarning(ws []string, sub string) bool {
	return slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, sub) })
}
