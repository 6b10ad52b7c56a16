package index

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// newFile opens a fresh file:// store in a temporary directory.
func newFile(t testing.TB, layout store.Layout) *store.Store {
	t.Helper()
	return storefixture.Open(t, "file://"+t.TempDir(), store.Options{Layout: layout})
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
	for _, k := range format.Kinds {
		walk(k.String())
	}
	sort.Strings(out)
	return out
}

// keysOf returns sorted keys of entries.
func keysOf(es []format.Entry) []string {
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
