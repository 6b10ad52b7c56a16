package fold

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// A fold whose set is one a retired list holds.
//
// Lists are named by their content, so a fold that computes a set folded
// before (and retired since) finds its list's name in the retired record.
// That happens when entries leave the store: a collection forgot an object
// added after that list was written, or a journal key with no object passed
// its hour. The retired list cannot just be relied on: a collection deletes
// it once it is over format.GracePeriod old. Nor can the fold write it
// afresh (it exists) or keep the lists it read (they hold the entries that
// left, so readers would show entries whose keys are gone).
//
// Within reviveWindow of its retirement no collection may delete it (a
// collection deletes only keys retired over the hour ago; the margin is for
// the clocks of other hosts), so the fold revives it: one compare-and-swap
// update of the retired record drops its lines and retires every other live
// list, so readers go from the old lists to this one in one step. Past the
// window the fold leaves it alone (Deferred) until a collection has deleted
// it; if the lists it read hold entries whose keys are gone, it still
// retires them, leaving the store not folded (readers list the per-object
// prefixes: slower, and exact) rather than showing those entries.

// reviveWindow is how soon after its retirement a fold may revive a list.
const reviveWindow = format.GracePeriod - 10*time.Minute

// revivable reports whether a list retired at retiredAt is still within
// reviveWindow at now, so a fold may revive it.
func revivable(retiredAt, now int64) bool {
	return now-retiredAt < reviveWindow.Milliseconds()
}

// errReviveTooLate: the list's retirement is older than reviveWindow.
var errReviveTooLate = errors.New("retired too long ago to revive")

// retiredAt returns when the snapshot's retired record last retired key.
func retiredAt(sn *store.Snapshot, key string) (int64, bool) {
	var at int64
	found := false
	for _, r := range sn.Retired {
		if r.Key == key && (!found || r.RetiredAt > at) {
			at, found = r.RetiredAt, true
		}
	}
	return at, found
}

// revive makes the retired list name live again in place of others: it
// makes sure name holds data (written if a collection deleted it, rewritten
// if corrupt), then in one compare-and-swap update of the retired record
// drops every line naming it and retires others. If the record's latest
// line for name is by then older than reviveWindow, nothing changes and the
// error wraps errReviveTooLate.
func revive(ctx context.Context, st *store.Store, name string, data []byte, others []string, rep *Report, w *warner) (tries int, err error) {
	got, err := st.Get(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if err := st.PutIfAbsent(ctx, name, data); err != nil && !errors.Is(err, store.ErrConflict) {
			return 0, fmt.Errorf("revive list %s: %w", name, err)
		}
		rep.List.Written = true
	case err != nil:
		return 0, fmt.Errorf("revive list %s: %w", name, err)
	case format.VerifyEntryList(name, got) != nil:
		w.warn("retired list %s is corrupt: rewriting it before reviving it", name)
		if err := st.Put(ctx, name, data); err != nil {
			return 0, fmt.Errorf("repair list %s: %w", name, err)
		}
		rep.List.Repaired = true
	}
	res, err := st.UpdateRecord(ctx, format.RetiredKey, func(old []byte, _ bool) ([]byte, error) {
		rec := format.ParseRetiredRecord(old)
		now := st.Clock().NowMs()
		have := make(map[string]bool, len(rec.Lines))
		kept := format.RetiredRecord{Lines: rec.Lines[:0:0]}
		for _, l := range rec.Lines {
			if !l.Bad() && l.Line.Key == name {
				if !revivable(l.Line.RetiredAt, now) {
					return nil, errReviveTooLate
				}
				continue
			}
			if !l.Bad() {
				have[l.Line.Key] = true
			}
			kept.Lines = append(kept.Lines, l)
		}
		for _, o := range others {
			if !have[o] {
				have[o] = true
				kept.Add(format.RetiredLine{RetiredAt: now, Key: o})
			}
		}
		return kept.Text(), nil
	})
	if err != nil {
		return res.Tries, fmt.Errorf("revive list %s, retire %v: %w", name, others, err)
	}
	// A collection that deleted the list and dropped its line before the
	// update above leaves nothing to revive: write it again, as journal.EnsureList
	// does for a list that vanished.
	ok, err := st.Exists(ctx, name)
	if err == nil && !ok {
		if err = st.PutIfAbsent(ctx, name, data); errors.Is(err, store.ErrConflict) {
			err = nil
		}
		rep.List.Written = err == nil
	}
	if err != nil {
		return res.Tries, fmt.Errorf("revive list %s: %w", name, err)
	}
	return res.Tries, nil
}
