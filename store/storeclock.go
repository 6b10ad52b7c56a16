package store

// The store's clock (adr-0055 D5: a guard on times is kept on the store's
// clock, not the caller's). Every hour rule (hours.go) compares times that
// writers stamped — folded-at, retired-at — with a writer's or a
// collection's "now", and a reader trusts unchanged records for
// trustWindow (index). When those times come from each host's wall clock,
// a host whose clock is hours off can make a change that should last an
// hour last no time at all. So the times are taken on one clock every host
// reads alike: the store's.
//
//	S3, GCS, Azure  every answer carries a Date header (to the second):
//	                boundedTransport (driver_http.go) hands each to
//	                storeClock.observe with the local monotonic instants
//	                the request was sent and the answer arrived
//	file://         the filesystem stamps mtimes: a probe (MeasureClock, a
//	                temporary file created, stat'ed and removed; never on
//	                a read-only store) reads its clock; until then it is
//	                taken to be this host's kernel clock (a local disk's
//	                mtimes are)
//	mem://          the store lives in this process: its clock is the
//	                Options.Clock
//	Options.StoreClock  any backend: the store's clock is that (tests,
//	                which simulate the store's time as well as the host's)
//
// "Store now" is the newest sample plus the local monotonic time since it
// arrived, so reading it sends nothing. Clock() gives the store's time once
// measured (the local clock until then), so everything stamped and every
// hour compared is on the store's clock; Skew says how far the local clock
// is off it, which folds and collections refuse beyond ClockMargin.

import (
	"context"
	"errors"
	"fmt"
	"github.com/oxyfs/oxyfs/store/format"
	"net/http"
	"sync"
	"time"
)

// ClockMargin is how far the local clock may be off the store's (Skew)
// before a fold or a collection refuses (fold: checkClock) and a handle
// stops trusting unchanged records (index: refreshSnapshot). See
// docs/design.md "The store's clock" for why 4 minutes: every writer
// within it keeps each change to the records at least GracePeriod - 2 ×
// ClockMargin = 52 minutes in store time, above the 50-minute trustWindow
// with 2 minutes left for measuring (a Date is to the second; a round
// trip counts against it too).
const ClockMargin = 4 * time.Minute

// ErrClockSkew is wrapped when the local clock is off the store's by more
// than ClockMargin.
var ErrClockSkew = errors.New("the local clock is off the store's clock")

// ErrNoStoreClock is wrapped when the store gave no time to measure (no Date header on
// any answer).
var ErrNoStoreClock = errors.New("the store gives no time (no Date header on its answers)")

// dateResolution is the resolution of an HTTP Date (RFC 9110: seconds).
const dateResolution = time.Second

// clockSource is where a backend's store time comes from.
type clockSource int

const (
	clockDates  clockSource = iota // the Date of every HTTP answer
	clockKernel                    // file mtimes: this kernel's until probed
	clockOwn                       // mem: the Options.Clock
)

// storeClock measures the store's time.
type storeClock struct {
	fixed Clock // the store's clock when it is read, not measured; nil: measured
	local Clock // the local clock (Options.Clock)

	mu    sync.Mutex    // guards the fields below
	have  bool          // a sample was taken
	ms    int64         // the store's time at at, a lower bound (ms)
	at    time.Time     // local monotonic instant of the sample
	slack time.Duration // how far the store's time at at may be above ms
}

// newStoreClock is the clock of a store whose driver's source is src.
func newStoreClock(src clockSource, local, fixed Clock) *storeClock {
	c := &storeClock{local: local, fixed: fixed}
	switch {
	case fixed != nil:
	case src == clockOwn:
		c.fixed = local
	case src == clockKernel:
		now := time.Now()
		c.have, c.ms, c.at = true, now.UnixMilli(), now
	}
	return c
}

// observe takes one sample: the store's time was at least storeMs, and at
// most storeMs+res, at some instant between sent and arrived (local
// monotonic). A sample replaces the one held when it says the store's
// time is later, or earlier by more than the two samples' uncertainty
// (the store's clock was set back).
func (c *storeClock) observe(storeMs int64, res time.Duration, sent, arrived time.Time) {
	slack := res + arrived.Sub(sent)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.have {
		held := c.ms + arrived.Sub(c.at).Milliseconds()
		if storeMs < held && time.Duration(held-storeMs)*time.Millisecond <= c.slack+slack {
			return
		}
	}
	c.have, c.ms, c.at, c.slack = true, storeMs, arrived, slack
}

// observeDate takes the Date header of an HTTP answer, if it has one.
func (c *storeClock) observeDate(h http.Header, sent, arrived time.Time) {
	if c == nil || c.fixed != nil {
		return
	}
	d := h.Get("Date")
	if d == "" {
		return
	}
	t, err := http.ParseTime(d)
	if err != nil {
		return
	}
	c.observe(t.UnixMilli(), dateResolution, sent, arrived)
}

