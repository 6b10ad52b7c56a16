package fold

import (
	"context"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/journal"
)

// run is what a complete fold and a collection both carry through their
// steps: the store, whether it is a dry run, and the caller's warnings and
// progress, each serialized.
type run struct {
	ctx   context.Context
	st    *store.Store
	dry   bool
	w     *warner
	prog  *progress
	start store.Counts // the store's requests when the run began
}

// begin opens a fold or a collection. It refuses a store that keeps no
// journal (journal.ErrDirectoryLayout), and a read-only one unless dry. A
// check that every fold and collection makes before it reads anything goes
// here, once for both. The run is returned even with an error, so that the
// caller reports the requests sent.
func begin(ctx context.Context, st *store.Store, dry bool, warn func(string), progressFn func(done, total int64, phase string)) (*run, error) {
	r := &run{ctx: ctx, st: st, dry: dry, w: &warner{fn: warn}, prog: &progress{fn: progressFn}, start: st.Counts()}
	if err := journal.CheckLayout(st); err != nil {
		return r, err
	}
	if st.ReadOnly() && !dry {
		return r, store.ErrReadOnly
	}
	if err := checkClock(ctx, st, dry); err != nil {
		return r, err
	}
	return r, nil
}

// requests returns the requests sent through the store since the run began
// (by anyone).
func (r *run) requests() store.Counts { return r.st.Counts().Sub(r.start) }
