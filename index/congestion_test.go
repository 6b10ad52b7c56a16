package index

import (
	"testing"
	"time"
)

// serverModel is a server of cpus workers, each GET costing service of
// one worker, behind a wire of rtt: n GETs at once take
// wire + service × ⌈n / cpus⌉ each.
type serverModel struct {
	wire, service time.Duration
	cpus          int
}

func (s serverModel) rtt(n int) time.Duration {
	return s.wire + s.service*time.Duration((n+s.cpus-1)/s.cpus)
}

// settle runs rounds of the controller against the model: each round sends
// allowed() GETs at once, all with the backlog flag set (a reader far
// behind), and returns the limit after the last round.
func settle(t *testing.T, c *congestionWindow, s serverModel, rounds int) int {
	t.Helper()
	clock := time.Unix(0, 0)
	c.now = func() time.Time { return clock }
	for range rounds {
		n := c.allowed()
		if n < c.min || n > c.max {
			t.Fatalf("allowed() = %d, outside [%d, %d]", n, c.min, c.max)
		}
		r := s.rtt(n)
		clock = clock.Add(r)
		for range n {
			c.done(r, false, true)
		}
	}
	return c.allowed()
}

func TestCongestionWindowGrowsToTheCapWhenTheWireIsTheBound(t *testing.T) {
	// 100 ms away, 1 ms of work on each of 2 server CPUs: 64 in flight
	// cost 100 + 32 ms each, well under 1.5 × the 101 ms base.
	c := newCongestionWindow(2, 2, 64)
	if got := settle(t, c, serverModel{wire: 100 * time.Millisecond, service: time.Millisecond, cpus: 2}, 50); got != 64 {
		t.Fatalf("limit at 100 ms = %d, want the cap 64", got)
	}
}

func TestCongestionWindowStaysLowWhenTheServerIsTheBound(t *testing.T) {
	// Next to the server: every GET beyond the 2 CPUs only queues. The
	// limit must stay where a GET takes at most 3 × its unqueued time
	// (≤ 6 in flight).
	c := newCongestionWindow(2, 2, 64)
	s := serverModel{wire: 0, service: time.Millisecond, cpus: 2}
	got := settle(t, c, s, 200)
	if got > 6 || got < 2 {
		t.Fatalf("limit next to a 2-CPU server = %d, want 2..6", got)
	}
	// 5 ms away the same server takes ~10 in flight before a GET
	// queues past 1.5 × its 6 ms base (2 in flight at first): the limit
	// grows past the 2 it started from and stops well short of the cap.
	c = newCongestionWindow(2, 2, 64)
	got = settle(t, c, serverModel{wire: 5 * time.Millisecond, service: time.Millisecond, cpus: 2}, 200)
	if got < 8 || got > 40 {
		t.Fatalf("limit at 5 ms = %d, want between 8 and 40", got)
	}
}

func TestCongestionWindowHalvesOnFailure(t *testing.T) {
	c := newCongestionWindow(16, 2, 64)
	c.done(time.Millisecond, true, true)
	if got := c.allowed(); got != 8 {
		t.Fatalf("after a failure: %d, want 8", got)
	}
	for range 10 {
		c.done(time.Millisecond, true, true)
	}
	if got := c.allowed(); got != 2 {
		t.Fatalf("after many failures: %d, want the floor 2", got)
	}
}

func TestCongestionWindowDoesNotGrowWithoutBacklog(t *testing.T) {
	c := newCongestionWindow(16, 2, 64)
	for range 1000 {
		c.done(time.Millisecond, false, false)
	}
	if got := c.allowed(); got != 16 {
		t.Fatalf("limit with nothing waiting = %d, want 16 unchanged", got)
	}
}

func TestCongestionWindowShrinksOncePerRoundTrip(t *testing.T) {
	c := newCongestionWindow(32, 2, 64)
	clock := time.Unix(100, 0)
	c.now = func() time.Time { return clock }
	c.done(time.Millisecond, false, true) // base 1 ms
	for range 32 {
		c.done(10*time.Millisecond, false, true) // queued, all in one round trip
	}
	if got := c.allowed(); got != 24 {
		t.Fatalf("after one round trip of queued GETs: %d, want 32×3/4 = 24", got)
	}
	clock = clock.Add(10 * time.Millisecond)
	c.done(10*time.Millisecond, false, true)
	if got := c.allowed(); got != 18 {
		t.Fatalf("after the next round trip: %d, want 24×3/4 = 18", got)
	}
}

func TestCongestionWindowBounds(t *testing.T) {
	c := newCongestionWindow(100, 0, 8)
	if c.min != 1 || c.max != 8 || c.allowed() != 8 {
		t.Fatalf("newCongestionWindow(100, 0, 8) = min %d max %d allowed %d, want 1 8 8", c.min, c.max, c.allowed())
	}
	c = newCongestionWindow(1, 4, 2)
	if c.min != 4 || c.max != 4 || c.allowed() != 4 {
		t.Fatalf("newCongestionWindow(1, 4, 2) = min %d max %d allowed %d, want 4 4 4", c.min, c.max, c.allowed())
	}
}