// now is the store's time now (ms) and how far above it the store's time
// may be; ok is false when nothing was measured.
func (c *storeClock) now() (ms int64, slack time.Duration, ok bool) {
	if c.fixed != nil {
		return c.fixed.NowMs(), 0, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.have {
		return 0, 0, false
	}
	return c.ms + time.Since(c.at).Milliseconds(), c.slack, true
}

// NowMs is the store's time once measured, the local clock's until then.
func (c *storeClock) NowMs() int64 {
	if ms, _, ok := c.now(); ok {
		return ms
	}
	return c.local.NowMs()
}

// StoreNowMs is the store's time now in ms, read from the last sample
// (no request); ok is false while the store has given none.
func (s *Store) StoreNowMs() (ms int64, ok bool) {
	ms, _, ok = s.storeClock.now()
	return ms, ok
}

// StoreNowLatestMs is the latest the store's time can be now (ms): the
// last sample's time plus how far above it the store's may be (a Date is
// to the second, and the server stamped it some time in its round trip).
// A key the store stamped before this call has a Last-Modified no later
// than it, where StoreNowMs, the earliest, may come before the stamp.
func (s *Store) StoreNowLatestMs() (ms int64, ok bool) {
	ms, slack, ok := s.storeClock.now()
	return ms + slack.Milliseconds(), ok
}

// LocalClock is the clock of this host (Options.Clock).
func (s *Store) LocalClock() Clock { return s.clock }

// Skew is how far the local clock is ahead of the store's (negative:
// behind), from the last sample (no request); ok is false while the store
// has given no time. The store's time is taken in the middle of what the
// sample allows (a Date is to the second, and the server stamped it some
// time during the round trip).
func (s *Store) Skew() (d time.Duration, ok bool) {
	ms, slack, ok := s.storeClock.now()
	if !ok {
		return 0, false
	}
	mid := ms + (slack / 2).Milliseconds()
	return time.Duration(s.clock.NowMs()-mid) * time.Millisecond, true
}

// MeasureClock makes sure the store's time is measured, and returns Skew.
// It sends a request only when nothing was measured yet: one HEAD of the
// journal on S3, GCS and Azure (its Date is the sample); on a writable
// file:// store it probes the filesystem's clock once (a temporary file
// created, stat'ed and removed: no request counted). It fails with
// ErrNoStoreClock when the store gives no time.
func (s *Store) MeasureClock(ctx context.Context) (time.Duration, error) {
	if !s.probed.Load() && !s.readOnly {
		if at, err := s.drv.probeClock(ctx); err == nil {
			s.storeClock.observe(at.UnixMilli(), fileTimeResolution, time.Now(), time.Now())
			s.probed.Store(true)
		} else if !errors.Is(err, errNoProbe) {
			return 0, fmt.Errorf("measure the store's clock: %w", err)
		}
	}
	if d, ok := s.Skew(); ok {
		return d, nil
	}
	if _, err := s.Exists(ctx, format.JournalKey); err != nil {
		return 0, fmt.Errorf("measure the store's clock: %w", err)
	}
	if d, ok := s.Skew(); ok {
		return d, nil
	}
	return 0, fmt.Errorf("%s: %w", s.url, ErrNoStoreClock)
}

// CheckClock is MeasureClock, failing with ErrClockSkew (naming the skew)
// when the local clock is more than ClockMargin off the store's.
func (s *Store) CheckClock(ctx context.Context) error {
	d, err := s.MeasureClock(ctx)
	if err != nil {
		return err
	}
	if d > ClockMargin || d < -ClockMargin {
		return &SkewError{Skew: d, URL: s.url}
	}
	return nil
}

// SkewError is ErrClockSkew with the skew measured.
type SkewError struct {
	Skew time.Duration // local minus store
	URL  string        // the store's, redacted
}

func (e *SkewError) Error() string {
	dir := "ahead of"
	d := e.Skew
	if d < 0 {
		dir, d = "behind", -d
	}
	return fmt.Sprintf("%v: this host's clock is %v %s the store's (%s; the margin is %v): set this host's clock right (NTP) and run again",
		ErrClockSkew, d.Round(time.Second), dir, e.URL, ClockMargin)
}

func (e *SkewError) Unwrap() error { return ErrClockSkew }

// errNoProbe: the backend has no probe (its time comes with its answers).
var errNoProbe = errors.New("no clock probe")

// fileTimeResolution bounds an mtime's error as a reading of the
// filesystem's clock (coarse-grained timestamps are a few ms on Linux; a
// network filesystem's server may keep seconds).
const fileTimeResolution = time.Second
