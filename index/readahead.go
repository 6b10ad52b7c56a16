package index

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// Read-ahead defaults (Options.ReadAhead, Options.ReadAheadWorkers).
const (
	// DefaultReadAhead is how many signatures past the one read are fetched
	// when Options.ReadAhead is 0 and the GETs in flight are at most 64;
	// past that, four times the most GETs in flight, so the window, not
	// the reader, keeps them busy.
	DefaultReadAhead = 256
	// readAheadUncapped is the most read-ahead GETs in flight when neither
	// Options.ReadAheadWorkers nor the store (store.Options.MaxRequests)
	// caps them.
	readAheadUncapped = 1024
	// readAheadMinWorkers is the floor, and the start, of the adapted
	// number of read-ahead GETs in flight.
	readAheadMinWorkers = 4
	// readAheadFirst is the window after a read that does not follow the
	// previous one (a jump, or the first read); each read that follows
	// doubles it, up to the configured window.
	readAheadFirst = 8
)

// readAheadWorkers is the most read-ahead GETs in flight: Options.ReadAheadWorkers,
// or (0) the store's cap on requests in flight (store.Options.MaxRequests,
// `--max-requests`) but an eighth of it, left to the readers and to
// everything else the handle sends; never more than the store's cap. How
// many run is adapted below it from the round trips (congestionWindow, below): far from
// the server the depth grows until the wire is no longer the bound (at 100
// ms, 224 in flight read 2,240 signatures a second), next to it a handful
// keep the server busy and more only queue.
func readAheadWorkers(workers, storeCap int) int {
	switch {
	case workers <= 0 && storeCap > 0:
		workers = storeCap - storeCap/8
	case workers <= 0:
		workers = readAheadUncapped
	}
	floor := readAheadMinWorkers
	if storeCap > 0 {
		workers = min(workers, storeCap)
		floor = min(floor, storeCap) // never past the store's cap (--max-requests 1 to 3)
	}
	return max(workers, floor)
}

// readAhead fetches the signatures that follow, in key order, the one a
// caller reads (ReadSig, OpenSig) or sizes (SigStat): the same object's other
// signers, then the following objects' signatures, up to n ahead. A `cat`
// of every signature in order then finds each one fetched already, or in
// flight, and waits for at most one round trip of several.
//
// It is triggered only by reading a signature, never by ReadDir or Stat: a
// `find` over the tree stays free. It sends one GET per signature whose
// bytes are neither cached nor being fetched, through the signature cache's
// fetch, so a key is never fetched twice at once whoever asked first; the
// bytes go into the bounded cache (sizes remembered). At most
// Options.ReadAheadWorkers GETs run at once, fewer when the round trips show
// the server queueing (congestionWindow); the queue holds at most n keys (on a
// jump, the keys of the old window are dropped first). Close cancels what
// is in flight and waits for the workers.
//
// A reader that follows the window does not extend it by one key a read:
// while more than half of it is still ahead nothing is queued, then it is
// refilled to its full length at once. One key queued a read made the
// workers drain the queue and exit between reads, so every signature read
// started a worker goroutine and woke a thread for its lone GET (the
// mount's cold `cat`, docs/performance.md, Target 3); a batch keeps the
// workers going back to back, and the window is never more than n.
//
// The window is taken from the entries in memory: on a folded store, every
// signature; in the prefix modes, the journal's signatures and the other
// signers of the object read, if its listing is cached. Read-ahead never
// lists. Own writes are cached when written.
type readAhead struct {
	ix     *Index             // read-only after init
	n      int                // read-only after init
	cwnd   *congestionWindow  // how many workers (batches) may be in flight: adapted from their round trips; read-only after init, locks itself
	most   int                // the most GETs in flight (readAheadWorkers); read-only after init
	ctx    context.Context    // read-only after init
	cancel context.CancelFunc // read-only after init

	mu      sync.Mutex      // protects the following but wg; taken before sigCache.mu, prefixCache.mu and congestionWindow.mu
	closed  bool            // guarded by mu
	queue   []string        // keys to fetch, oldest first; guarded by mu
	queued  map[string]bool // in the queue or being fetched by a worker; guarded by mu
	running int             // workers; guarded by mu
	flying  int             // keys the workers took and have not finished: GETs in flight; guarded by mu
	peak    int             // the most GETs in flight at once; guarded by mu
	sent    int64           // GETs the workers sent; guarded by mu
	refills int64           // triggers that extended the window (scanned keys to queue); guarded by mu
	spawned int64           // workers started; guarded by mu
	wg      sync.WaitGroup  // not guarded by mu: Add under it, Done and Wait (close) outside it
	// frontier: on view fv, every signature entry of fv.base up to index fj
	// has been considered. A trigger inside the window only scans past it.
	fv    *view  // guarded by mu
	fj    int    // guarded by mu
	win   int    // the current window: grows while reads follow each other; guarded by mu
	lastP int    // the entry after the last signature read; guarded by mu
	last  string // the key of the last signature read: a queued key not after it is stale; guarded by mu

	// lp: what listings schedule (statprefetch.go). Atomics.
	lp listPrefetch
}

