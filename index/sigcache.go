package index

import (
	"container/list"
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// maxKnownSizes bounds the sizes remembered after their bytes left the
// cache (sizeItemBytes each), or fewer under a memory limit
// (knownSizesFor); past it the table starts over.
const maxKnownSizes = 1 << 20

// sizeItemBytes is about what one remembered size costs (115–135 B
// measured with the size alone; the digest and the time, sigMeta.mod,
// make its map slot 16 B larger): the key (79 bytes for a 9-byte signer, in an 80-byte
// allocation) and its slot in the map.
const sizeItemBytes = 128

// sigItemOverhead is what the cache counts per item beyond its key and bytes.
const sigItemOverhead = 96

// sigCache keeps signature bytes read from their own keys: an LRU bounded by
// bytes, the size and digest of signatures read, one GET in flight per key,
// and the bytes open readers hold (sigopen.go).
type sigCache struct {
	mu     sync.Mutex               // protects the following but seed, now and the atomics; a leaf: nothing is locked or read under it
	max    int64                    // guarded by mu
	sizesN int                      // how many sizes are remembered at most; guarded by mu
	bytes  int64                    // guarded by mu
	ll     *list.List               // of *sigItem, most recent first; guarded by mu
	m      map[string]*list.Element // guarded by mu
	sizes  map[string]sigMeta       // guarded by mu
	flight map[string]*sigFlight    // guarded by mu, and so is each flight's waiters
	seed   maphash.Seed             // of the digests; read-only after newSigCache

	changes sigChanges       // when signatures last changed, their versions (sigchange.go); guarded by mu
	watch   sigWatch         // who is told of changes (sigchange.go); guarded by mu
	now     func() time.Time // the clock of changes; read-only after newSigCache (tests set it first)

	readers sigReaders // the readers' budget (sigopen.go); guarded by mu but its refused

	// hits, misses: reads of a signature answered from the cache, and
	// those that waited for a GET (their own or one in flight); evictions:
	// signatures dropped to make room (not those a write or refresh made
	// stale). Atomic.
	hits, misses, evictions atomic.Int64
}

// SigCacheStats counts what the signature cache answered.
type SigCacheStats struct {
	Hits      int64 `json:"hits"`
	Misses    int64 `json:"misses"`
	Evictions int64 `json:"evictions"`
}

func (c *sigCache) stats() SigCacheStats {
	return SigCacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load()}
}

type sigItem struct {
	key  string
	data []byte // never modified: open readers share it (sigopen.go)
	mod  int64  // the key's own Last-Modified, UnixNano (0: not said): sigMeta.mod
}

// sigMeta is what is remembered of a signature read: its size, and a
// digest of its bytes (maphash, this process's seed), which tells a read
// of other bytes from a read of the same.
type sigMeta struct {
	size int64
	sum  uint64
	// mod is the key's own Last-Modified as the GET that read the bytes
	// gave it (UnixNano; 0 when the backend did not say), or for this
	// handle's own write the store's time when it landed (sigTime).
	mod int64
	// recheck: the bytes may have changed with no sign of it (a forget
	// record, forgotten.go): the size is not answered, only compared with
	// the next read's, which moves the version if they differ.
	recheck bool
}

type sigFlight struct {
	*flight
	data     []byte
	mod      int64 // data's key's Last-Modified (sigMeta.mod)
	err      error
	ver      uint64 // the version of data, when kept (not stale)
	kept     bool   // data was kept as the key's current bytes: ver is theirs
	stale    bool   // the key was written while the GET ran: its result is not kept, and it is out of sigCache.flight (staleLocked)
	prefetch bool   // read-ahead started it: a waiter does not inherit its failure
	admitted bool   // a reader's open started it under the budget: another caller does not inherit ErrBusy
}

func newSigCache(max int64, sizes int) *sigCache {
	c := &sigCache{max: max, sizesN: sizes, ll: list.New(), m: map[string]*list.Element{}, sizes: map[string]sigMeta{}, flight: map[string]*sigFlight{}, seed: maphash.MakeSeed(), now: time.Now}
	c.readers.init(max)
	return c
}

// digest is the sum sigMeta keeps of data.
func (c *sigCache) digest(data []byte) uint64 { return maphash.Bytes(c.seed, data) }

func (c *sigCache) used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// size returns a signature's size and its key's time (sigMeta.mod) if it
// was read, else -1 and 0.
func (c *sigCache) size(key string) (int64, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.sizes[key]; ok && !m.recheck {
		return m.size, m.mod
	}
	return -1, 0
}

// entrySize is size for an entry, formatting its key only when some size
// is known.
func (c *sigCache) entrySize(e format.Entry) (int64, int64) {
	c.mu.Lock()
	empty := len(c.sizes) == 0
	c.mu.Unlock()
	if empty {
		return -1, 0
	}
	return c.size(e.Key())
}

