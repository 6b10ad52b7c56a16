package index

import (
	"fmt"
	"math"
	"time"

	"github.com/oxyfs/oxyfs/store"
)

// The trust window on the store's clock (issue 22 item 7; adr-0055 D5).
// refreshSnapshot trusts a folded view's unchanged records for trustWindow
// after its last look at them, because every change to them lasts an hour.
// That hour is kept on the store's clock: writers stamp and compare the
// store's time (store.Store.Clock), and folds and collections refuse on a
// host whose clock is more than store.ClockMargin off it (fold:
// checkClock). So the window is measured on the store's clock too: lookedAt
// and "now" are store.Store.StoreNowMs, the last Date (or mtime) the store
// gave plus the local monotonic time since, which costs no request; a step
// of this host's wall clock, or a wall clock hours off, changes nothing.
//
// A handle trusts nothing (it lists the pack prefix on each refresh, as a
// handle on a store that is not folded does) while the store's time is not
// known — a store whose answers carry no Date — or while this host's clock
// is more than store.ClockMargin off the store's: a host whose clock is
// that far off may run writers that stamp it. Each says so once. A look of
// unknown time is also outlived (lookOutlived): each refresh then starts
// the signature cache over, as a directory's does, since no journal can
// say what came and went over a gap it cannot measure. One function
// (lookAge) measures the look for both.

// lookUnknown is lookedAt for a look whose time on the store's clock is
// not known: a refresh after it lists.
const lookUnknown = math.MinInt64

// lookStart is called when a look at the records starts; the function it
// returns, called when the look is done, gives the look's time on the
// store's clock for lookedAt. A first open of an HTTP store knows the
// store's time only from the look's own answers: the time is then
// counted back from the sample by the local monotonic time the look took
// (the earliest the look can have started, so the window is never
// stretched).
func (ix *Index) lookStart() (done func() int64) {
	if ms, ok := ix.st.StoreNowMs(); ok {
		return func() int64 { return ms }
	}
	mono := time.Now()
	return func() int64 {
		if ms, ok := ix.st.StoreNowMs(); ok {
			return ms - time.Since(mono).Milliseconds()
		}
		return lookUnknown
	}
}

// trustsRecords reports whether a refresh may trust the records it finds
// unchanged: the store's time is known, this host's clock is within
// store.ClockMargin of it, and the last look was less than trustWindow
// ago on the store's clock (lookWithin).
func (ix *Index) trustsRecords() bool {
	if _, ok := ix.lookAge(); !ok {
		ix.warnOnce("clock:none", fmt.Sprintf("refresh: %v: every refresh lists the pack prefix and reads every signature again (unchanged records are trusted only for a time measured on the store's clock)", store.ErrNoStoreClock))
		return false
	}
	if d, ok := ix.st.Skew(); ok && (d > store.ClockMargin || d < -store.ClockMargin) {
		ix.warnOnce("clock:skew", fmt.Sprintf("refresh: %v; every refresh lists the pack prefix while it is", &store.SkewError{Skew: d, URL: ix.st.URL()}))
		return false
	}
	return ix.lookWithin()
}

// lookAge is how long ago, on the store's clock (ms), this handle last
// looked at the records; ok is false when that is not known: the look's
// time was not known (lookUnknown) or the store gives no time now.
// Everything that measures the trust window measures it here.
func (ix *Index) lookAge() (ms int64, ok bool) {
	looked := ix.lookedAt.Load()
	now, known := ix.st.StoreNowMs()
	if !known || looked == lookUnknown {
		return 0, false
	}
	return now - looked, true
}

// lookWithin reports whether the last look at the records is known and
// less than trustWindow old. A look of unknown time is not: a handle on a
// store that gives no time trusts no unchanged record and no cached
// signature across a refresh.
func (ix *Index) lookWithin() bool {
	age, ok := ix.lookAge()
	return ok && age < trustWindow.Milliseconds()
}