func (ra *readAhead) init(ix *Index, n, workers int) {
	workers = readAheadWorkers(workers, ix.st.MaxRequests())
	if n == 0 {
		n = max(DefaultReadAhead, 4*workers)
	}
	ra.ix, ra.n = ix, n
	lo := min(readAheadMinWorkers, workers)
	ra.cwnd = newCongestionWindow(lo, lo, workers)
	ra.most = workers
	ra.ctx, ra.cancel = context.WithCancel(context.WithValue(context.Background(), readAheadKey{}, true))
	ra.queued = make(map[string]bool)
}

// trigger schedules the signatures after e. It sends nothing itself.
func (ra *readAhead) trigger(v *view, e format.Entry) {
	if ra.n <= 0 || v == nil {
		return
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if ra.closed {
		return
	}
	k := &v.base.kinds[format.KindSig]
	p := nextEntry(k, &v.base.vt, e)
	if ra.fv == v && p == ra.lastP {
		return // the same signature again: nothing new to schedule
	}
	ra.lastP, ra.last = p, e.Key()
	follows := ra.fv == v && p <= ra.fj+1 && p >= ra.fj+1-ra.win
	if follows {
		ra.win = min(2*ra.win, ra.n)
	} else {
		ra.win = min(readAheadFirst, ra.n)
	}
	// A quarter of what the cache holds at most: the signatures read lately
	// stay in it as long as those fetched ahead (an LRU cannot tell them
	// apart), and what is fetched ahead must still be there when it is read.
	win := max(1, min(ra.win, ra.ix.sigs.itemsFitting()/4))
	end := min(p+win, k.nEntries())
	from := p
	if follows && ra.fj+1 > p {
		from = ra.fj + 1 // scan only what the window gained
	}
	if follows && ra.fj+1-p > win/2 {
		// More than half the window is still ahead: nothing is added
		// yet; the window is refilled in batches (see readAhead).
		end = from
	}
	var buf []byte
	if from < end {
		ra.refills++
		i := objectOf(k, from)
		for j := from; j < end; j++ {
			for uint32(j) >= k.first[i+1] {
				i++
			}
			buf = appendSigKey(buf[:0], k.obj(i), &v.base.vt, k.vals[j])
			ra.addLocked(string(buf))
		}
	}
	if !follows || end-1 > ra.fj {
		ra.fv, ra.fj = v, end-1
	}
	if v.pc != nil {
		// Prefix modes: the object's other signers, if already listed.
		if got, ok := v.pc.peek("obj|" + format.KindSig.String() + "/" + e.Object); ok {
			for _, es := range got.([]entrySource) {
				if es.val > e.Value && es.sig == nil {
					ra.addLocked(format.Entry{Kind: format.KindSig, Object: e.Object, Value: es.val}.Key())
				}
			}
		}
	}
	ra.spawnLocked()
}

// spawnLocked starts workers while the queue has keys and fewer run than
// the limit allows, each with its first batch.
func (ra *readAhead) spawnLocked() {
	for !ra.closed && len(ra.queue) > 0 && ra.running < ra.cwnd.allowed() {
		keys := ra.takeLocked()
		if len(keys) == 0 {
			return
		}
		ra.running++
		ra.spawned++
		ra.wg.Add(1)
		go ra.work(keys)
	}
}

// takeLocked takes a worker's next batch off the queue: as many keys as
// the store writes on one connection ahead of their answers
// (store.Pipeline's depth; 1 where it does not pipeline), and no more than
// leave the GETs in flight within the most (readAheadWorkers). Keys the
// reader passed are dropped.
//
// The limit (congestionWindow) counts workers, each one batch in flight
// on its own connection, and learns from each batch's first answer: with
// batches of one, as before, it counts GETs; pipelined, what queues in
// the server is the batches, and a batch's first answer comes about when
// one GET's would (the server answers a connection's requests in turn).
func (ra *readAhead) takeLocked() []string {
	n := min(ra.batch(), ra.most-ra.flying)
	var keys []string
	for len(ra.queue) > 0 && len(keys) < n {
		key := ra.queue[0]
		ra.queue = ra.queue[1:]
		if key <= ra.last {
			// The reader got there first (and read it itself); it may
			// even have left the cache since: do not fetch it again.
			delete(ra.queued, key)
			continue
		}
		keys = append(keys, key)
	}
	ra.flying += len(keys)
	ra.peak = max(ra.peak, ra.flying)
	return keys
}

// batch is how many keys a worker sends at once.
func (ra *readAhead) batch() int {
	if st, ok := ra.ix.st.Pipeline(); ok {
		return max(1, st.Depth)
	}
	return 1
}

// addLocked queues key unless it is cached, queued or being fetched.
func (ra *readAhead) addLocked(key string) {
	if ra.queued[key] || ra.ix.sigs.has(key) {
		return
	}
	if len(ra.queue) >= ra.n {
		delete(ra.queued, ra.queue[0])
		ra.queue = ra.queue[1:]
	}
	ra.queue = append(ra.queue, key)
	ra.queued[key] = true
}

// work fetches keys, then the batches it takes after them, until the
// queue is empty, the limit is reached or read-ahead is closed.
func (ra *readAhead) work(keys []string) {
	defer ra.wg.Done()
	for {
		rtt, sent, failed := ra.fetch(keys)
		ra.mu.Lock()
		ra.flying -= len(keys)
		for _, key := range keys {
			delete(ra.queued, key)
		}
		if sent > 0 {
			ra.sent += int64(sent)
			ra.cwnd.done(rtt, failed, len(ra.queue) > 0)
		}
		keys = nil
		if !ra.closed && ra.running <= ra.cwnd.allowed() {
			keys = ra.takeLocked()
		}
		if len(keys) == 0 {
			ra.running--
			ra.spawnLocked()
			ra.mu.Unlock()
			return
		}
		ra.spawnLocked()
		ra.mu.Unlock()
	}
}

// fetch reads keys into the signature cache (those cached or being read
// already aside), as one batch of the store's (GetAdmittedBatch: pipelined
// where it can). Errors are not kept: a reader that asks later reads the
// key itself. It returns the first answer's round trip (what one GET of
// the batch took, its answer not queued behind others), how many GETs
// were sent, and whether one failed in a way that says the server wants
// fewer (congestionWindow): a key gone since the set was read
// (store.ErrNotFound) says nothing of the server's load, nor does a
// close, nor a GET the readers' budget refused (ErrBusy).
func (ra *readAhead) fetch(keys []string) (rtt time.Duration, sent int, failed bool) {
	ra.ix.sigs.prefetchBatch(keys, func(keys []string, land func(i int, data []byte, mod time.Time, err error)) {
		// Checked again once the reads are registered: a reader that got
		// there in between read it itself (and it may have left the cache
		// already).
		send := make([]string, 0, len(keys))
		at := make([]int, 0, len(keys))
		for i, key := range keys {
			if ra.stale(key) {
				land(i, nil, time.Time{}, errStale)
				continue
			}
			send, at = append(send, key), append(at, i)
		}
		if len(send) == 0 {
			return
		}
		t0 := time.Now()
		ra.ix.st.GetAdmittedBatch(ra.ctx, send, ra.ix.sigs.reserve, func(j int, data []byte, mod time.Time, err error) {
			if sent++; sent == 1 {
				rtt = time.Since(t0)
			}
			if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, ErrBusy) && ra.ctx.Err() == nil {
				failed = true
			}
			land(at[j], data, mod, err)
		})
	})
	return rtt, sent, failed
}

