package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/lib/english"
	"github.com/oxyfs/oxyfs/internal/lib/par"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

func init() {
	register(&command{
		name: "watch",
		args: "STORE [--interval D] [--kinds sig,seal,…] [--initial] [--json]",
		summary: "follow a store: one line per entry added (+ PATH), replaced (~ PATH: a signature written again) or removed (- PATH) as each refresh finds it, flushed per line; " +
			"--json: one object a line (op, path, key, kind; a signature's signer, size and time). A quiet poll of a folded store costs what a quiet refresh costs",
		run: runWatch,
	})
}

// watchGets is the most GETs a poll sends at once for the size and time
// of the signatures it reports (or must check).
const watchGets = 8

// keyTimeSlack is how far before the previous poll began a key's own time
// may be and still count as written since: the store's clock as this host
// reads it (store.StoreNowMs, from its answers' Date, whole seconds) and a
// key's Last-Modified (whole seconds on most servers) each round.
const keyTimeSlack = 5 * time.Second

// minWatchInterval is the shortest --interval watch takes.
const minWatchInterval = 100 * time.Millisecond

func runWatch(ctx context.Context, e *env, args []string) error {
	e.common.registerJSON(e.flags)
	interval := e.flags.Duration("interval", DefaultRefreshInterval, "poll the store this often (a refresh: on a folded store that did not change, 2 GETs and no LIST)")
	kindsArg := e.flags.String("kinds", "", "only entries of these kinds, comma-separated: "+strings.Join(kindNames(), ","))
	initial := e.flags.Bool("initial", false, "print every existing entry as added first")
	pos, err := e.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if *interval < minWatchInterval {
		// A poll is a refresh (2 GETs on a quiet folded store): 1 ns sent
		// some 15,000 GETs a second.
		return usagef("--interval %v: must be at least %v (each poll is a refresh of the store)", *interval, minWatchInterval)
	}
	kinds, err := parseKinds(*kindsArg)
	if err != nil {
		return usagef("--kinds: %v", err)
	}
	ignoreSIGPIPE() // a closed pipe is an EPIPE to end on, not a signal
	ix, err := e.openReader(ctx, pos[0], false)
	if err != nil {
		return quietIfDone(ctx, err)
	}
	defer ix.Close()
	defer ix.Store().Close()
	ix.WatchRefreshes()
	w := &watcher{e: e, ix: ix, st: ix.Store(), kinds: kinds, out: rowWriter{text: e.stdout, raw: e.rawStdout, json: e.common.json}}
	err = w.run(ctx, *interval, *initial)
	if errors.Is(err, syscall.EPIPE) || ctx.Err() != nil {
		return nil // the reader went away, or SIGINT/SIGTERM: done
	}
	return err
}

func quietIfDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func kindNames() []string {
	var names []string
	for _, k := range format.Kinds {
		names = append(names, k.String())
	}
	return names
}

