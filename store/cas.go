package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Version identifies one state of a record: what a compare-and-swap write
// compares against. The zero Version means "absent": a write with it is
// create-only.
type Version struct {
	Token  string // backend token: S3/Azure ETag, GCS generation, content hash for file and mem
	Exists bool
}

// ErrNoChange is what an update function returns to end UpdateRecord
// without writing.
var ErrNoChange = errors.New("no change")

// ReadRecord reads a record (journal, retired record) with its version.
// A missing record reads as empty with the zero Version.
func (s *Store) ReadRecord(ctx context.Context, key string) ([]byte, Version, error) {
	data, tok, err := s.readWithToken(ctx, key, nil)
	if errors.Is(err, ErrNotFound) {
		return nil, Version{}, nil
	}
	if err != nil {
		return nil, Version{}, fmt.Errorf("read record %q: %w", key, err)
	}
	return data, Version{Token: tok, Exists: true}, nil
}

// WriteRecord writes a record only if it still is at version v (create-only
// when v is the zero Version). A lost race returns ErrConflict.
func (s *Store) WriteRecord(ctx context.Context, key string, data []byte, v Version) error {
	if s.readOnly {
		return fmt.Errorf("write record %q: %w", key, ErrReadOnly)
	}
	if err := s.writable(ctx); err != nil {
		return fmt.Errorf("write record %q: %w", key, err)
	}
	var err error
	if !v.Exists {
		err = s.drv.createOnly(ctx, key, data)
	} else {
		err = s.drv.replaceIfUnchanged(ctx, key, data, v.Token)
	}
	if err != nil {
		return fmt.Errorf("write record %q: %w", key, err)
	}
	return nil
}

// UpdateResult says how an UpdateRecord went.
type UpdateResult struct {
	Tries int  // compare-and-swap attempts, 1 when the first one won
	Wrote bool // false when fn returned ErrNoChange
}

// UpdateRecord reads a record, applies fn to its contents and writes the
// result by compare-and-swap. On a lost race it reads again and retries, up to
// MaxCASTries times with jittered backoff, so concurrent updaters never lose
// each other's changes. fn may run several times and must depend only on its
// input; returning ErrNoChange ends the update without a write.
//
// A write whose answer was lost (ErrUnavailable: a timeout, a reset
// connection, a 5xx) may or may not have landed, so it is not sent again as
// is: the next round reads the record again. If the record then holds exactly
// the bytes that write carried, it landed and the update is done; else fn is
// applied to what the record holds now and written at its new version, like
// after a lost race. Only if the lost write landed and another writer changed
// the record before the re-read does fn apply twice: for the journal that is a
// duplicate line, which readers and folds tolerate (a key may be journaled
// any number of times), and every other update (marking, retiring, dropping)
// recomputes the same change. A lost write after which the record is found
// changed by another writer was a lost race (versitygw answers a failed
// conditional PUT before reading its body and closes the connection, so a
// lost race reaches the client as a reset): it counts as a conflict. Only
// lost writes after which the record is found unchanged count against the
// store: after MaxReadTries-1 of them the next lost write fails the update.
// Each round counts in Tries.
func (s *Store) UpdateRecord(ctx context.Context, key string, fn func(old []byte, exists bool) ([]byte, error)) (res UpdateResult, err error) {
	if s.readOnly {
		return res, fmt.Errorf("update record %q: %w", key, ErrReadOnly)
	}
	if err := s.writable(ctx); err != nil {
		return res, fmt.Errorf("update record %q: %w", key, err)
	}
	defer func() { s.casStats.add(res) }()
	var lost []byte    // what a write whose answer was lost carried
	var lostAt Version // the version that write was to replace
	unanswered := 0    // lost writes after which the record was found unchanged
	for res.Tries < MaxCASTries {
		res.Tries++
		began := time.Now()
		old, v, err := s.ReadRecord(ctx, key)
		if err != nil {
			return res, fmt.Errorf("update record %q: %w", key, err)
		}
		if lost != nil {
			if v.Exists && bytes.Equal(old, lost) {
				res.Wrote = true // the write whose answer was lost landed
				return res, nil
			}
			if v == lostAt {
				unanswered++ // neither it nor another writer's landed
			}
			lost = nil
		}
		data, err := fn(old, v.Exists)
		if errors.Is(err, ErrNoChange) {
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("update record %q: %w", key, err)
		}
		err = s.WriteRecord(ctx, key, data, v)
		if err == nil {
			res.Wrote = true
			return res, nil
		}
		switch {
		case errors.Is(err, ErrConflict):
		case errors.Is(err, ErrUnavailable) && unanswered < MaxReadTries-1 && ctx.Err() == nil:
			lost, lostAt = data, v
		default:
			return res, fmt.Errorf("update record %q: %w", key, err)
		}
		if err := backoff(ctx, res.Tries, time.Since(began)); err != nil {
			return res, fmt.Errorf("update record %q: %w", key, err)
		}
	}
	return res, fmt.Errorf("update record %q: %w after %d tries", key, ErrTooManyTries, res.Tries)
}

// CASStats sums the compare-and-swap updates (UpdateRecord) a handle made:
// how many, their tries in all, and the most tries one update needed.
type CASStats struct {
	Updates  int64 `json:"updates"`
	Tries    int64 `json:"tries"`
	MaxTries int64 `json:"max_tries"`
}

// CASStats returns the compare-and-swap figures so far.
func (s *Store) CASStats() CASStats { return s.casStats.snapshot() }

type casCounters struct {
	updates, tries, maxTries atomic.Int64 // atomic
}

func (c *casCounters) add(r UpdateResult) {
	if r.Tries == 0 {
		return
	}
	c.updates.Add(1)
	c.tries.Add(int64(r.Tries))
	for {
		m := c.maxTries.Load()
		if int64(r.Tries) <= m || c.maxTries.CompareAndSwap(m, int64(r.Tries)) {
			return
		}
	}
}

func (c *casCounters) snapshot() CASStats {
	return CASStats{Updates: c.updates.Load(), Tries: c.tries.Load(), MaxTries: c.maxTries.Load()}
}

// backoff sleeps before try n+1: exponential in n with full jitter, scaled
// by the round trip of the try that lost (rtt), capped (backoffCeil).
// Scaling by the round trip makes losers spread over as many "slots" as
// there are contenders, so the chance of losing 32 times in a row vanishes
// instead of being (1-1/contenders)^32.
func backoff(ctx context.Context, n int, rtt time.Duration) error {
	return sleep(ctx, time.Duration(rand.Int64N(int64(backoffCeil(n, rtt))))+time.Millisecond)
}

// backoffCeil is the most backoff waits before try n+1: rtt (at least
// 1 ms) doubled n times, capped at maxBackoff — but never below
// backoffSlots round trips, so that when a try takes long (a slow or
// starved server: CI met 16 updaters on Azurite, each try near a second,
// and one lost 32 times in a row under a 2 s cap, 2 slots for 16
// contenders) the waits still spread over that many slots.
func backoffCeil(n int, rtt time.Duration) time.Duration {
	base := max(rtt, time.Millisecond)
	return min(base<<min(n, 16), max(maxBackoff, base*backoffSlots))
}

// maxBackoff caps one wait between compare-and-swap tries, unless a try's
// round trip is long (backoffCeil).
const maxBackoff = 2 * time.Second

// backoffSlots is how many round trips the waits of a long-lost update
// spread over at least.
const backoffSlots = 32

// MaxCASTries bounds the compare-and-swap retries of one record update.
const MaxCASTries = 32
