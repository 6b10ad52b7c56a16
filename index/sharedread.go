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

// sigSharedRead is the signature cache's shared read of one key (one GET):
// what it landed with, for its waiters, and how it began. Its own fields
// are written under sigCache.mu (prefetch when it is made), and read under
// it or, by its waiters, once done is closed (land writes first).
type sigSharedRead struct {
	*sharedRead
	data     []byte
	mod      int64 // data's key's Last-Modified (sigMeta.mod)
	err      error
	ver      uint64 // the version of data, when kept (not stale)
	kept     bool   // data was kept as the key's current bytes: ver is theirs
	stale    bool   // the key was written while the GET ran: its result is not kept, and it is out of sigCache.reading (staleLocked)
	prefetch bool   // read-ahead started it: a waiter does not inherit its failure
	admitted bool   // a reader's open started it under the budget: another caller does not inherit ErrBusy
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

// fetched is what fetch returns: the bytes, their key's time (sigMeta.mod),
// and their version when known (kept: the bytes are the key's current
// ones, as of version ver).
type fetched struct {
	data []byte
	mod  int64
	ver  uint64
	kept bool
}

// sigGet is how the cache reads a key: its bytes and its own Last-Modified
// from the one GET (store.GetAdmitted).
type sigGet func(ctx context.Context) ([]byte, time.Time, error)

// fetch reads a key once however many callers ask at the same time, and
// keeps the result. The read runs on a shared read's context (see sharedRead): one
// caller that goes away does not fail the others; closing is done when the
// index closes. A caller that waited for a read-ahead GET that failed
// (cancelled by Close, or any error), or for a reader's GET refused by the
// readers' budget (admitted), reads the key itself; admitted says this
// caller's read is one.
func (c *sigCache) fetch(ctx, closing context.Context, key string, admitted bool, read sigGet) (fetched, error) {
	for try := 0; ; try++ {
		c.mu.Lock()
		if el, ok := c.m[key]; ok {
			c.ll.MoveToFront(el)
			ver := c.versionLocked(key)
			c.mu.Unlock()
			c.hits.Add(1)
			it := el.Value.(*sigItem)
			return fetched{data: it.data, mod: it.mod, ver: ver, kept: true}, nil
		}
		if try == 0 {
			c.misses.Add(1)
		}
		f, ok := c.reading[key]
		if !ok {
			f = c.startLocked(ctx, closing, key, read)
			f.admitted = admitted
		}
		mine := !ok
		f.waiters++
		c.mu.Unlock()
		select {
		case <-f.done:
			if f.err != nil && (f.prefetch || f.admitted && !mine && errors.Is(f.err, ErrBusy)) {
				continue
			}
			return fetched{data: f.data, mod: f.mod, ver: f.ver, kept: f.kept}, f.err
		case <-ctx.Done():
			c.mu.Lock()
			if f.leave() && !f.prefetch && c.reading[key] == f {
				delete(c.reading, key) // canceled: the next caller starts anew
			}
			c.mu.Unlock()
			return fetched{}, ctx.Err()
		}
	}
}

// startLocked starts a shared read of key; c.mu is held.
func (c *sigCache) startLocked(ctx, closing context.Context, key string, read sigGet) *sigSharedRead {
	f := &sigSharedRead{sharedRead: newSharedRead(ctx, closing)}
	c.reading[key] = f
	go func() {
		data, mod, err := read(f.ctx)
		c.land(key, f, data, unixNano(mod), err)
	}()
	return f
}

// land ends the shared read f of key: it hands its result to the waiters
// and caches the bytes unless a refresh made them stale.
func (c *sigCache) land(key string, f *sigSharedRead, data []byte, mod int64, err error) {
	var sum uint64
	if err == nil {
		sum = c.digest(data) // outside the lock: a big signature takes a while
	}
	c.mu.Lock()
	f.data, f.mod, f.err = data, mod, err
	if c.reading[key] == f {
		delete(c.reading, key)
		if err == nil && !f.stale {
			c.insertLocked(key, data, sum, mod)
			f.ver, f.kept = c.versionLocked(key), true
		}
	}
	c.mu.Unlock()
	f.finish()
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
