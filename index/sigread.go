package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

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
			return fetched{}, fmt.Errorf("read signature %q: %w", key, err)
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
			return fmt.Errorf("read signature %q: %w (named by %s): %w: %w", key, ErrListedMissing, src, fs.ErrNotExist, err)
		}
		return fmt.Errorf("read signature %q: %w: %w", key, fs.ErrNotExist, err)
	}
	return fmt.Errorf("read signature %q: %w", key, err)
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