// ReadAheadStats is read-ahead's depth (Status.ReadAhead).
type ReadAheadStats struct {
	Max   int   `json:"max"`   // the most GETs in flight it may send (readAheadWorkers)
	Limit int   `json:"limit"` // how many workers (each a batch of GETs in flight: store.Pipeline's depth, or 1) may run now, adapted (congestionWindow)
	Peak  int   `json:"peak"`  // the most GETs it had in flight at once
	Depth int   `json:"depth"` // the window: signatures fetched ahead at most
	Sent  int64 `json:"sent"`  // GETs it sent since the index opened
	// Queued: signatures waiting to be fetched or being fetched now.
	Queued int `json:"queued"`

	// Listings: directories of signatures a listing (or its first stat) scheduled (statprefetch.go).
	Listings int64 `json:"listings"`

	// ReadPath is how the store reads signatures (store.ReadPath): the
	// lean path, pipelined or not and why, or the SDK's.
	ReadPath string `json:"read_path"`
	// Pipeline is what the store's pipelined GETs did (store.Pipeline):
	// the depth now, the batches written, the connections a server cut
	// with GETs owed; nil where it does not pipeline.
	Pipeline *store.PipelineStats `json:"pipeline,omitempty"`
}

func (ra *readAhead) stats() ReadAheadStats {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	st := ReadAheadStats{Max: ra.most, Limit: ra.cwnd.allowed(), Peak: ra.peak, Depth: ra.n, Sent: ra.sent, Queued: len(ra.queued), Listings: ra.lp.listings.Load(), ReadPath: ra.ix.st.ReadPath()}
	if ps, ok := ra.ix.st.Pipeline(); ok {
		st.Pipeline = &ps
	}
	return st
}

