package index

import "context"

// flight is one read shared by every caller that asks for the same key
// while it runs (the signature cache's GETs, the prefix cache's listings).
// It runs on a context of its own: detached from every caller's
// (context.WithoutCancel keeps their values, not their cancellation), so
// one caller who goes away (an HTTP client of `oxyfs serve` that
// disconnects) does not fail the others. It is canceled only when every
// waiter has gone, or when the index closes; each request under it is still
// bounded by the store's own per-request timeout. A waiter returns when the
// flight ends or its own context is done, whichever comes first.
//
// waiters is guarded by the owner's mutex (sigCache.mu, prefixCache.mu).
type flight struct {
	ctx     context.Context
	cancel  context.CancelFunc
	stop    func() bool // unlinks ctx from the index's close
	done    chan struct{}
	waiters int
}

// newFlight makes a flight for a read first asked for under ctx. closing is
// done when the index closes; a flight started after that is not linked to
// it (reads keep working after Close).
func newFlight(ctx, closing context.Context) *flight {
	f := &flight{done: make(chan struct{}), stop: func() bool { return false }}
	f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if closing.Err() == nil {
		f.stop = context.AfterFunc(closing, f.cancel)
	}
	return f
}

// finish ends the flight: its waiters see done closed.
func (f *flight) finish() {
	f.stop()
	f.cancel()
	close(f.done)
}

// finished reports whether finish ran.
func (f *flight) finished() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// leave is a waiter going away before the flight ended; the owner's mutex
// is held. It reports whether that was the last waiter, in which case the
// flight is canceled and the owner forgets it.
func (f *flight) leave() bool {
	f.waiters--
	if f.waiters > 0 || f.finished() {
		return false
	}
	f.cancel()
	return true
}
