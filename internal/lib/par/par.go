// Package par is oxyfs's one way to run work in parallel: ForEach, over
// golang.org/x/sync/errgroup with a limit.
//
// # Error policy
//
// The first error stops the rest: no call starts after it, the calls
// already running finish (so the outcome of every request sent is known,
// as a fold or a collection needs before it writes or deletes), and ForEach
// returns that first error as fn returned it, so fn wraps its error with
// the operation and the key ("read entry list %q: %w"). A caller that must
// try every item whatever happens to the others (a write batch journals
// the keys that landed) records its errors itself and returns nil from fn.
//
// # Requests in flight
//
// limit bounds the goroutines of one ForEach; the store's own cap
// (store.Options.MaxRequests) bounds the requests of all of them together.
package par

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// ForEach calls fn(ctx, i) for every i in [0, n) on up to limit goroutines
// (limit < 1: 1) and waits for the calls it started. It returns the first
// error a call returned; or, if ctx ended before every call started,
// ctx's error; or nil. fn gets ctx itself, not a context canceled by a
// sibling's error: a call already running is never cut short by another's
// failure.
func ForEach(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	g, stop := errgroup.WithContext(ctx)
	g.SetLimit(max(limit, 1))
	var skipped atomic.Bool
	for i := range n {
		if stop.Err() != nil {
			skipped.Store(true)
			break
		}
		g.Go(func() error {
			// g.Go may have waited for a slot while a sibling failed.
			if stop.Err() != nil {
				skipped.Store(true)
				return nil
			}
			return fn(ctx, i)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if skipped.Load() {
		return ctx.Err()
	}
	return nil
}
