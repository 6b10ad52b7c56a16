package index

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store/format"
)

// The readers' budget.
//
// A reader that keeps a signature open (a mount's read handle, an HTTP
// answer of `oxyfs serve`, an open file of the io/fs view) holds its bytes
// through OpenSig: one shared, read-only copy per signature version, with a
// count of the handles on it, never a copy per reader. The copy is the
// signature cache's own slice when the bytes are cached (the cache never
// modifies what it keeps), so forty readers of one signature cost its size
// once, in the cache or out of it.
//
// What open handles hold is bounded as a whole: the bytes of every version
// some handle holds, plus the bodies being read for an open, stay within
// the budget, the signature cache's bound (Options.SigCacheBytes) or
// format.MaxEntryBytes if that is more (one signature of the largest size
// always fits). An open that needs a copy past it is refused with ErrBusy
// (a mount answers EAGAIN, serve 503) before its body is read: the GET's
// size is checked as the response gives it (store.GetAdmitted). An open of
// a version some handle holds already costs nothing and is never refused.

// ErrBusy is the error of an OpenSig refused by the readers' budget: what
// open readers hold, with this signature, would pass it. Retrying later,
// once readers closed, may succeed.
var ErrBusy = errors.New("the readers' budget is full (too many bytes held open)")

// sigReaders is the readers' budget. Its fields but refused are guarded by
// sigCache.mu.
type sigReaders struct {
	max     int64              // the budget; read-only after init
	held    int64              // bytes of the bufs with handles, and of the bodies being read for an open; guarded by sigCache.mu
	peak    int64              // the most held has been; guarded by sigCache.mu
	open    map[string]*sigBuf // the newest buf of each key with handles; guarded by sigCache.mu
	refused atomic.Int64       // atomic: opens refused (ErrBusy)
}

func (r *sigReaders) init(cacheMax int64) {
	r.max = max(cacheMax, format.MaxEntryBytes)
	r.open = map[string]*sigBuf{}
}

// sigBuf is one version of a signature's bytes, shared by its handles.
type sigBuf struct {
	key  string // read-only
	data []byte // read-only
	mod  int64  // read-only: the key's own Last-Modified with these bytes (sigMeta.mod)
	ver  uint64 // read-only
	refs int    // handles on it; guarded by sigCache.mu
}

// SigHandle is an open signature: one version of its bytes, shared with
// every other handle on that version. Release it when done.
type SigHandle struct {
	c        *sigCache   // nil for an entry of another kind (empty, not counted); read-only
	b        *sigBuf     // read-only
	released atomic.Bool // atomic: Release counts once
}

// Bytes returns the signature's bytes. They are shared: the caller must
// not modify them. They stay valid after Release (the budget no longer
// counts them).
func (h *SigHandle) Bytes() []byte { return h.b.data }

// ModTime is the key's own Last-Modified as the GET of these bytes gave it
// (SigStat), or the zero time when not known (an index entry, a legacy
// list's signature, a backend that gives no time): the store's last change
// (Index.ModTime) stands for it.
func (h *SigHandle) ModTime() time.Time { return timeOf(h.b.mod) }

// Version is the version of the bytes (SigVersion when they were opened).
func (h *SigHandle) Version() uint64 { return h.b.ver }

// Release gives the bytes back to the budget; later calls do nothing.
func (h *SigHandle) Release() {
	if h.c == nil || h.released.Swap(true) {
		return
	}
	h.c.release(h.b)
}

// ReadersStats is what the readers' budget holds (Status).
type ReadersStats struct {
	HeldBytes  int64 `json:"held_bytes"`
	PeakBytes  int64 `json:"peak_bytes"`
	BoundBytes int64 `json:"bound_bytes"`
	Refused    int64 `json:"refused"`
}

// ReadersStats returns what open readers hold.
func (ix *Index) ReadersStats() ReadersStats {
	c := ix.sigs
	c.mu.Lock()
	defer c.mu.Unlock()
	return ReadersStats{HeldBytes: c.readers.held, PeakBytes: c.readers.peak, BoundBytes: c.readers.max, Refused: c.readers.refused.Load()}
}

