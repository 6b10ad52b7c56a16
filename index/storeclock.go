package index

import (
	"fmt"
	"math"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// The trust window on the store's clock (issue 22 item 7; adr-0055 D5).
// A refresh trusts a folded view's unchanged records for trustWindow
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
// that far off may run writers that stamp it. Each says so once. Such a
// refresh also starts the signature cache over, as a directory's does,
// since no journal can say what came and went over a gap it cannot
// measure. One function (lookTrusted) answers for both, once a refresh.

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

// trustWindow is how long a look at the journal and the retired record lets
// a refresh trust their unchanged bytes: the hour every change to them
// lasts, less a margin for clocks (docs/design.md §8 "Why only within the
// hour", §11 "Why 4 minutes").
const trustWindow = format.GracePeriod - 10*time.Minute

// lookTrusted is the trust window, the one question a refresh asks of it
// (once, at its start: refreshRun.trusted): is this handle's last look at
// the records known, on the store's clock, to be less than trustWindow
// old, with this host's clock within store.ClockMargin of the store's? If
// so, records found unchanged are trusted (the refresh sends 2 GETs) and
// the journal's line counts vouch for the cached signatures. If not, the
// refresh lists the pack prefix and the signature cache starts over: the
// journal cannot tell what came and went over a gap it cannot measure. A
// look of unknown time (lookUnknown: a store whose answers carry no Date)
// is never within it.
func (ix *Index) lookTrusted() bool {
	looked := ix.lookedAt.Load()
	now, known := ix.st.StoreNowMs()
	if !known || looked == lookUnknown {
		ix.warnOnce("clock:none", fmt.Sprintf("refresh: %v: every refresh lists the pack prefix and reads every signature again (unchanged records are trusted only for a time measured on the store's clock)", store.ErrNoStoreClock))
		return false
	}
	if d, ok := ix.st.Skew(); ok && (d > store.ClockMargin || d < -store.ClockMargin) {
		ix.warnOnce("clock:skew", fmt.Sprintf("refresh: %v; every refresh lists the pack prefix and reads every signature again while it is", &store.SkewError{Skew: d, URL: ix.st.URL()}))
		return false
	}
	return now-looked < trustWindow.Milliseconds()
}
