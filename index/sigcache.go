package index

import (
	"container/list"
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

// sizeItemBytes is what one remembered size may cost, as a bound: its key
// (79 bytes for a 9-byte signer, in an 80-byte allocation; each GET's key
// is its own string) and its slot in the map. A slot is 49 B (the key's
// 16, sigMeta's 32, a control byte) in tables of 1,024 slots whose
// 50,176 bytes take 7 pages (56 B a slot), and a table that just split is
// 7/16 full: 128 B a size at the worst (sizeSlotBytes), 208 B with the
// key. Measured with a full table of 1<<20 sizes: 192 B a size
// (TestStatedMemoryBoundCoversTheSizesTable). Status.SigSizesBound is
// the table's most sizes at this cost. Longer keys (a long signer's) do
// not take the table past it: their allocations are counted
// (sizeKeyCost), and the table starts over when they would pass their
// share, sizeItemBytes − sizeSlotBytes a size, as when it is full.
const sizeItemBytes = 208

// sizeSlotBytes is a size's slot in the map at the worst (see
// sizeItemBytes); the rest of sizeItemBytes is its key's share.
const sizeSlotBytes = 128

// sizeKeyCost is what a key of n bytes takes on the heap: the size class
// of Go's allocator it falls in (runtime/sizeclasses.go; past the classes,
// whole pages).
func sizeKeyCost(n int) int64 {
	if i, _ := slices.BinarySearch(mallocClasses, n); i < len(mallocClasses) {
		return int64(mallocClasses[i])
	}
	return int64((n + 8191) &^ 8191)
}

// mallocClasses are the size classes of Go's allocator.
var mallocClasses = []int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792,
	2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728,
	10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// sigItemOverhead is what the cache counts per item beyond its key and bytes.
const sigItemOverhead = 96

// sigCache keeps signature bytes read from their own keys: an LRU bounded by
// bytes and the size and digest of signatures read (this file), one GET in
// flight per key (reading: sigread.go fetch), the signatures' versions
// (changes: sigstate.go) and the bytes open readers hold (readers:
// sigopen.go). What a refresh drops is in siginvalidate.go, the reads
// through it in sigread.go; index/doc.go "Signatures, file by file".
type sigCache struct {
	mu     sync.Mutex               // protects the following but seed, now and the atomics; a leaf: nothing is locked or read under it
	max    int64                    // guarded by mu
	sizesN int                      // how many sizes are remembered at most; guarded by mu
	bytes  int64                    // guarded by mu
	ll     *list.List               // of *sigItem, most recent first; guarded by mu
	m      map[string]*list.Element // guarded by mu
	sizes  map[string]sigMeta       // guarded by mu; changed only by setSizeLocked, dropSizeLocked and clearSizesLocked
	// sizeKeys is what the keys of sizes take (sizeKeyCost each); guarded
	// by mu.
	sizeKeys int64
	reading  map[string]*sigSharedRead // the read of each key in flight (sigread.go fetch); guarded by mu, and so is each one's waiters and own fields
	seed     maphash.Seed              // of the digests; read-only after newSigCache

	changes sigChanges       // when signatures last changed, their versions (sigstate.go); guarded by mu
	watch   sigWatch         // who is told of changes (subscribe.go); guarded by mu
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

func newSigCache(max int64, sizes int) *sigCache {
	c := &sigCache{max: max, sizesN: sizes, ll: list.New(), m: map[string]*list.Element{}, sizes: map[string]sigMeta{}, reading: map[string]*sigSharedRead{}, seed: maphash.MakeSeed(), now: time.Now}
	c.readers.init(max)
	return c
}

// digest is the sum sigMeta keeps of data.
func (c *sigCache) digest(data []byte) uint64 { return maphash.Bytes(c.seed, data) }

// sizesBound is what the table of sizes may hold: sizesN × sizeItemBytes.
func (c *sigCache) sizesBound() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(c.sizesN) * sizeItemBytes
}

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
	c.dropSizeLocked(key)
	if len(c.sizes) >= c.sizesN || c.sizeKeys+sizeKeyCost(len(key)) > int64(c.sizesN)*(sizeItemBytes-sizeSlotBytes) {
		c.clearSizesLocked()
		c.allChangedLocked() // a size forgotten here can no longer be compared
	}
	c.setSizeLocked(key, meta)
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

// setSizeLocked remembers meta for key, counting its key (sizeKeys).
func (c *sigCache) setSizeLocked(key string, meta sigMeta) {
	if _, ok := c.sizes[key]; !ok {
		c.sizeKeys += sizeKeyCost(len(key))
	}
	c.sizes[key] = meta
}

// dropSizeLocked forgets key's size.
func (c *sigCache) dropSizeLocked(key string) {
	if _, ok := c.sizes[key]; ok {
		delete(c.sizes, key)
		c.sizeKeys -= sizeKeyCost(len(key))
	}
}

// clearSizesLocked forgets every size.
func (c *sigCache) clearSizesLocked() {
	clear(c.sizes)
	c.sizeKeys = 0
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
	c.dropSizeLocked(key) // replaced here: no read to compare with
	c.insertLocked(key, data, sum, mod)
	c.ownChangedLocked(key) // once, and last (ownlines.go)
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