// forget drops the frontier's view, so a refresh's old set is not kept
// alive by it; the next read starts a new window.
func (ra *readAhead) forget() {
	ra.mu.Lock()
	ra.fv = nil
	ra.mu.Unlock()
}

type readAheadKey struct{}

// IsReadAhead reports whether ctx is that of a read-ahead GET: a store
// driver (or a test's) can tell the GETs sent ahead of readers from theirs.
func IsReadAhead(ctx context.Context) bool {
	on, _ := ctx.Value(readAheadKey{}).(bool)
	return on
}

// errStale ends a read-ahead fetch the reader overtook.
var errStale = errors.New("read-ahead overtaken by the reader")

func (ra *readAhead) stale(key string) bool {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	return key <= ra.last
}

// close cancels the GETs in flight and waits for the workers to stop.
func (ra *readAhead) close() {
	ra.mu.Lock()
	ra.closed = true
	ra.queue = nil
	clear(ra.queued)
	ra.mu.Unlock()
	ra.cancel()
	ra.wg.Wait()
}

// nextEntry returns the index of the first signature entry of k after e.
func nextEntry(k *kindSet, vt *vtab, e format.Entry) int {
	var buf [format.MaxObjectBytes]byte
	ob, ok := format.DecodeObjectID(e.Object, &buf)
	if !ok || k.nObj() == 0 {
		return k.nEntries()
	}
	i, found := k.findObj(ob)
	if !found {
		if i >= k.nObj() {
			return k.nEntries()
		}
		return int(k.first[i])
	}
	j, found := k.findVal(vt, i, e.Value)
	if found {
		j++
	}
	return j
}

