package store

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// read sends an idempotent request (GET, HEAD, LIST): op is one attempt,
// counted once in count. An attempt that fails transiently (see transient)
// is sent again after a short jittered backoff, up to MaxReadTries attempts
// in all; each attempt is one request in the counters, and each one after
// the first is counted in Retries. The error is mapped (mapErr) and, if the
// last attempt failed transiently, wrapped in ErrUnavailable.
func (s *Store) read(ctx context.Context, count *atomic.Int64, op func(ctx context.Context) error) error {
	for try := 1; ; try++ {
		err := s.attempt(ctx, count, op)
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		if try >= MaxReadTries {
			return unavailable(s.url, try, err)
		}
		if err := sleep(ctx, retryDelay(try)); err != nil {
			return unavailable(s.url, try, err)
		}
		s.retries.Add(1)
	}
}

// sendOnce sends a request that is not repeated (PUT, DELETE, a conditional
// write): one attempt under the timeout, counted once in count (nil: op
// counts itself). Whether a write whose answer was lost landed is unknown,
// so it is the caller's to try again: UpdateRecord does, as a new round of
// compare-and-swap.
func (s *Store) sendOnce(ctx context.Context, count *atomic.Int64, op func(ctx context.Context) error) error {
	err := s.attempt(ctx, count, op)
	if transient(err) && ctx.Err() == nil {
		return unavailable(s.url, 1, err)
	}
	return err
}

// attempt sends one request under the store's per-request timeout, with
// the backend SDK's own retries off (Azure reads that from the context; the
// S3 and GCS clients are set up so when opened), so that one attempt is one
// request on the wire and the counters stay exact. It first takes one of
// the store's MaxRequests slots, waiting no longer than ctx allows (a
// canceled caller gets ctx's error and sends nothing, so nothing is
// counted); the slot is held until op returns, body read included.
func (s *Store) attempt(ctx context.Context, count *atomic.Int64, op func(ctx context.Context) error) (err error) {
	if s.inFlight != nil {
		select {
		case s.inFlight <- struct{}{}: // a free slot: taken whatever ctx says, as before the cap
		default:
			select {
			case s.inFlight <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		defer func() { <-s.inFlight }()
	}
	if count != nil && ctx.Value(probing{}) != nil {
		count = s.n.same(count, &s.probeN) // the conditions probe's (probe.go)
	}
	if count != nil {
		count.Add(1)
	}
	if s.observe != nil {
		began := time.Now()
		defer func() { s.observe(s.n.kindOf(count), time.Since(began), err) }()
	}
	rctx := s.drv.requestContext(ctx)
	if s.timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(rctx, s.timeout)
		defer cancel()
	}
	if err = op(rctx); err != nil {
		err = s.drv.mapErr(err)
	}
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		err = &timeoutError{d: s.timeout, err: err}
	}
	return err
}

// retryDelay is the wait before attempt try+1 of a read: 100 ms doubled
// per attempt, with jitter over its upper half.
func retryDelay(try int) time.Duration {
	d := retryBase << (try - 1)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// retryBase is the first wait of a retried read.
const retryBase = 100 * time.Millisecond

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retries is how many requests were sent again after a transient failure
// (each is also counted in Counts).
func (s *Store) Retries() int64 { return s.retries.Load() }
