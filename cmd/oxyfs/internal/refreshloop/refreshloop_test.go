package refreshloop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// waitLimit bounds a wait for the loop, so a loop that hangs fails the test
// instead of stalling it; it is no measure of speed.
const waitLimit = 20 * time.Second

// loop is a Run under test: its store, index and log.
type loop struct {
	st        *store.Store
	drv       *blobtest.Bucket
	ix        *index.Index
	logs      chan string
	hup       chan os.Signal
	refreshed atomic.Int64 // views published, as the index's subscribers hear them (index.Subscribe)
	cancel    context.CancelFunc
	done      chan struct{}
}

// newLoop folds a mem store with one entry, opens an index on it and runs
// the loop (Every, Quiet from c).
func newLoop(t *testing.T, c Config) *loop {
	t.Helper()
	return newLoopOn(t, c, true)
}

// newLoopOn is newLoop, the store folded or left with its journal alone.
func newLoopOn(t *testing.T, c Config, folded bool) *loop {
	t.Helper()
	ctx := context.Background()
	l := &loop{drv: blobtest.New(nil), logs: make(chan string, 1000), hup: make(chan os.Signal, 1), done: make(chan struct{})}
	l.st = store.New(blob.NewBucket(l.drv), "mem", "", store.Options{Layout: store.LayoutBucket})
	t.Cleanup(func() { l.st.Close() })
	key := format.Entry{Kind: format.KindSig, Object: "ab12", Value: "alice"}.Key()
	if err := l.st.Put(ctx, key, []byte("sig")); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Append(ctx, l.st, []string{key}); err != nil {
		t.Fatal(err)
	}
	if folded {
		if _, err := fold.Complete(ctx, l.st, fold.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := index.Open(ctx, l.st, index.Options{Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	l.ix = ix
	ix.Subscribe(func(ch index.Change) {
		if ch.Kind == index.ChangePublished {
			l.refreshed.Add(1)
		}
	})
	c.Hangup = l.hup
	c.Logf = func(format string, args ...any) { l.logs <- fmt.Sprintf(format, args...) }
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() {
		defer close(l.done)
		Run(runCtx, ix, c)
	}()
	t.Cleanup(l.stop)
	return l
}

// stop cancels the loop's context and waits until Run returned.
func (l *loop) stop() {
	l.cancel()
	<-l.done
}

// next waits for the loop's next log line.
func (l *loop) next(t *testing.T) string {
	t.Helper()
	select {
	case m := <-l.logs:
		return m
	case <-time.After(waitLimit):
		t.Fatalf("no log line from the loop in %s", waitLimit)
		return ""
	}
}

// costOfRefresh is what one refresh of the unchanged store sends, measured
// by a refresh of the test's own.
func costOfRefresh(t *testing.T, l *loop) store.Counts {
	t.Helper()
	before := l.st.Counts()
	if err := l.ix.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l.st.Counts().Sub(before)
}

func requests(c store.Counts) string { return strings.TrimPrefix(c.String(), "requests: ") }

// TestHangupRefreshesOnce: one SIGHUP is one refresh, logged with what it
// sent, and a context that ends stops the loop.
func TestHangupRefreshesOnce(t *testing.T) {
	l := newLoop(t, Config{})
	one := costOfRefresh(t, l)
	before, refreshes := l.st.Counts(), l.ix.Status().Refreshes
	l.refreshed.Store(0) // costOfRefresh's refresh was heard too
	l.hup <- syscall.SIGHUP
	if got, want := l.next(t), "refreshed (SIGHUP): "+requests(one); got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
	l.stop()
	if d := l.st.Counts().Sub(before); d != one {
		t.Errorf("the SIGHUP sent %v, want one refresh: %v", d, one)
	}
	if n := l.ix.Status().Refreshes - refreshes; n != 1 {
		t.Errorf("%d refreshes after one SIGHUP, want 1", n)
	}
	if n := l.refreshed.Load(); n != 1 {
		t.Errorf("subscribers heard %d refreshes, want 1", n)
	}
	if len(l.logs) != 0 {
		t.Errorf("more log lines: %q", <-l.logs)
	}
}

// TestIntervalRefreshesEveryTick: each tick is one refresh, each logged
// (Quiet off, as a mount runs it), until the context ends.
func TestIntervalRefreshesEveryTick(t *testing.T) {
	l := newLoop(t, Config{Every: time.Millisecond})
	for range 3 {
		if got, prefix := l.next(t), "refreshed (interval): "; !strings.HasPrefix(got, prefix) {
			t.Fatalf("log %q, want it to start %q", got, prefix)
		}
	}
	l.stop()
	refreshes := l.ix.Status().Refreshes
	logged := 3 + int64(len(l.logs))
	if refreshes != logged || l.refreshed.Load() != logged {
		t.Errorf("%d refreshes, subscribers heard %d, %d logged: want them equal", refreshes, l.refreshed.Load(), logged)
	}
}

// TestFailedRefreshIsLoggedAndLoopGoesOn: a refresh that fails is logged,
// leaves the view as it was, is not told to subscribers, and the next SIGHUP
// refreshes again.
func TestFailedRefreshIsLoggedAndLoopGoesOn(t *testing.T) {
	l := newLoop(t, Config{})
	entries := l.ix.Status().Entries
	down := errors.New("store down")
	l.drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		if op == blobtest.OpGet && key == format.JournalKey {
			return down
		}
		return nil
	}})
	l.hup <- syscall.SIGHUP
	got := l.next(t)
	if !strings.HasPrefix(got, "refresh (SIGHUP): ") || !strings.HasSuffix(got, "; still serving what was read before") || !strings.Contains(got, down.Error()) {
		t.Fatalf("log %q, want \"refresh (SIGHUP): ...%s...; still serving what was read before\"", got, down)
	}
	if s := l.ix.Status(); s.RefreshFailures != 1 || s.Entries != entries {
		t.Errorf("after the failure: %d failures, %d entries; want 1 and %d", s.RefreshFailures, s.Entries, entries)
	}
	if n := l.refreshed.Load(); n != 0 {
		t.Errorf("subscribers heard %d refreshes after a failed one, want 0", n)
	}
	l.drv.SetHooks(blobtest.Hooks{})
	l.hup <- syscall.SIGHUP
	if got := l.next(t); !strings.HasPrefix(got, "refreshed (SIGHUP): ") {
		t.Fatalf("log %q after the store came back, want a refresh", got)
	}
	if n := l.refreshed.Load(); n != 1 {
		t.Errorf("subscribers heard %d refreshes, want 1", n)
	}
}

// TestQuietLogsOnlyWhatChanged: with Quiet (as serve runs it) an interval
// refresh that changed nothing is not logged, one that did is, and a
// SIGHUP's always is.
func TestQuietLogsOnlyWhatChanged(t *testing.T) {
	l := newLoop(t, Config{Every: time.Millisecond, Quiet: true})
	ctx := context.Background()
	// Wait until a few unchanged interval refreshes ran: none is logged.
	for deadline := time.Now().Add(waitLimit); l.ix.Status().Refreshes < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d interval refreshes in %s", l.ix.Status().Refreshes, waitLimit)
		}
	}
	l.hup <- syscall.SIGHUP
	if got := l.next(t); !strings.HasPrefix(got, "refreshed (SIGHUP): ") {
		t.Fatalf("first log line %q, want the SIGHUP's refresh (an unchanged interval one is not logged)", got)
	}
	key := format.Entry{Kind: format.KindSig, Object: "cd34", Value: "bob"}.Key()
	if err := l.st.Put(ctx, key, []byte("sig")); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Append(ctx, l.st, []string{key}); err != nil {
		t.Fatal(err)
	}
	if got := l.next(t); !strings.HasPrefix(got, "refreshed (interval): ") {
		t.Fatalf("log %q, want the interval refresh that read the new entry", got)
	}
	l.stop()
	if n := l.ix.Status().Entries; n != 2 {
		t.Errorf("%d entries after the refresh, want 2", n)
	}
	if len(l.logs) != 0 {
		t.Errorf("more log lines for an unchanged store: %q", <-l.logs)
	}
}

