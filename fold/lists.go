package fold

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/oxyfs/oxyfs/internal/par"
	"github.com/oxyfs/oxyfs/store"
)

// Errors a fold reports.
var (
	// ErrDirectoryLayout: a repository's own directory keeps no journal or
	// lists (spec §13.7 "Older writers"), so nothing there is folded.
	ErrDirectoryLayout = errors.New("a store with the directory layout keeps no journal or entry lists")
	// ErrPartialFold: Append's journal update landed, but the partial fold it
	// then ran failed. The lines are in the journal; the next update tries
	// the partial fold again. A caller may treat the append as done.
	ErrPartialFold = errors.New("journal lines added, but the partial fold failed")
	// errListRetired: the list a fold computed has a name the retired record
	// holds (the same set of keys was listed before, and a later fold retired
	// it). A collection may delete it within the hour, so the fold may not
	// rely on it: it retires and marks nothing, and says so.
	errListRetired = errors.New("list is retired")
)

// checkLayout refuses a store that keeps no journal.
func checkLayout(st *store.Store) error {
	if st.Layout() == store.LayoutDirectory {
		return ErrDirectoryLayout
	}
	return nil
}

// ensureList makes sure the entry list name holds data, writing it
// create-only (spec §13.7 "Entry lists": written once). A list is named by
// the SHA-256 of its text, so finding it there already is as good as writing
// it (existed is then true), unless the retired record names it: then a
// collection may delete it within the hour, and ensureList returns
// errListRetired. A list that vanished between the failed create and the
// look (a collection deleted it and dropped its retired line) is written
// again.
func ensureList(ctx context.Context, st *store.Store, name string, data []byte) (existed bool, err error) {
	for range store.MaxCASTries {
		err := st.PutIfAbsent(ctx, name, data)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return false, fmt.Errorf("write list %s: %w", name, err)
		}
		retired, err := isRetired(ctx, st, name)
		if err != nil {
			return true, fmt.Errorf("write list %s: %w", name, err)
		}
		if retired {
			return true, fmt.Errorf("write list %s: %w", name, errListRetired)
		}
		ok, err := st.Exists(ctx, name)
		if err != nil {
			return true, fmt.Errorf("write list %s: %w", name, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, fmt.Errorf("write list %s: %w", name, store.ErrTooManyTries)
}

// isRetired reads the retired record and reports whether it names key.
func isRetired(ctx context.Context, st *store.Store, key string) (bool, error) {
	data, _, err := st.ReadRecord(ctx, store.RetiredKey)
	if err != nil {
		return false, err
	}
	lines, _ := store.ParseRetired(data)
	for _, l := range lines {
		if l.Key == key {
			return true, nil
		}
	}
	return false, nil
}

// retire adds "<now> <name>" to the retired record for every name it does
// not hold yet, in one compare-and-swap update (spec §13.7 "Folding": a fold
// retires every list it read, and a collection deletes it an hour later).
// keep is the list the fold relies on: if the record names it, retire
// changes nothing and returns errListRetired.
func retire(ctx context.Context, st *store.Store, names []string, keep string) (tries int, err error) {
	res, err := st.UpdateRecord(ctx, store.RetiredKey, func(old []byte, _ bool) ([]byte, error) {
		rec := store.ParseRetiredRecord(old)
		have := make(map[string]bool, len(rec.Lines))
		for _, l := range rec.Lines {
			if !l.Bad() {
				have[l.Line.Key] = true
			}
		}
		if keep != "" && have[keep] {
			return nil, errListRetired
		}
		now := st.Clock().NowMs()
		n := len(rec.Lines)
		for _, name := range names {
			if !have[name] {
				have[name] = true
				rec.Add(store.RetiredLine{RetiredAt: now, Key: name})
			}
		}
		if len(rec.Lines) == n {
			return nil, store.ErrNoChange
		}
		return rec.Text(), nil
	})
	if err != nil {
		return res.Tries, fmt.Errorf("retire %v: %w", names, err)
	}
	return res.Tries, nil
}

// markJournal marks the lines of read (see markRead) folded at the store's
// now, in one compare-and-swap update of the journal that also drops folded
// lines past their hour, as every update does.
func markJournal(ctx context.Context, st *store.Store, read []store.JournalLine) (marked, dropped, tries int, err error) {
	res, err := st.UpdateRecord(ctx, store.JournalKey, func(old []byte, _ bool) ([]byte, error) {
		now := st.Clock().NowMs()
		cur := store.ParseJournalRecord(old)
		marked = markRead(cur.Lines, read, now)
		cur.Lines, dropped = dropExpired(cur.Lines, now)
		if marked == 0 && dropped == 0 {
			return nil, store.ErrNoChange
		}
		return cur.Text(), nil
	})
	if err != nil {
		return 0, 0, res.Tries, fmt.Errorf("mark journal lines folded: %w", err)
	}
	if !res.Wrote {
		marked, dropped = 0, 0
	}
	return marked, dropped, res.Tries, nil
}

// unfoldedKeys returns the keys of the unfolded lines, sorted and unique.
func unfoldedKeys(lines []store.JournalLine) []string {
	var keys []string
	for _, l := range lines {
		if !l.Folded() {
			keys = append(keys, l.Key)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// progress serializes calls of an Options.Progress function, which may be nil.
type progress struct {
	mu sync.Mutex
	fn func(done, total int64, phase string)
}

func (p *progress) report(done, total int64, phase string) {
	if p == nil || p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fn(done, total, phase)
}

// warner serializes calls of an Options.Warn function, which may be nil.
type warner struct {
	mu sync.Mutex
	fn func(string)
}

func (w *warner) warn(format string, args ...any) {
	if w == nil || w.fn == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fn(msg)
}

// workers is how many requests a fold, a collection or a check keeps in
// flight at once when it sends one per key (legacy copies, deletions, HEADs).
const workers = 16

// forEach calls fn for every i in [0, n) on up to workers goroutines
// (par.ForEach): after the first error no further call starts, the calls in
// flight finish (so their outcome is known), and that first error is
// returned.
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	return par.ForEach(ctx, n, workers, fn)
}

// listAttempts bounds how often a listing that failed because a key vanished
// under it is started again.
const listAttempts = 4

// readSnapshot is st.ReadSnapshot (which reads the retired record before the
// pack listing, so a list a collection deleted never looks live), read again
// if its listing failed because a key vanished while it ran.
func readSnapshot(ctx context.Context, st *store.Store) (*store.Snapshot, error) {
	var err error
	for range listAttempts {
		var sn *store.Snapshot
		sn, err = st.ReadSnapshot(ctx)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		return sn, err
	}
	return nil, err
}

// list walks a listing as st.List does. A listing that fails because a key
// vanished under it (ErrNotFound: a listing of a prefix with no key returns
// nothing, it does not fail) is started again from the beginning, after
// reset, up to listAttempts times.
func list(ctx context.Context, st *store.Store, prefix, delimiter string, reset func(), fn func(store.ListItem) error) error {
	var err error
	for range listAttempts {
		reset()
		err = st.List(ctx, prefix, delimiter, fn)
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return err
}
