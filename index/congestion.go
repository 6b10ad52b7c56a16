package index

import (
	"sync"
	"time"
)

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