// parseKinds reads --kinds: kind names, comma-separated ("" is every kind).
func parseKinds(s string) ([]format.Kind, error) {
	if s == "" {
		return nil, nil
	}
	var kinds []format.Kind
	for _, name := range strings.Split(s, ",") {
		i := slices.IndexFunc(format.Kinds[:], func(k format.Kind) bool { return k.String() == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("no kind %q: want %s", termsafe.Value(name), strings.Join(kindNames(), ", "))
		}
		if k := format.Kinds[i]; !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// watcher follows one store. A state is what one poll saw: a folded
// view (held by the index, at no memory of ours), or, on a store that is
// not folded, the listing of its per-object prefixes (sorted, with each
// key's size and time). A poll compares the state it reads with the last
// one reported; a poll that fails reports nothing and keeps that state, so
// the next poll that succeeds reports everything since.
type watcher struct {
	e     *env
	ix    *index.Index
	st    *store.Store
	kinds []format.Kind
	out   rowWriter
	prev  watchState
	// pending is what the refreshes since prev showed of the signatures
	// replaced (index.TakeRefreshChanges), kept across failed polls.
	pending       pendingChanges
	saidMalformed bool // the listing's skipped keys were reported
	// times are the signatures' own times this watch read (a GET's
	// Last-Modified), at most maxWatchTimes, then started over: a
	// signature to check whose time is the one read before was not
	// written again.
	times map[string]time.Time
}

// maxWatchTimes bounds watcher.times (~150 B each).
const maxWatchTimes = 1 << 16

// remember notes key's own time as read.
func (w *watcher) remember(key string, mod time.Time) {
	if mod.IsZero() {
		return
	}
	if w.times == nil || len(w.times) >= maxWatchTimes {
		w.times = make(map[string]time.Time)
	}
	w.times[key] = mod
}

type watchState struct {
	mark  index.ViewMark
	list  []listed // when the view is not folded
	begun time.Time
}

// listed is one key of a listing, with what the listing said of it.
type listed struct {
	key  string
	size int64
	mod  time.Time
	md5  []byte // the listing's, when it gives one (store.ListItem.MD5)
}

type pendingChanges struct {
	sure, unsure map[string]bool
	all          bool
}

func (p *pendingChanges) add(c index.RefreshChanges) {
	if p.sure == nil {
		p.sure, p.unsure = map[string]bool{}, map[string]bool{}
	}
	for _, k := range c.Replaced {
		p.sure[k] = true
	}
	for _, k := range c.Unsure {
		p.unsure[k] = true
	}
	p.all = p.all || c.All
}

func (p *pendingChanges) empty() bool { return len(p.sure) == 0 && len(p.unsure) == 0 && !p.all }

func (w *watcher) run(ctx context.Context, interval time.Duration, initial bool) error {
	var err error
	if w.prev, err = w.read(ctx); err != nil {
		return err
	}
	if initial {
		if err := w.report(ctx, watchState{}, w.prev); err != nil {
			return err
		}
	}
	w.ix.TakeRefreshChanges() // what Load saw is the starting state
	lookCtx, stopLooking := context.WithCancel(ctx)
	defer stopLooking()
	gone := readerGone(lookCtx, w.e.rawStdout) // `| head -1` has its line
	backoff, failing := time.Duration(0), false
	for {
		wait := interval
		if failing {
			wait = backoff
		}
		select {
		case <-ctx.Done():
			return nil
		case <-gone:
			return syscall.EPIPE
		case <-time.After(wait):
		}
		err := w.poll(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, syscall.EPIPE):
			return err
		case err != nil:
			if !failing {
				failing, backoff = true, min(time.Second, interval)
				fmt.Fprintf(w.e.stderr, "oxyfs watch: %v; retrying with backoff (from %v, up to every %v): the first poll that succeeds reports everything that changed meanwhile\n", err, backoff, interval)
			} else {
				backoff = min(2*backoff, interval)
			}
		case failing:
			fmt.Fprintf(w.e.stderr, "oxyfs watch: %s answers again; what changed meanwhile is reported\n", w.st.URL())
			failing = false
		}
	}
}

// storeNow is the store's time as this host reads it (its answers'
// Date), or this host's when the store gives none.
func (w *watcher) storeNow() time.Time {
	if ms, ok := w.st.StoreNowMs(); ok {
		return time.UnixMilli(ms)
	}
	return time.Now()
}

// read reads the current state: the index's view, and when it is not
// folded the listing of the per-object prefixes (one LIST a page).
func (w *watcher) read(ctx context.Context) (watchState, error) {
	s := watchState{begun: w.storeNow()}
	var err error
	if s.mark, err = w.ix.Mark(ctx); err != nil {
		return s, err
	}
	if s.mark.Folded() {
		return s, nil
	}
	l := index.ListingKeys(ctx, w.st, w.kinds)
	defer l.Close()
	for {
		k, ok := l.Next()
		if !ok {
			break
		}
		it := l.Item()
		s.list = append(s.list, listed{key: string(k), size: it.Size, mod: it.ModTime, md5: it.MD5})
	}
	if err := l.Err(); err != nil {
		return s, err
	}
	if n, first := l.Malformed(); n > 0 && !w.saidMalformed {
		w.saidMalformed = true
		fmt.Fprintf(w.e.stderr, "oxyfs watch: warning: skipped %s under the entry prefixes that are not entry keys (first: %s); oxyfs check names them\n", english.Count(n, "key", "keys"), termsafe.Quote(first))
	}
	return s, nil
}

// poll refreshes the index and reports what changed since the last state
// reported. A quiet poll of a folded store is the refresh alone.
func (w *watcher) poll(ctx context.Context) error {
	begun := w.storeNow()
	if err := w.ix.Refresh(ctx); err != nil {
		return err
	}
	w.pending.add(w.ix.TakeRefreshChanges())
	mark, err := w.ix.Mark(ctx)
	if err != nil {
		return err
	}
	if mark.Same(w.prev.mark) && w.prev.mark.Folded() && w.pending.empty() {
		return nil
	}
	cur, err := w.read(ctx)
	if err != nil {
		return err
	}
	cur.begun = begun
	if err := w.report(ctx, w.prev, cur); err != nil {
		return err
	}
	w.prev, w.pending = cur, pendingChanges{}
	return nil
}

// stateKeys streams a state's keys, keeping the listing's item of the
// key it returned last (cur).
type stateKeys struct {
	index.KeyStream
	list []listed
	i    int
	buf  []byte
}

func (s *stateKeys) Next() ([]byte, bool) {
	if s.KeyStream != nil {
		return s.KeyStream.Next()
	}
	if s.i >= len(s.list) {
		return nil, false
	}
	s.buf = append(s.buf[:0], s.list[s.i].key...)
	s.i++
	return s.buf, true
}

func (s *stateKeys) Err() error {
	if s.KeyStream != nil {
		return s.KeyStream.Err()
	}
	return nil
}

func (s *stateKeys) Close() {
	if s.KeyStream != nil {
		s.KeyStream.Close()
	}
}

// cur is the listing's item of the key returned last (ok false for a
// folded view's keys: no size or time known).
func (s *stateKeys) cur() (listed, bool) {
	if s.KeyStream != nil || s.i == 0 {
		return listed{}, false
	}
	return s.list[s.i-1], true
}

// keysOf streams a state's keys (none for the zero state, before --initial).
func (w *watcher) keysOf(s watchState) *stateKeys {
	if s.mark.Folded() {
		return &stateKeys{KeyStream: s.mark.Keys(w.kinds...)}
	}
	return &stateKeys{list: s.list}
}

// change is one row to report, with what is known of its key.
type change struct {
	row  diffRow
	meta listed // the key's size and time, when known (mod not zero)
	// check: a signature whose replacement only its own time can tell
	// (after: written at or after it); the row is dropped if not.
	check bool
	after time.Time
}

// report prints what changed from prev to cur, in key order.
func (w *watcher) report(ctx context.Context, prev, cur watchState) error {
	old, new := w.keysOf(prev), w.keysOf(cur)
	defer old.Close()
	defer new.Close()
	since := prev.begun.Add(-keyTimeSlack)
	// When the refreshes could not tell which signatures were replaced, or
	// either state is a listing, a key's own time tells: the listing's,
	// or one listing of sig/ (a LIST a page, only on such a poll) when
	// cur is a folded view.
	var sigTimes map[string]listed
	needTimes := prev.begun != (time.Time{}) && cur.mark.Folded() && (w.pending.all || !prev.mark.Folded())
	if needTimes && w.wants(format.KindSig) {
		sigTimes = map[string]listed{}
		l := index.ListingKeys(ctx, w.st, []format.Kind{format.KindSig})
		for {
			k, ok := l.Next()
			if !ok {
				break
			}
			it := l.Item()
			sigTimes[string(k)] = listed{key: it.Key, size: it.Size, mod: it.ModTime, md5: it.MD5}
		}
		l.Close()
		if err := l.Err(); err != nil {
			return err
		}
	}
	var rows []change
	sigPrefix := []byte(format.KindSig.Prefix())
	err := index.DiffKeys(old, new, prev.begun != (time.Time{}), func(op index.DiffOp, k []byte) error {
		switch op {
		case index.DiffAdded:
			m, _ := new.cur()
			rows = append(rows, change{row: newDiffRow("add", string(k)), meta: m})
			return nil
		case index.DiffRemoved:
			rows = append(rows, change{row: newDiffRow("remove", string(k))})
			return nil
		}
		if !bytes.HasPrefix(k, sigPrefix) {
			return nil // only a signature's bytes can change under one key
		}
		// Every key both states hold comes here: no allocation but for
		// one reported (m[string(k)] converts without one).
		om, oOK := old.cur()
		nm, nOK := new.cur()
		if !nOK && sigTimes != nil {
			nm, nOK = sigTimes[string(k)]
		}
		c := change{meta: nm}
		switch {
		case w.pending.sure[string(k)]:
		case oOK && nOK:
			// A time of whole seconds (S3) hides a re-sign within the
			// second of the last version; its bytes' MD5 tells.
			if om.size == nm.size && om.mod.Equal(nm.mod) && bytes.Equal(om.md5, nm.md5) {
				return nil
			}
		case nOK:
			if nm.mod.Before(since) {
				return nil
			}
		case w.pending.unsure[string(k)] || w.pending.all:
			c.check, c.after = true, since
		default:
			return nil
		}
		c.row = newDiffRow("replace", string(k))
		rows = append(rows, c)
		return nil
	})
	if err != nil {
		return err
	}
	if err := w.fetch(ctx, rows); err != nil {
		return err
	}
	for _, c := range rows {
		if c.row.Op == "remove" {
			delete(w.times, c.row.Key)
		}
		if c.check {
			t, ok := w.times[c.row.Key]
			w.remember(c.row.Key, c.meta.mod)
			if ok && t.Equal(c.meta.mod) || c.meta.mod.Before(c.after) {
				continue // not written since
			}
		}
		if c.row.Kind == format.KindSig.String() && c.row.Op != "remove" {
			w.remember(c.row.Key, c.meta.mod)
		}
		if c.row.Kind == format.KindSig.String() && c.row.Op != "remove" && c.meta.key != "" {
			size := c.meta.size
			c.row.Size = &size
			if !c.meta.mod.IsZero() {
				c.row.Time = c.meta.mod.UTC().Format(time.RFC3339Nano)
			}
		}
		if err := w.out.write(c.row); err != nil {
			return err
		}
	}
	return nil
}

func (w *watcher) wants(k format.Kind) bool { return len(w.kinds) == 0 || slices.Contains(w.kinds, k) }

// fetch reads the size and time of the signatures among rows that need
// them and have none: those to check, and with --json every signature
// added or replaced. One GET each (the key's own bytes: a signature's size
// is its length, and its time the answer's Last-Modified), watchGets at
// once.
func (w *watcher) fetch(ctx context.Context, rows []change) error {
	var need []int
	for i, c := range rows {
		if c.row.Kind == format.KindSig.String() && c.row.Op != "remove" && c.meta.key == "" && (c.check || w.out.json) {
			need = append(need, i)
		}
	}
	return par.ForEach(ctx, len(need), watchGets, func(ctx context.Context, i int) error {
		c := &rows[need[i]]
		data, mod, err := w.st.GetAdmitted(ctx, c.row.Key, nil)
		if errors.Is(err, store.ErrNotFound) {
			// Gone since the refresh: the next poll reports it removed;
			// an add is said (without size), a replacement not.
			if c.check {
				c.after = time.Now().Add(time.Hour)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("read signature %q: %w", termsafe.Value(c.row.Key), err)
		}
		c.meta = listed{key: c.row.Key, size: int64(len(data)), mod: mod}
		if mod.IsZero() && c.check {
			c.check = false // no time to tell by: said replaced, never missed
		}
		return nil
	})
}