// objectOf returns the object that entry j belongs to.
func objectOf(k *kindSet, j int) int {
	lo, hi := 0, k.nObj()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if k.first[m+1] <= uint32(j) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// appendSigKey appends sig/<hh>/<rest>/<value> for a packed object id.
func appendSigKey(dst, ob []byte, vt *vtab, val uint32) []byte {
	return vt.appendTo(format.AppendObjectPrefix(dst, format.KindSig, ob), val)
}

// congestionWindow decides how many read-ahead GETs may be in flight: as many as
// the round trip needs, no more than the server can take.
//
// The bound that matters differs with the distance to the server. Far from
// it (20 ms, 100 ms a request), each GET waits on the wire and the server
// is idle: more in flight means proportionally more signatures a second,
// and 16 at 100 ms is only 160 a second. Next to it (0–1 ms), the server
// and the two processes' CPUs are the bound: more in flight only queues
// requests inside the server, makes each one slower and takes CPU from the
// reader. So the limit is adapted from what the GETs themselves show, as a
// delay-based congestion window does (TCP Vegas, BBR):
//
//   - base is the shortest round trip seen since the last probe: what a
//     GET costs when it does not queue.
//   - A GET that took at most 1.5 × base shows the requests are not
//     queueing: while there is more to fetch than is in flight, the limit
//     grows by one per such GET — it doubles in one round trip at most,
//     up to max.
//   - A GET that took over 3 × base shows queueing: the limit shrinks by a
//     quarter, at most once per round trip (the GETs already in flight
//     carry the same news), down to min.
//   - A failed GET (not one the reader overtook or a close canceled) —
//     a throttle, a timeout, a dropped connection — halves the limit at
//     once: errors are the server asking for less.
//   - Every probeEvery GETs the limit drops to min; once the GETs sent
//     before have finished, the next 2 × min GETs (BBR's PROBE_RTT) give
//     the new base, their shortest round trip; then the limit is restored. Without it a limit that grew
//     would only ever see queued round trips, and a base taken from them
//     would let it grow further; with it a slower server or a longer path
//     is noticed within probeEvery GETs. It costs a few round trips at
//     the floor in every probeEvery GETs.
//
// The limit starts at start, low, so the first round trips show what an
// unqueued GET costs. All methods are safe for concurrent use.
type congestionWindow struct {
	min, max int // read-only after newCongestionWindow

	mu       sync.Mutex       // protects the following; a leaf: nothing else is locked under it
	limit    float64          // guarded by mu
	base     time.Duration    // the shortest round trip since the last probe (0: none yet); guarded by mu
	samples  int              // GETs since the last probe ended; guarded by mu
	draining int              // GETs sent before the probe, still to finish (not measured); guarded by mu
	probing  int              // GETs still to see in the probe (0: not probing); guarded by mu
	probeMin time.Duration    // the shortest round trip of the probe so far; guarded by mu
	saved    float64          // the limit before the probe; guarded by mu
	lastDrop time.Time        // when the limit last shrank for delay; guarded by mu
	now      func() time.Time // read-only after newCongestionWindow (tests set it first)
}

// probeEvery is how many GETs pass between two probes of the base.
const probeEvery = 2048

// newCongestionWindow starts at start, kept within [lo, hi] (lo at least 1, hi at
// least lo).
func newCongestionWindow(start, lo, hi int) *congestionWindow {
	lo = max(lo, 1)
	hi = max(hi, lo)
	return &congestionWindow{min: lo, max: hi, limit: float64(min(max(start, lo), hi)), now: time.Now}
}

// allowed is how many GETs may be in flight now.
func (c *congestionWindow) allowed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int(c.limit)
}

// done records one finished GET: its round trip, whether it failed (only
// a real failure counts), and whether keys were still queued, not yet sent,
// when it finished (only then is growing useful).
func (c *congestionWindow) done(rtt time.Duration, failed, backlog bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if failed {
		c.limit = max(float64(c.min), c.limit/2)
		c.saved = max(float64(c.min), c.saved/2)
		return
	}
	rtt = max(rtt, time.Nanosecond)
	if c.draining > 0 {
		c.draining-- // sent before the probe began: queued behind the old limit
		return
	}
	if c.probing > 0 {
		if c.probeMin == 0 || rtt < c.probeMin {
			c.probeMin = rtt
		}
		if c.probing--; c.probing == 0 {
			c.base, c.limit, c.samples = c.probeMin, c.saved, 0
		}
		return
	}
	if c.base == 0 || rtt < c.base {
		c.base = rtt
	}
	if c.samples++; c.samples >= probeEvery {
		c.saved, c.limit = c.limit, float64(c.min)
		c.draining, c.probing, c.probeMin = int(c.saved)-1, 2*c.min, 0
		return
	}
	switch {
	case rtt <= c.base*3/2:
		if backlog {
			c.limit = min(float64(c.max), c.limit+1)
		}
	case rtt > 3*c.base:
		now := c.now()
		if now.Sub(c.lastDrop) >= rtt {
			c.limit = max(float64(c.min), c.limit*3/4)
			c.lastDrop = now
		}
	}
}
