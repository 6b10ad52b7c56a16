package index

import (
	"context"
	"errors"
	"time"
)

// sharedRead is one read shared by every caller that asks for the same key
// while it runs (the signature cache's GETs, the prefix cache's listings).
// It runs on a context of its own: detached from every caller's
// (context.WithoutCancel keeps their values, not their cancellation), so
// one caller who goes away (an HTTP client of `oxyfs serve` that
// disconnects) does not fail the others. It is canceled only when every
// waiter has gone, or when the index closes; each request under it is still
// bounded by the store's own per-request timeout. A waiter returns when the
// read ends or its own context is done, whichever comes first.
//
// waiters is guarded by the owner's mutex (sigCache.mu, prefixCache.mu).
type sharedRead struct {
	ctx     context.Context
	cancel  context.CancelFunc
	stop    func() bool // unlinks ctx from the index's close
	done    chan struct{}
	waiters int
}

// newSharedRead makes a shared read for a read first asked for under ctx. closing is
// done when the index closes; a read started after that is not linked to
// it (reads keep working after Close).
func newSharedRead(ctx, closing context.Context) *sharedRead {
	f := &sharedRead{done: make(chan struct{}), stop: func() bool { return false }}
	f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if closing.Err() == nil {
		f.stop = context.AfterFunc(closing, f.cancel)
	}
	return f
}

// finish ends the shared read: its waiters see done closed.
func (f *sharedRead) finish() {
	f.stop()
	f.cancel()
	close(f.done)
}

// finished reports whether finish ran.
func (f *sharedRead) finished() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// leave is a waiter going away before the read ended; the owner's mutex
// is held. It reports whether that was the last waiter, in which case the
// read is canceled and the owner forgets it.
func (f *sharedRead) leave() bool {
	f.waiters--
	if f.waiters > 0 || f.finished() {
		return false
	}
	f.cancel()
	return true
}

// staleLocked ends the read of key in flight, if any, for everyone but
// those waiting on it already: its result is not kept, and a read that
// begins now starts a GET of its own rather than take bytes a refresh (or
// this handle's write) has made old.
func (c *sigCache) staleLocked(key string) {
	if f, ok := c.reading[key]; ok {
		f.stale = true
		delete(c.reading, key)
	}
}

// has reports whether a key's bytes are cached or being read (by a read
// no change made stale), without making it recent.
func (c *sigCache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, cached := c.m[key]
	_, flying := c.reading[key]
	return cached || flying
}

// prefetch reads a key for read-ahead, unless it is cached or being read.
// It runs in the read-ahead worker that calls it, whose context is read's.
func (c *sigCache) prefetch(key string, read func() ([]byte, time.Time, error)) {
	c.mu.Lock()
	_, cached := c.m[key]
	_, flying := c.reading[key]
	if cached || flying {
		c.mu.Unlock()
		return
	}
	f := &sigSharedRead{sharedRead: newSharedRead(context.Background(), context.Background()), prefetch: true}
	c.reading[key] = f
	c.mu.Unlock()
	data, mod, err := read()
	c.land(key, f, data, unixNano(mod), err)
}

// prefetchBatch is prefetch of several keys at once: those neither cached
// nor being read are registered as being read, then read is called once
// with them and lands each (land: i its index in the keys read is given)
// as its bytes or error come. read must land every key it is given,
// once. It runs in the read-ahead worker that calls it.
func (c *sigCache) prefetchBatch(keys []string, read func(keys []string, land func(i int, data []byte, mod time.Time, err error))) {
	mine := make([]string, 0, len(keys))
	reads := make([]*sigSharedRead, 0, len(keys))
	c.mu.Lock()
	for _, key := range keys {
		_, cached := c.m[key]
		_, flying := c.reading[key]
		if cached || flying {
			continue
		}
		f := &sigSharedRead{sharedRead: newSharedRead(context.Background(), context.Background()), prefetch: true}
		c.reading[key] = f
		mine, reads = append(mine, key), append(reads, f)
	}
	c.mu.Unlock()
	if len(mine) == 0 {
		return
	}
	landed := make([]bool, len(mine))
	defer func() {
		// A read that did not land a key (it must not happen) would leave
		// its waiters waiting: they are told it failed.
		for i, ok := range landed {
			if !ok {
				c.land(mine[i], reads[i], nil, 0, errNotLanded)
			}
		}
	}()
	read(mine, func(i int, data []byte, mod time.Time, err error) {
		if landed[i] {
			return
		}
		landed[i] = true
		c.land(mine[i], reads[i], data, unixNano(mod), err)
	})
}

// errNotLanded is the error of a read-ahead read its batch did not land.
var errNotLanded = errors.New("read-ahead batch ended without this key")
