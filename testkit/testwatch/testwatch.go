// Package testwatch arms a watchdog on a test that mounts a FUSE
// filesystem, so that a hang fails the test by its name, with every
// goroutine's stack, instead of sitting until go test's -timeout (which
// names no test once the binary is killed, and in CI sat 5+ minutes with a
// thread in folio_wait_bit_common: a read of a mount waiting on a daemon
// that could not answer).
//
// When the watchdog fires it writes the test's name and all goroutines to
// standard error, aborts the FUSE connections the test registered (Abort:
// /sys/fs/fuse/connections/<minor>/abort, found through
// /proc/self/mountinfo, never by a system call on the mount itself, which
// could hang as well), so a request waiting on a daemon ends with an error,
// and marks the test failed. If the test has still not ended Grace later,
// the binary exits 2 after saying which test hung.
//
// Memory: one timer per armed test. Concurrency: Arm and Watch.Abort are
// safe from any goroutine.
package testwatch

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Limit is how long a test may run after Arm before the watchdog fires;
// OXYFS_TEST_WATCHDOG (a time.ParseDuration string) replaces it.
const Limit = 5 * time.Minute

// Grace is how long the test has to end after the watchdog fired before
// the binary exits.
const Grace = 30 * time.Second

// Watch is one armed watchdog.
type Watch struct {
	t     testing.TB
	mu    sync.Mutex
	dirs  []string // mount points to abort when it fires; guarded by mu
	hooks []func() // run when it fires, before the aborts; guarded by mu
	done  chan struct{}
	out   io.Writer
	exit  func(int)
	fired chan struct{} // closed when it fired (tests)
}

// Arm starts a watchdog for t, stopped by t's cleanup. Call it before the
// mount, so that its cleanup (the unmount) runs under it too.
func Arm(t testing.TB) *Watch {
	t.Helper()
	limit := Limit
	if s := os.Getenv("OXYFS_TEST_WATCHDOG"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("OXYFS_TEST_WATCHDOG=%q: want a positive duration such as 5m", s)
		}
		limit = d
	}
	return arm(t, limit, os.Stderr, os.Exit)
}

func arm(t testing.TB, limit time.Duration, out io.Writer, exit func(int)) *Watch {
	w := &Watch{t: t, done: make(chan struct{}), out: out, exit: exit, fired: make(chan struct{})}
	t.Cleanup(func() { close(w.done) })
	go w.run(limit)
	return w
}

// OnFire registers fn to run when the watchdog fires, before the FUSE
// connections are aborted: to dump what a mount in another process is
// doing (SIGQUIT), say.
func (w *Watch) OnFire(fn func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hooks = append(w.hooks, fn)
}

// Abort registers a mount point whose FUSE connection the watchdog aborts
// when it fires.
func (w *Watch) Abort(dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dirs = append(w.dirs, dir)
}

func (w *Watch) run(limit time.Duration) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-w.done:
		return
	case <-timer.C:
	}
	name := w.t.Name()
	fmt.Fprintf(w.out, "testwatch: %s still running %v after it was armed; all goroutines:\n%s\n", name, limit, stacks())
	w.mu.Lock()
	dirs := append([]string(nil), w.dirs...)
	hooks := append([]func(){}, w.hooks...)
	w.mu.Unlock()
	for _, fn := range hooks {
		fn()
	}
	for _, d := range dirs {
		if err := abortFUSE(d); err != nil {
			fmt.Fprintf(w.out, "testwatch: %s: %v\n", name, err)
		}
	}
	w.t.Errorf("testwatch: %s hung: still running %v after it was armed (goroutines dumped to stderr)", name, limit)
	close(w.fired)
	grace := time.NewTimer(Grace)
	defer grace.Stop()
	select {
	case <-w.done:
	case <-grace.C:
		fmt.Fprintf(w.out, "--- FAIL: %s (hung: still running %v after the watchdog fired; exiting)\n", name, Grace)
		w.exit(2)
	}
}

func stacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// abortFUSE aborts the FUSE connection mounted at dir.
func abortFUSE(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("abort the FUSE connection of %s: %w", dir, err)
	}
	defer f.Close()
	minor, err := mountMinor(f, dir)
	if err != nil {
		return fmt.Errorf("abort the FUSE connection of %s: %w", dir, err)
	}
	p := "/sys/fs/fuse/connections/" + strconv.Itoa(minor) + "/abort"
	if err := os.WriteFile(p, []byte("1"), 0); err != nil {
		return fmt.Errorf("abort the FUSE connection of %s: %w", dir, err)
	}
	return nil
}

// mountMinor finds the device minor of the mount at dir in a mountinfo
// text (proc(5): the third field is major:minor, the fifth the mount point,
// octal-escaped).
func mountMinor(r io.Reader, dir string) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	found := -1
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || unescape(fields[4]) != dir {
			continue
		}
		_, min, ok := strings.Cut(fields[2], ":")
		if !ok {
			return 0, fmt.Errorf("mountinfo: bad device %q", fields[2])
		}
		n, err := strconv.Atoi(min)
		if err != nil {
			return 0, fmt.Errorf("mountinfo: bad device %q: %w", fields[2], err)
		}
		found = n // the last mount on dir is the one on top
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("mountinfo: %w", err)
	}
	if found < 0 {
		return 0, fmt.Errorf("not mounted")
	}
	return found, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
