package fold

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/oxyfs/oxyfs/internal/lib/par"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
)

// retire adds "<now> <name>" to the retired record for every name it does
// not hold yet, in one compare-and-swap update (spec §13.7 "Folding": a fold
// retires every list it read, and a collection deletes it an hour later).
// keep is the list the fold relies on: if the record names it, retire
// changes nothing and returns journal.ErrListRetired.
//
// after, when not 0, is a time the retirement must come after: the newest
// folded-at of the journal lines the fold read, for a retirement that
// leaves no list holding them (tooLate). Its lines are stamped after+1
// when the clock still reads after (the same millisecond) or up to
// maxRetireLead behind it, so a collection's cross-check (crosscheck.go:
// lines folded before the newest retirement) sees the order the steps
// really had; a retired-at later by that much only delays the list's
// deletion by as much.
func retire(ctx context.Context, st *store.Store, names []string, keep string, after int64) (tries int, err error) {
	res, err := st.UpdateRecord(ctx, format.RetiredKey, func(old []byte, _ bool) ([]byte, error) {
		rec := format.ParseRetiredRecord(old)
		have := make(map[string]bool, len(rec.Lines))
		for _, l := range rec.Lines {
			if !l.Bad() {
				have[l.Line.Key] = true
			}
		}
		if keep != "" && have[keep] {
			return nil, journal.ErrListRetired
		}
		now := retireStamp(st.Clock().NowMs(), after)
		n := len(rec.Lines)
		for _, name := range names {
			if !have[name] {
				have[name] = true
				rec.Add(format.RetiredLine{RetiredAt: now, Key: name})
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

// maxRetireLead bounds how far retire stamps a retirement ahead of the
// clock to come after the lines it must follow: a folded-at further ahead
// is another host's skewed clock, which the cross-check's hour bounds.
const maxRetireLead = 1000 // ms

// retireStamp is the retired-at of a retirement at now that must come after
// the time after (0: none).
func retireStamp(now, after int64) int64 {
	if after != 0 && after >= now && after-now < maxRetireLead {
		return after + 1
	}
	return now
}

// progress serializes calls of an Options.Progress function, which may be nil.
type progress struct {
	mu sync.Mutex                            // held while fn runs: calls never overlap
	fn func(done, total int64, phase string) // read-only after begin
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
	mu sync.Mutex   // held while fn runs: calls never overlap
	fn func(string) // read-only after begin
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
