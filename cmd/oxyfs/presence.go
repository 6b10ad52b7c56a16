package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// The store-presence check (issue 24): mount, serve, ls, cat, fold and gc
// refuse a location that holds nothing of an oxy store — an empty bucket,
// a bucket of photos, a prefix= or path typo, /etc — instead of showing an
// empty tree; --create starts a new, empty store there. check exits 1 on
// such a location and says why. An open that found a journal or an entry
// list knows it is a store and sends nothing more; otherwise one LIST of
// the root decides (store.Presence).

// registerCreate adds --create to a command that opens a store.
func (e *env) registerCreate() {
	e.flags.BoolVar(&e.common.create, "create", false, "start a new, empty store at STORE if it holds none (an empty journal is written; a file:// directory is made if missing; ls, cat, serve and a read-only mount only show it empty); without it a location holding nothing of an oxy store (an empty bucket, a wrong bucket, prefix= or path, a directory of something else) is refused")
}

// knownStore: what an open read shows a store is there (a journal line, an
// entry list), so no request need ask.
func knownStore(s index.Status) bool {
	return s.JournalLines > 0 || len(s.LiveLists) > 0 || len(s.RetiredLists) > 0
}

// requireStore refuses a location holding nothing of an oxy store, unless
// known (the open found one): one LIST of its root, counted. With --create
// it starts the store instead: an empty journal, written only if none is
// there (one PUT; a writer that made it first wins, and a read-only store
// is shown empty and left as it is), so the location holds a store from
// then on, whether or not anything is written to it.
func (e *env) requireStore(ctx context.Context, st *store.Store, known bool) error {
	if known {
		return nil
	}
	p, err := st.Presence(ctx)
	if err != nil {
		return err
	}
	if p.Held || p.Unsure {
		return nil
	}
	if e.common.create {
		err := st.PutIfAbsent(ctx, format.JournalKey, nil)
		if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrReadOnly) {
			return fmt.Errorf("start a new store at %s: %w", st.URL(), err)
		}
		return nil
	}
	return errNotAStore(st.URL(), p)
}

// errNotAStore says what is at a location that holds no store, and what to
// do about it.
func errNotAStore(url string, p store.Presence) error {
	if p.Empty {
		return fmt.Errorf("%s holds nothing: no oxy store is there (an empty bucket, or a wrong bucket, prefix= or path?); pass --create to start a new, empty store there", url)
	}
	names := make([]string, len(p.Names))
	for i, n := range p.Names {
		names[i] = termsafe.Quote(n)
	}
	return fmt.Errorf("%s holds no oxy store: its root holds %s…, but no journal (%s), entry list (%s*) or entry prefix (sig/, seal/, …); check the bucket, prefix= or path, or pass --create to start a new store there",
		url, strings.Join(names, ", "), format.JournalKey, format.PackPrefix)
}

// openedIndex checks a loaded index's store: refused if the location holds
// no store (requireStore); with browsing, an unfolded store says once what
// browsing it costs and how to fold it. logf, when not nil, is the log of a
// mount or serve (the notice is then one event of it, in its format and
// where it goes: a log file, syslog once detached); nil: stderr.
func (e *env) openedIndex(ctx context.Context, ix *index.Index, browsing bool, logf func(format string, args ...any)) error {
	s := ix.Status()
	if err := e.requireStore(ctx, ix.Store(), knownStore(s)); err != nil {
		return err
	}
	if browsing {
		e.sayUnfolded(ix.Store(), s, logf)
	}
	return nil
}

// sayUnfolded tells, once, that a bucket store not folded is browsed by
// listing prefixes: a LIST for every directory listed and every object
// looked up, so a find over the tree sends about one per object. A fold
// writes the complete list that a reader answers from, with no LIST.
func (e *env) sayUnfolded(st *store.Store, s index.Status, logf func(format string, args ...any)) {
	if st.Layout() != store.LayoutBucket || s.Folded {
		return
	}
	if logf == nil {
		logf = func(format string, args ...any) { fmt.Fprintf(e.stderr, format+"\n", args...) }
	}
	logf("oxyfs: %s is not folded: browsing it lists prefixes, a LIST for every directory listed and every object looked up (a find over the tree sends about one per object); `oxyfs fold %s` folds it once, and then browsing sends no LIST", st.URL(), st.URL())
}
