package store

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStoreClockSamples: a sample replaces the one held when it says the
// store's time is later, or earlier by more than both samples'
// uncertainty (the store's clock was set back); an earlier one within it
// (a Date truncated to the second, stamped during a round trip) is kept
// out, so the estimate never moves back for want of resolution.
func TestStoreClockSamples(t *testing.T) {
	base := time.Now()
	c := &storeClock{local: SystemClock{}}
	if _, _, ok := c.now(); ok {
		t.Fatal("a clock with no sample says it knows the store's time")
	}
	ms := int64(1_700_000_000_000)
	c.observe(ms, time.Second, base, base.Add(100*time.Millisecond))
	at := func() int64 { return c.ms + base.Add(time.Second).Sub(c.at).Milliseconds() }

	// 900 ms later the store says the same second: kept out (it is the
	// second's truncation), the held sample says 900 ms more.
	c.observe(ms, time.Second, base.Add(900*time.Millisecond), base.Add(time.Second))
	if got := at(); got != ms+900 {
		t.Errorf("after a sample within the resolution: %d, want %d", got, ms+900)
	}
	// A later second replaces it.
	c.observe(ms+1000, time.Second, base.Add(900*time.Millisecond), base.Add(time.Second))
	if got := at(); got != ms+1000 {
		t.Errorf("after a later sample: %d, want %d", got, ms+1000)
	}
	// The store's clock set back an hour: followed.
	c.observe(ms-3_600_000, time.Second, base.Add(900*time.Millisecond), base.Add(time.Second))
	if got := at(); got != ms-3_600_000 {
		t.Errorf("after the store's clock went back: %d, want %d", got, ms-3_600_000)
	}
}

// TestObserveDate: a Date header is a sample; a missing or unparsable one
// is none; a fixed clock (Options.StoreClock, mem) takes none.
func TestObserveDate(t *testing.T) {
	now := time.Now()
	c := &storeClock{local: SystemClock{}}
	c.observeDate(http.Header{}, now, now)
	c.observeDate(http.Header{"Date": {"yesterday"}}, now, now)
	if _, _, ok := c.now(); ok {
		t.Fatal("no usable Date, yet a sample")
	}
	d := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	c.observeDate(http.Header{"Date": {d.Format(http.TimeFormat)}}, now, now)
	got, slack, ok := c.now()
	if !ok || got < d.UnixMilli() || got > d.UnixMilli()+time.Since(now).Milliseconds()+1 || slack != time.Second {
		t.Errorf("after a Date of %v: %d (slack %v, ok %v)", d, got, slack, ok)
	}
	fixed := NewFakeClock(42)
	f := newStoreClock(clockDates, SystemClock{}, fixed)
	f.observeDate(http.Header{"Date": {d.Format(http.TimeFormat)}}, now, now)
	if got := f.NowMs(); got != 42 {
		t.Errorf("a fixed store clock reads %d, want 42", got)
	}
}

// TestSkewNamesItsDirection: Skew is local minus store, and CheckClock's
// error names it, its direction and the margin.
func TestSkewNamesItsDirection(t *testing.T) {
	world := NewFakeClock(1_700_000_000_000)
	for _, c := range []struct {
		off     time.Duration
		refused bool
		msg     string
	}{
		{-2 * time.Hour, true, "this host's clock is 2h0m0s behind the store's (mem://; the margin is 4m0s)"},
		{ClockMargin + time.Millisecond, true, "this host's clock is 4m0s ahead of the store's"},
		{ClockMargin, false, ""},
		{-ClockMargin, false, ""},
	} {
		local := NewFakeClock(world.NowMs() + c.off.Milliseconds())
		s := New(nil, "mem", "", Options{Clock: local, StoreClock: world})
		if d, ok := s.Skew(); !ok || d != c.off {
			t.Errorf("%v: Skew %v %v", c.off, d, ok)
		}
		err := s.CheckClock(t.Context())
		if (err != nil) != c.refused {
			t.Errorf("%v: CheckClock %v, want refused %v", c.off, err, c.refused)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: %q does not say %q", c.off, err, c.msg)
		}
	}
}
