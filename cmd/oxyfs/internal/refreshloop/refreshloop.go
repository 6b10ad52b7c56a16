// Package refreshloop is the one refresh loop of `oxyfs mount` and `oxyfs
// serve`: it re-reads the store (index.Refresh) on SIGHUP and every
// --refresh-interval until its context ends.
//
// # Model
//
// A refresh that fails is logged, "refresh (why): err; still serving what
// was read before", and the loop goes on: the view stays the one read
// before. A refresh that changed the view (a new generation) gives the
// previous set and the build's transient back to the OS
// (index.SettleMemory). A refresh that succeeded is logged, "refreshed
// (why): requests", with what it sent (Status.LastRefresh) — with Quiet,
// an interval refresh only when it changed the view, and on a store that
// is not folded (every refresh changes it) only the first — once
// index.Refresh has returned: the index's subscribers (a mount, which
// drops what the kernel caches: fs.Server's indexChanged) have then been
// told of its view (index.Subscribe), so the line means the mount shows it.
// Nothing is wired here by hand.
//
// # Concurrency
//
// Run refreshes one at a time, on its own context (context.Background): a
// refresh in flight when ctx ends finishes, and Run returns after it. The
// caller closes the index only once Run has returned.
package refreshloop

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/oxyfs/oxyfs/index"
)

// Config says when and how to refresh.
type Config struct {
	// Every is the refresh interval; 0: only when Hangup delivers.
	Every time.Duration
	// Hangup delivers SIGHUP (signal.Notify): each one is one refresh,
	// logged as "SIGHUP". Nil: none.
	Hangup <-chan os.Signal
	// Logf logs a refresh's result.
	Logf func(format string, args ...any)
	// Quiet logs an interval refresh that succeeded only when it changed
	// the view (a quiet store is refreshed every interval); a SIGHUP's, and
	// a failure, are always logged.
	Quiet bool
}

// Run refreshes ix on every SIGHUP and interval tick until ctx ends.
func Run(ctx context.Context, ix *index.Index, c Config) {
	var tick <-chan time.Time
	if c.Every > 0 {
		t := time.NewTicker(c.Every)
		defer t.Stop()
		tick = t.C
	}
	var said saidUnfolded
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.Hangup:
			refresh(ix, "SIGHUP", c, &said)
		case <-tick:
			refresh(ix, "interval", c, &said)
		}
	}
}

// saidUnfolded is whether Quiet logged an interval refresh of a store that
// is not folded since the view was last folded: in the prefix modes every
// refresh drops the listings and moves the generation, so "changed" says
// nothing there, and only the first is logged (with why the others are
// not). Owned by Run's goroutine.
type saidUnfolded bool

// Start runs Run in the background; stop ends it and returns once a refresh
// in flight has finished. Stop only once.
func Start(ix *index.Index, c Config) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, ix, c)
	}()
	return func() {
		cancel()
		<-done
	}
}

// refresh is one refresh of the loop, why naming what asked for it.
func refresh(ix *index.Index, why string, c Config, said *saidUnfolded) {
	gen := ix.Generation()
	if err := ix.Refresh(context.Background()); err != nil {
		c.Logf("refresh (%s): %v; still serving what was read before", why, err)
		return
	}
	changed := ix.Generation() != gen
	if changed {
		index.SettleMemory(ix) // the previous set and the build's transient back to the OS
	}
	s := ix.Status()
	sent := strings.TrimPrefix(s.LastRefresh.String(), "requests: ")
	unfolded := s.Mode != index.ModeFolded
	if !unfolded {
		*said = false
	}
	switch {
	case !c.Quiet || why == "SIGHUP":
		c.Logf("refreshed (%s): %s", why, sent)
	case unfolded:
		if !*said {
			*said = true
			c.Logf("refreshed (%s): %s; the store is not folded, so every refresh reads its listings afresh: the next interval refreshes are logged only if they fail", why, sent)
		}
	case changed:
		c.Logf("refreshed (%s): %s", why, sent)
	}
}
