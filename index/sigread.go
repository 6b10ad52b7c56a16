package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// The reads of a signature. ReadSig (a copy for the caller), OpenSig (a
// handle on the shared bytes, sigopen.go) and SigStat (their size: no
// copy) share one private read, readSig: the cache, else the legacy list
// that holds the signature, else one GET shared by every caller of the key
// (sigCache.fetch) within the readers' budget; each schedules read-ahead
// past the signature read.

// ReadSig returns a signature's bytes, read from the entry's own key (or,
// on a store whose older lists are still read, from its legacy list) and
// kept in a cache bounded by bytes. Entries of other kinds are empty. The
// caller may modify the returned slice. A signature the view lists whose
// key is gone is an error wrapping ErrListedMissing (missing.go).
func (ix *Index) ReadSig(ctx context.Context, e format.Entry) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("read signature: %w", err)
	}
	if e.Kind != format.KindSig {
		return []byte{}, nil
	}
	got, err := ix.readSig(ctx, e, e.Key(), false)
	if err != nil {
		return nil, err
	}
	return slices.Clone(got.data), nil
}

// readSig is the one read of a valid signature entry's bytes: from the
// cache, else from the legacy list that holds them, else one GET shared
// with every caller of the key (sigCache.fetch). got.data is the cache's
// own (not to be modified); got.ver is their version when got.kept (a
// legacy list's bytes are kept as the version's of the moment). open says
// the caller opens (OpenSig): a GET another open started that the budget
// refused is not inherited but tried again (sigCache.fetch's admitted).
// key is e's (e.Key(), which the caller has made already).
func (ix *Index) readSig(ctx context.Context, e format.Entry, key string, open bool) (fetched, error) {
	if got, ok := ix.sigs.cached(key); ok {
		ix.ra.trigger(ix.v.Load(), e)
		return got, nil
	}
	v, err := ix.current(ctx)
	if err != nil {
		return fetched{}, err
	}
	ix.ra.trigger(v, e)
	if v.legacy && !ix.own.has(e) {
		se, ok, err := ix.entry(ctx, v, e)
		if err != nil {
			return fetched{}, fmt.Errorf("read signature %q: %w", termsafe.Value(key), err)
		}
		if ok && se.sig != nil {
			return ix.sigs.legacyBytes(key, se.sig), nil // no time of its own
		}
	}
	// The GET is admitted against the readers' budget as an open's is
	// (sigCache.reserve): its body counts while it is read, so stats and
	// reads of many signatures together, flooded or not, hold at most the
	// budget (issue 36).
	got, err := ix.sigs.fetch(ctx, ix.ra.ctx, key, open, ix.sigGet(key))
	if err != nil {
		if errors.Is(err, ErrBusy) {
			ix.sigs.readers.refused.Add(1)
		}
		return fetched{}, ix.readSigErr(v, e, err)
	}
	return got, nil
}

// sigGet reads key's bytes and its own Last-Modified with one GET,
// within the readers' budget.
func (ix *Index) sigGet(key string) sigGet {
	return func(ctx context.Context) ([]byte, time.Time, error) {
		return ix.st.GetAdmitted(ctx, key, ix.sigs.reserve)
	}
}

// readSigErr wraps the error of a signature's read; a key the store does
// not have is fs.ErrNotExist, and ErrListedMissing too when view v lists
// it (ix.listedMissing).
func (ix *Index) readSigErr(v *view, e format.Entry, err error) error {
	key := e.Key()
	if errors.Is(err, store.ErrNotFound) {
		if src, ok := ix.listedMissing(v, e); ok {
			return fmt.Errorf("read signature %q: %w (named by %s): %w: %w", termsafe.Value(key), ErrListedMissing, src, fs.ErrNotExist, err)
		}
		return fmt.Errorf("read signature %q: %w: %w", termsafe.Value(key), fs.ErrNotExist, err)
	}
	return fmt.Errorf("read signature %q: %w", termsafe.Value(key), err)
}

// The shared GET: fetch makes one GET of a key however many readers ask
// for it at once (a sigSharedRead, over the generic sharedRead of
// sharedread.go), and land caches its bytes (sigcache.go insertLocked)
// unless a change made them stale while it ran.

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

// SigStat returns a signature's size and its key's own Last-Modified (the
// file's mtime on a file store; the zero time when the backend does not
// say, for a legacy list's signature, and for a signature whose size is
// not known): from the cache, else by reading it (one GET, which fills
// the cache and gives both; the bytes are not copied). Entries of other
// kinds are 0 with the zero time: the store's last change (ModTime) stands
// for their time. The time of this handle's own write is the store's time
// when it landed, as this handle's clock of the store tells it (sigTime).
func (ix *Index) SigStat(ctx context.Context, e format.Entry) (int64, time.Time, error) {
	if err := e.Validate(); err != nil {
		return 0, time.Time{}, fmt.Errorf("signature size: %w", err)
	}
	if e.Kind != format.KindSig {
		return 0, time.Time{}, nil
	}
	key := e.Key()
	if n, mod := ix.sigs.size(key); n >= 0 {
		ix.ra.trigger(ix.v.Load(), e)
		return n, timeOf(mod), nil
	}
	got, err := ix.readSig(ctx, e, key, false)
	if err != nil {
		return 0, time.Time{}, err
	}
	return int64(len(got.data)), timeOf(got.mod), nil
}

// SigSize returns a signature's size (SigStat without the time).
func (ix *Index) SigSize(ctx context.Context, e format.Entry) (int64, error) {
	n, _, err := ix.SigStat(ctx, e)
	return n, err
}

// sigTime is the time kept for this handle's own write of a signature
// (sigMeta.mod), taken once the write landed: the latest the store's time
// can be now as this handle's clock of it tells (store.StoreNowLatestMs,
// no request), else this host's. The store stamped the key before, so its
// own Last-Modified is no later than this and within the clock's slack of
// it (the earliest bound, StoreNowMs, came before the stamp by up to that
// slack: a re-sign showed a time before its key's); the next read of the
// key, after a refresh or an eviction, gives the key's own.
func (ix *Index) sigTime() int64 {
	if ms, ok := ix.st.StoreNowLatestMs(); ok {
		return ms * int64(time.Millisecond)
	}
	return time.Now().UnixNano()
}