// TestQuietSaysOnceOfAStoreNotFolded: with Quiet, on a store that is not
// folded every refresh drops the prefix listings and so changes the view;
// the first interval refresh is logged, saying why the next are not, and
// the next are not — a SIGHUP's still is. Before, a mount of an unfolded
// store logged every interval.
func TestQuietSaysOnceOfAStoreNotFolded(t *testing.T) {
	l := newLoopOn(t, Config{Every: time.Millisecond, Quiet: true}, false)
	if s := l.ix.Status(); s.Mode != index.ModePrefixListing {
		t.Fatalf("mode %s, want %s", s.Mode, index.ModePrefixListing)
	}
	got := l.next(t)
	if !strings.HasPrefix(got, "refreshed (interval): ") || !strings.Contains(got, "not folded") {
		t.Fatalf("first log line %q, want the interval refresh saying the store is not folded", got)
	}
	for deadline := time.Now().Add(waitLimit); l.ix.Status().Refreshes < 5; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d interval refreshes in %s", l.ix.Status().Refreshes, waitLimit)
		}
	}
	l.hup <- syscall.SIGHUP
	if got := l.next(t); !strings.HasPrefix(got, "refreshed (SIGHUP): ") {
		t.Fatalf("log %q after more interval refreshes, want only the SIGHUP's", got)
	}
	l.stop()
	if len(l.logs) != 0 {
		t.Errorf("more log lines: %q", <-l.logs)
	}
}