// errStaleVersion: the bytes read are no longer the key's current ones (a
// write or refresh came during the read); OpenSig reads again.
var errStaleVersion = errors.New("signature changed while read")

// openTries bounds how often OpenSig reads again a signature that changed
// while it was read: with readers finding newer bytes and refreshes
// moving the version while another writer re-signs, three tries failed an
// open (EIO) about once in 10,000 (fs TestOpensNeverFailWhileSignaturesChange).
const openTries = 10

// OpenSig opens a signature for reading: a handle on the bytes ReadSig
// would return, shared with every other open handle of the same version
// (see "The readers' budget"). An open past the budget is an error
// wrapping ErrBusy, refused before the body is read. Entries of other kinds
// open empty and cost nothing.
func (ix *Index) OpenSig(ctx context.Context, e format.Entry) (*SigHandle, error) {
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("open signature: %w", err)
	}
	if e.Kind != format.KindSig {
		return &SigHandle{b: &sigBuf{data: []byte{}}}, nil
	}
	c, key := ix.sigs, e.Key()
	if h := c.share(key); h != nil {
		ix.ra.trigger(ix.v.Load(), e)
		return h, nil
	}
	for try := 1; ; try++ {
		got, err := ix.readSig(ctx, e, key, true)
		if err != nil {
			return nil, err
		}
		h, err := c.admit(key, got)
		if errors.Is(err, errStaleVersion) && try < openTries {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("open signature %q: %w", termsafe.Value(key), err)
		}
		return h, nil
	}
}

// share returns a new handle on key's open buf if it holds the current
// version, else nil.
func (c *sigCache) share(key string) *SigHandle {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.readers.open[key]; b != nil && b.ver == c.versionLocked(key) {
		b.refs++
		c.hits.Add(1)
		return &SigHandle{c: c, b: b}
	}
	return nil
}

// admit makes a handle on the bytes got: the open buf of their version if
// there is one, else a new buf, within the budget.
func (c *sigCache) admit(key string, got fetched) (*SigHandle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !got.kept || got.ver != c.versionLocked(key) {
		return nil, errStaleVersion
	}
	if b := c.readers.open[key]; b != nil && b.ver == got.ver {
		b.refs++
		return &SigHandle{c: c, b: b}, nil
	}
	n := int64(len(got.data))
	if c.readers.held+n > c.readers.max {
		c.readers.refused.Add(1)
		return nil, fmt.Errorf("%d bytes with %d held open, over %d: %w", n, c.readers.held, c.readers.max, ErrBusy)
	}
	c.holdLocked(n)
	b := &sigBuf{key: key, data: got.data, mod: got.mod, ver: got.ver, refs: 1}
	c.readers.open[key] = b
	return &SigHandle{c: c, b: b}, nil
}

func (c *sigCache) holdLocked(n int64) {
	c.readers.held += n
	c.readers.peak = max(c.readers.peak, c.readers.held)
}

// release drops a handle on b.
func (c *sigCache) release(b *sigBuf) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.refs--
	if b.refs > 0 {
		return
	}
	c.readers.held -= int64(len(b.data))
	if c.readers.open[b.key] == b {
		delete(c.readers.open, b.key)
	}
}

// reserve is the admission of an open's GET (store.GetAdmitted): the body
// of size bytes is counted in the budget while it is read, or refused.
func (c *sigCache) reserve(size int64) (release func(), err error) {
	n := max(size, 0)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readers.held+n > c.readers.max {
		return nil, fmt.Errorf("%d bytes with %d held open, over %d: %w", n, c.readers.held, c.readers.max, ErrBusy)
	}
	c.holdLocked(n)
	return func() {
		c.mu.Lock()
		c.readers.held -= n
		c.mu.Unlock()
	}, nil
}

// SigID tells one signature's bytes from others: their size and a digest
// (this process's seed; compared within it only).
type SigID struct {
	Size int64
	Sum  uint64
}

// ID returns the identity of the handle's bytes.
func (h *SigHandle) ID() SigID {
	if h.c == nil {
		return SigID{}
	}
	return SigID{Size: int64(len(h.b.data)), Sum: h.c.digest(h.b.data)}
}