// cached returns key's bytes if the cache holds them, as fetch would
// (their time and version), and makes them recent.
func (c *sigCache) cached(key string) (fetched, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok {
		return fetched{}, false
	}
	c.ll.MoveToFront(el)
	c.hits.Add(1)
	it := el.Value.(*sigItem)
	return fetched{data: it.data, mod: it.mod, ver: c.versionLocked(key), kept: true}, true
}

// legacyBytes is what a read of key from a legacy list gives: its bytes as
// the version's of the moment, with no time of their own. They are not
// cached (the view holds them).
func (c *sigCache) legacyBytes(key string, data []byte) fetched {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fetched{data: data, ver: c.versionLocked(key), kept: true}
}

// insertLocked keeps data (whose digest is sum, whose key's time is mod:
// sigMeta.mod) for key, evicting the least recently used.
func (c *sigCache) insertLocked(key string, data []byte, sum uint64, mod int64) {
	c.removeLocked(key)
	meta := sigMeta{size: int64(len(data)), sum: sum, mod: mod}
	if old, ok := c.sizes[key]; ok && (old.size != meta.size || old.sum != meta.sum) {
		c.changedLocked(key) // replaced without a journal line
	}
	if len(c.sizes) >= c.sizesN {
		clear(c.sizes)
		c.allChangedLocked() // a size forgotten here can no longer be compared
	}
	c.sizes[key] = meta
	cost := int64(len(key)+len(data)) + sigItemOverhead
	if cost > c.max {
		return
	}
	c.m[key] = c.ll.PushFront(&sigItem{key: key, data: data, mod: mod})
	c.bytes += cost
	for c.bytes > c.max {
		el := c.ll.Back()
		c.removeLocked(el.Value.(*sigItem).key)
		c.evictions.Add(1)
	}
}

func (c *sigCache) removeLocked(key string) {
	if el, ok := c.m[key]; ok {
		it := el.Value.(*sigItem)
		c.bytes -= int64(len(it.key)+len(it.data)) + sigItemOverhead
		c.ll.Remove(el)
		delete(c.m, key)
	}
}

// put replaces a key's bytes: this handle has just written them, at mod
// (sigTime).
func (c *sigCache) put(key string, data []byte, mod int64) {
	data = slices.Clone(data)
	sum := c.digest(data)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.staleLocked(key)
	delete(c.sizes, key) // replaced here: no read to compare with
	c.insertLocked(key, data, sum, mod)
	c.ownChangedLocked(key) // once, and last (ownlines.go)
}

// staleLocked ends the read of key in flight, if any, for everyone but
// those waiting on it already: its result is not kept, and a read that
// begins now starts a GET of its own rather than take bytes a refresh (or
// this handle's write) has made old.
func (c *sigCache) staleLocked(key string) {
	if f, ok := c.flight[key]; ok {
		f.stale = true
		delete(c.flight, key)
	}
}

// invalidate forgets a key's bytes and size.
func (c *sigCache) invalidate(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.staleLocked(key)
	c.changedLocked(key)
	c.removeLocked(key)
	delete(c.sizes, key)
}

// recheck has the next read of key read its bytes again and compare them
// with the last ones read (sigMeta.recheck): its bytes are dropped, a read
// in flight is not kept, the copy open readers hold is shared no more (a
// new OpenSig reads the key, the held handles keep theirs), and the mount
// is told to look the name up again (its size is asked anew); the version
// does not move.
func (c *sigCache) recheck(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.staleLocked(key)
	c.removeLocked(key)
	delete(c.readers.open, key) // its handles keep it (release checks it is theirs)
	if m, ok := c.sizes[key]; ok {
		m.recheck = true
		c.sizes[key] = m
	}
	c.watch.noteLocked(key)
}

func (c *sigCache) clearAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.flight {
		c.staleLocked(k)
	}
	c.allChangedLocked()
	c.ll.Init()
	clear(c.m)
	clear(c.sizes)
	c.bytes = 0
}

// itemsFitting estimates how many signatures the cache holds at once: its
// bound over the mean cost of what it holds (or of a 256-byte signature
// with a 79-byte key while it holds nothing).
func (c *sigCache) itemsFitting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	mean := int64(sigItemOverhead + 79 + 256)
	if n := int64(len(c.m)); n > 0 {
		mean = max(1, c.bytes/n)
	}
	return int(min(c.max/mean, 1<<30))
}

