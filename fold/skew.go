package fold

import (
	"context"

	"github.com/oxyfs/oxyfs/store"
)

// checkClock is the clock guard of a fold and of a collection (adr-0055
// D5: guards on the store's clock), run before either reads or writes
// anything else. Both stamp times (folded-at, retired-at) and compare them
// with "now" by the hour rules, and every reader's trust in unchanged
// records rests on each change lasting its hour (index: refreshSnapshot).
// The times are the store's (store.Store.Clock), but a host whose own clock
// is more than store.ClockMargin off it has a broken clock, and other
// writers on it (an older oxyfs, another tool) stamp that clock: the fold
// refuses, naming the skew (store.ErrClockSkew). A store that gives no time
// (no Date header) cannot be checked: the fold refuses too
// (store.ErrNoStoreClock), failing closed.
//
// It sends a request only on a store not heard from yet (one HEAD of the
// journal on S3, GCS and Azure; a file:// store's clock is probed without
// a counted request). A dry run writes nothing and is not checked.
func checkClock(ctx context.Context, st *store.Store, dryRun bool) error {
	if dryRun {
		return nil
	}
	return st.CheckClock(ctx)
}
