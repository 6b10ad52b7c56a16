package fold

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// ErrIncompleteListing is returned by a complete fold whose new set would
// leave out an entry a live list holds while the entry's key still exists:
// the listing of the entry prefixes did not show a key that is there (a
// server that answered a LIST with a short or empty page, a directory the
// file backend could not read). The fold stops before it writes a list,
// retires a list or marks a line.
var ErrIncompleteListing = errors.New("the listing of the entry prefixes left out keys that exist")

// leftOut is the guard of DESIGN §6 for a complete fold: nothing a reader
// finds today may leave the lists while its key exists. It reads every live
// list but the one named ours (which holds exactly set), and for each entry
// a list holds that set leaves out, sends a HEAD of its key, unless gone
// says the caller deleted it (a collection's forgotten objects). Such
// entries are normal: their key was deleted (a collection forgot the
// object) or was never there (a journal line whose hour passed). One that
// exists means the listing was wrong: leftOut then returns an error wrapping
// ErrIncompleteListing naming the key and its prefix.
//
// A live list that is gone since the snapshot (a collection deleted it) is
// skipped; one that does not decode is reported and skipped, since what it
// held cannot be known and the fold retires it. A failed read is an error.
// A key a list holds that is not an entry key (format.ParseKey: a key with
// a ".." component, say, which may name no file) is malformed, not gone:
// it is not looked up, readers skip it, and the new set leaves it out; it
// is returned in malformed (sorted, unique) and warned of (issue 42: such a
// key used to stop the fold on the file backend's refusal to look it up).
// It returns how many entries the lists hold that set leaves out, the
// malformed keys not counted.
func leftOut(ctx context.Context, st *store.Store, sn *store.Snapshot, ours string, set []string, gone func(string) bool, w *warner) (n int, malformed []string, err error) {
	g := &guard{ctx: ctx, st: st, set: set, gone: gone, w: w, seen: map[string]bool{}}
	for _, l := range sn.LiveLists() {
		if l.Name != ours {
			g.lists = append(g.lists, l)
		}
	}
	if err := forEach(ctx, len(g.lists), g.readList); err != nil {
		return 0, nil, err
	}
	if err := g.lookUp(); err != nil {
		return 0, nil, err
	}
	return len(g.out), sortedUnique(g.malformed), nil
}

// guard is leftOut as it goes, each field set by the step named.
type guard struct {
	ctx   context.Context
	st    *store.Store
	set   []string // the new complete set, sorted
	gone  func(string) bool
	w     *warner
	lists []store.ListInfo // the live lists read: all but the fold's own
	// readList, under mu (its workers run in parallel): the entries the
	// lists hold that set leaves out, each once (seen), in the order
	// found, and the keys they hold that are not entry keys.
	mu        sync.Mutex
	out       []string
	seen      map[string]bool
	malformed []string
}

// readList reads live list i and adds the entries it holds that the set
// leaves out to out, and its keys that are not entry keys to malformed
// (warned of). A list gone since the snapshot holds nothing; one that does
// not decode is warned of and skipped (the fold retires it).
func (g *guard) readList(ctx context.Context, i int) error {
	name := g.lists[i].Name
	data, err := g.st.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read live list %s: %w", name, err)
	}
	var mine, bad []string
	j := 0
	_, derr := format.DecodeEntryList(data, func(key []byte) error {
		for j < len(g.set) && g.set[j] < string(key) {
			j++
		}
		if j == len(g.set) || g.set[j] != string(key) {
			if _, err := format.ParseKey(string(key)); err != nil {
				bad = append(bad, string(key))
			} else {
				mine = append(mine, string(key))
			}
		}
		return nil
	})
	if derr != nil {
		g.w.warn("live list %s does not decode (%v): what it held cannot be checked; the fold retires it", name, derr)
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.malformed = append(g.malformed, bad...)
	for _, k := range bad {
		g.w.warn("live list %s holds the malformed key %s (not an entry key): left out of the new list", name, quoteText(k, 120))
	}
	for _, k := range mine {
		if !g.seen[k] {
			g.seen[k] = true
			g.out = append(g.out, k)
		}
	}
	return nil
}

// lookUp sends a HEAD of every entry left out but those gone names, until
// one finds its key: then the listing was wrong, and it returns an error
// wrapping ErrIncompleteListing naming the key and its prefix.
func (g *guard) lookUp() error {
	var check []string
	for _, k := range g.out {
		if g.gone == nil || !g.gone(k) {
			check = append(check, k)
		}
	}
	var found atomic.Pointer[string]
	err := forEach(g.ctx, len(check), func(ctx context.Context, i int) error {
		if found.Load() != nil {
			return nil
		}
		ok, err := g.st.Exists(ctx, check[i])
		if err != nil {
			return fmt.Errorf("look up %s, which a live list holds and the listing did not show: %w", check[i], err)
		}
		if ok {
			found.CompareAndSwap(nil, &check[i])
		}
		return nil
	})
	if err != nil {
		return err
	}
	if k := found.Load(); k != nil {
		prefix := *k
		if e, err := format.ParseKey(*k); err == nil {
			prefix = format.Entry{Kind: e.Kind, Object: e.Object}.Key()
		}
		return fmt.Errorf("%w: %s holds %s, which exists, but listing %s did not show it; nothing was written, retired or marked (run the fold again; if it persists, the server's listing is wrong)",
			ErrIncompleteListing, listHolding(g.lists), *k, prefix)
	}
	return nil
}

// listHolding names the live lists read, for an error.
func listHolding(lists []store.ListInfo) string {
	if len(lists) == 1 {
		return "live list " + lists[0].Name
	}
	return fmt.Sprintf("one of %d live lists", len(lists))
}

// journalOnlyGone looks up (HEAD) every journal key the listing of the
// entry prefixes did not show, but those gone reports the caller deleted
// (a collection's forgotten objects). One that exists means the listing
// left it out (a page cut short, an empty page): it returns an error
// wrapping ErrIncompleteListing, and the fold writes nothing. Normally
// there is none to look up: a writer writes its key before its line.
func journalOnlyGone(ctx context.Context, st *store.Store, keys []string, gone func(string) bool) error {
	var check []string
	for _, k := range keys {
		if gone == nil || !gone(k) {
			check = append(check, k)
		}
	}
	there, _, err := existing(ctx, st, check)
	if err != nil {
		return fmt.Errorf("look up journal keys the listing did not show: %w", err)
	}
	if len(there) == 0 {
		return nil
	}
	prefix := there[0]
	if e, err := format.ParseKey(prefix); err == nil {
		prefix = format.Entry{Kind: e.Kind, Object: e.Object}.Key()
	}
	return fmt.Errorf("%w: the journal names %s, which exists, but listing %s did not show it%s; nothing was written, retired or marked (run the fold again; if it persists, the server's listing is wrong)",
		ErrIncompleteListing, there[0], prefix, more(len(there)-1))
}