// has reports whether a key's bytes are cached or being read (by a read
// no change made stale), without making it recent.
func (c *sigCache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, cached := c.m[key]
	_, flying := c.flight[key]
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
// from the one GET (store.GetAdmittedAt).
type sigGet func(ctx context.Context) ([]byte, time.Time, error)

// unixNano is t as sigMeta.mod keeps it: 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// timeOf is the time sigMeta.mod keeps (the zero time for 0).
func timeOf(mod int64) time.Time {
	if mod == 0 {
		return time.Time{}
	}
	return time.Unix(0, mod)
}

// fetch reads a key once however many callers ask at the same time, and
// keeps the result. The read runs on a flight's context (see flight): one
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
		f, ok := c.flight[key]
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
			if f.leave() && !f.prefetch && c.flight[key] == f {
				delete(c.flight, key) // canceled: the next caller starts anew
			}
			c.mu.Unlock()
			return fetched{}, ctx.Err()
		}
	}
}

// startLocked starts a shared read of key; c.mu is held.
func (c *sigCache) startLocked(ctx, closing context.Context, key string, read sigGet) *sigFlight {
	f := &sigFlight{flight: newFlight(ctx, closing)}
	c.flight[key] = f
	go func() {
		data, mod, err := read(f.ctx)
		c.land(key, f, data, unixNano(mod), err)
	}()
	return f
}

// land ends the shared read f of key: it hands its result to the waiters
// and caches the bytes unless a refresh made them stale.
func (c *sigCache) land(key string, f *sigFlight, data []byte, mod int64, err error) {
	var sum uint64
	if err == nil {
		sum = c.digest(data) // outside the lock: a big signature takes a while
	}
	c.mu.Lock()
	f.data, f.mod, f.err = data, mod, err
	if c.flight[key] == f {
		delete(c.flight, key)
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
	_, flying := c.flight[key]
	if cached || flying {
		c.mu.Unlock()
		return
	}
	f := &sigFlight{flight: newFlight(context.Background(), context.Background()), prefetch: true}
	c.flight[key] = f
	c.mu.Unlock()
	data, mod, err := read()
	c.land(key, f, data, unixNano(mod), err)
}

// invalidateRefresh drops what a refresh shows may have changed (R1 in
// journalmarks.go): a signature another writer replaced has a new journal
// line (replaced), or one of its fresh lines follows a line of prev gone
// (gone). A directory keeps no journal, and a refresh whose last look is
// older than its window (outlived) cannot tell a line that came and went
// since: the cache starts over. It reports whether a line of prev is gone
// or a list prev held is no longer live: a collection may have forgotten
// signatures the cache holds (Index.dropAbsent).
//
// own is what this index's own appends tell (ownlines.go): when they
// alone changed the journal since prev, a key whose last change was its
// own write keeps its version and bytes; a key that lacks an own line
// since prev lost it to a collection and is dropped.
func (c *sigCache) invalidateRefresh(prev, v *view, outlived bool, own ownLines) (absent bool) {
	at, read := v.journal.take()
	if prev == nil {
		return false
	}
	if v.mode == ModeDirectory || outlived {
		c.clearAll()
		return false
	}
	for _, k := range v.journal.replaced(prev.journal, at) {
		if own.only[k] && c.lastOwn(k) {
			continue // the line of this handle's own write: its bytes are cached
		}
		c.invalidate(k)
	}
	keys, vanished := v.journal.gone(prev.journal, read)
	for _, k := range keys {
		c.invalidate(k)
	}
	lost := v.journal.lacking(prev.journal, at, own.since)
	for _, k := range lost {
		c.invalidate(k)
	}
	return vanished || len(lost) > 0 || prev.mode != v.mode || !subset(prev.listNames, v.listNames)
}

// subset reports whether every name of a is in b.
func subset(a, b []string) bool {
	for _, n := range a {
		if !slices.Contains(b, n) {
			return false
		}
	}
	return true
}

// dropAbsent drops from the signature cache (bytes and size, as a change)
// every signature a folded view v does not hold and this handle did not
// write since: a collection forgot it. A signature put again later has a
// line the refresh that sees it compares with v, which has none. In the
// prefix modes a refresh drops the listings, so what the store holds is
// not known until a lookup lists it again; the journal's lines (gone)
// are what tells there.
func (ix *Index) dropAbsent(v *view) {
	if v.mode != ModeFolded {
		return
	}
	c := ix.sigs
	c.mu.Lock()
	keys := make([]string, 0, len(c.sizes)+len(c.m))
	for k := range c.sizes {
		keys = append(keys, k)
	}
	for k := range c.m {
		if _, ok := c.sizes[k]; !ok {
			keys = append(keys, k)
		}
	}
	c.mu.Unlock()
	for _, k := range keys {
		e, err := format.ParseKey(k)
		if err != nil {
			continue
		}
		if _, ok := v.base.lookup(e.Kind, e.Object, e.Value); ok || ix.own.has(e) {
			continue
		}
		c.invalidate(k)
	}
}

