package store

import (
	"sync"
	"time"
)

// Clock gives the wall time in milliseconds that every on-store format records
// (journal folded-at, retired-at). Nothing in oxyfs reads time.Now for those
// outside a Clock, so every hour rule can be tested on a simulated clock.
type Clock interface {
	NowMs() int64
}

// SystemClock is the real wall clock.
type SystemClock struct{}

// NowMs returns the current wall time in milliseconds.
func (SystemClock) NowMs() int64 { return time.Now().UnixMilli() }

// FakeClock is a manually advanced clock for tests.
type FakeClock struct {
	mu sync.Mutex // protects the following; a leaf
	ms int64      // guarded by mu
}

// NewFakeClock returns a clock standing at ms.
func NewFakeClock(ms int64) *FakeClock { return &FakeClock{ms: ms} }

// NowMs returns the clock's current reading.
func (c *FakeClock) NowMs() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ms
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.ms += d.Milliseconds()
	c.mu.Unlock()
}

// Set moves the clock to ms.
func (c *FakeClock) Set(ms int64) {
	c.mu.Lock()
	c.ms = ms
	c.mu.Unlock()
}
