package fs

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// Store reads cut short by an interrupt and by an unmount (reqctx.go).
// The store's GETs of one signature hang until released or until their
// context is done; the store's own timeout is 10 minutes, so a test that
// passes saw the GET's context done, not the timeout. The readers are
// child processes (cat, stat): a read of the mount from this process,
// the daemon's, can deadlock on a page lock.

// hungGet holds the GETs of one key (blobtest's Before hook).
type hungGet struct {
	key      string
	gets     atomic.Int32  // GETs of key begun
	started  chan struct{} // closed when the first began
	canceled chan struct{} // closed when a held GET saw its context done
	release  chan struct{} // closed by free: held GETs go on
	once     sync.Once     // closes started
	cOnce    sync.Once     // closes canceled
	rOnce    sync.Once     // closes release
}

func (h *hungGet) before(ctx context.Context, op blobtest.Op, key string) error {
	if op != blobtest.OpGet || key != h.key {
		return nil
	}
	h.gets.Add(1)
	h.once.Do(func() { close(h.started) })
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		h.cOnce.Do(func() { close(h.canceled) })
		return ctx.Err()
	}
}

func (h *hungGet) free() { h.rOnce.Do(func() { close(h.release) }) }

// wasCanceled reports whether a held GET saw its context done.
func (h *hungGet) wasCanceled() bool {
	select {
	case <-h.canceled:
		return true
	default:
		return false
	}
}

// mountHung mounts a store of one signature whose GETs hang (hungGet),
// released at cleanup before the unmount.
func mountHung(t *testing.T) (*Server, string, []byte, *hungGet, *logs) {
	t.Helper()
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, RequestTimeout: 10 * time.Minute})
	t.Cleanup(func() { st.Close() })
	e := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	data := []byte("# the signature's bytes\n")
	if err := st.Put(context.Background(), e.Key(), data); err != nil {
		t.Fatal(err)
	}
	storefixture.WriteEntryList(t, st, true, e)
	ix := openIndex(t, st)
	srv, l := testMount(t, ix, Options{})
	h := &hungGet{key: e.Key(), started: make(chan struct{}), canceled: make(chan struct{}), release: make(chan struct{})}
	drv.SetHooks(blobtest.Hooks{Before: h.before})
	t.Cleanup(h.free) // before the unmount (cleanups run last first)
	return srv, srv.path(e), data, h, l
}

// waitFor waits for ch, failing the test with what after a minute (a
// guard against a hang, not a measure: the watchdog is the last one).
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("still waiting after a minute for %s", what)
	}
}

// startChild starts name with args, its output kept; exited is closed
// once it has been waited for, with its error in *werr. At cleanup h's
// GETs are released first: a child waiting on one cannot be killed.
func startChild(t *testing.T, h *hungGet, name string, args ...string) (cmd *exec.Cmd, out *bytes.Buffer, exited chan struct{}, werr *error) {
	t.Helper()
	cmd = exec.Command(name, args...)
	out = new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, werr = make(chan struct{}), new(error)
	go func() { *werr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		h.free()
		_ = cmd.Process.Kill()
		<-exited
	})
	return cmd, out, exited, werr
}

// countWaits counts the requests that wait on a store read
// (testHookReqWaits) until the test ends.
func countWaits(t *testing.T) *atomic.Int32 {
	var n atomic.Int32
	fn := func() { n.Add(1) }
	testHookReqWaits.Store(&fn)
	t.Cleanup(func() { testHookReqWaits.Store(nil) })
	return &n
}

// waitCount waits until n reaches want.
func waitCount(t *testing.T, n *atomic.Int32, want int32, what string) {
	t.Helper()
	for i := 0; n.Load() < want; i++ {
		if i == 6000 {
			t.Fatalf("still waiting after a minute for %s (%d of %d)", what, n.Load(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCtrlCOnACatOfAHungStoreEndsIt: a cat whose signature's GET hangs
// is interrupted (SIGINT, as Ctrl-C sends): it exits at once, killed by
// the signal, and the GET's context is done — its only reader left. It
// used to sit in D state until the store's timeout (the FUSE request's
// store reads were detached from its interrupt).
func TestCtrlCOnACatOfAHungStoreEndsIt(t *testing.T) {
	srv, p, _, h, l := mountHung(t)
	waits := countWaits(t)
	cmd, out, exited, werr := startChild(t, h, "cat", p)
	waitFor(t, h.started, "the cat's GET")
	waitCount(t, waits, 1, "the cat's request to wait on its GET")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, exited, "the cat to exit after SIGINT (its request was not cut short)")
	var ee *exec.ExitError
	if !errors.As(*werr, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
		t.Errorf("cat after SIGINT: %v, output %q; want killed by SIGINT", *werr, out)
	}
	waitFor(t, h.canceled, "the GET's context to be done")
	if n := h.gets.Load(); n != 1 {
		t.Errorf("%d GETs of the signature, want 1", n)
	}
	// An interrupt is no failure: nothing logged as one.
	for _, m := range l.all() {
		if strings.Contains(m, "EIO") || strings.Contains(m, "EINTR") {
			t.Errorf("logged: %s", m)
		}
	}
	_ = srv
}

// TestUnmountCutsAHungStoreRead: Unmount while a stat waits on a hung GET
// cuts the GET short (its context done), the stat fails with EINTR, and
// the unmount succeeds — without the store's timeout (10 minutes here),
// which it used to wait for: the request held the mount busy.
func TestUnmountCutsAHungStoreRead(t *testing.T) {
	srv, p, _, h, _ := mountHung(t)
	_, out, exited, werr := startChild(t, h, "stat", p)
	waitFor(t, h.started, "the stat's GET")
	unmounted := make(chan error, 1)
	go func() { unmounted <- srv.Unmount() }()
	var err error
	select {
	case err = <-unmounted:
	case <-time.After(time.Minute):
		h.free()
		t.Fatal("Unmount still waiting after a minute: the hung GET was not cut short")
	}
	if err != nil {
		t.Fatalf("unmount: %v", err)
	}
	if !h.wasCanceled() {
		t.Error("the GET's context was not done by the unmount")
	}
	waitFor(t, exited, "the stat to exit")
	if *werr == nil || !strings.Contains(strings.ToLower(out.String()), syscall.EINTR.Error()) {
		t.Errorf("stat during the unmount: %v, output %q; want %q", *werr, out, syscall.EINTR.Error())
	}
}

// TestAnInterruptedReaderFailsNoOtherOfItsGET: two cats of one signature
// wait on one GET (the index shares it); the first is interrupted and
// exits, and the GET goes on for the second, which gets the bytes once
// the store answers. One reader leaving a shared read cancels it only
// when it was the last.
func TestAnInterruptedReaderFailsNoOtherOfItsGET(t *testing.T) {
	_, p, data, h, _ := mountHung(t)
	waits := countWaits(t)
	first, _, firstExited, _ := startChild(t, h, "cat", p)
	waitFor(t, h.started, "the first cat's GET")
	waitCount(t, waits, 1, "the first cat's request to wait on its GET")
	_, out, exited, werr := startChild(t, h, "cat", p)
	waitCount(t, waits, 2, "the second cat's request to wait on the GET")
	if err := first.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, firstExited, "the first cat to exit after SIGINT")
	if h.wasCanceled() {
		t.Fatal("the first reader's interrupt canceled the GET the second waits on")
	}
	h.free()
	waitFor(t, exited, "the second cat")
	if *werr != nil || !bytes.Equal(out.Bytes(), data) {
		t.Errorf("second cat: %v, output %q; want %q", *werr, out, data)
	}
	if n := h.gets.Load(); n != 1 {
		t.Errorf("%d GETs of the signature, want 1 (shared)", n)
	}
}

// TestACanceledReadIsEINTR: a store read whose request's context was done
// is EINTR (not logged), not EIO.
func TestACanceledReadIsEINTR(t *testing.T) {
	logged := 0
	m := &Server{logf: func(string, ...any) { logged++ }}
	err := errors.Join(errors.New(`read signature "sig/ab/12cd34/alice"`), context.Canceled)
	if index.Classify(err) != index.ClassCanceled {
		t.Fatalf("class %v", index.Classify(err))
	}
	if e := m.errno("read", "sig/ab/12cd34/alice", err); e != syscall.EINTR || logged != 0 {
		t.Errorf("errno %v (%d logged), want EINTR, nothing logged", e, logged)
	}
}

// TestAWarmReadWaitsOnNothing: a cat of a signature whose bytes the index
// holds asks its context for nothing (no Done: no channel, no goroutine;
// BenchmarkReqCtx) — the context's cost stays one object a request.
func TestAWarmReadWaitsOnNothing(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	var e format.Entry
	for _, x := range f.listed {
		if x.Kind == format.KindSig {
			e = x
			break
		}
	}
	p := srv.path(e)
	if out, err := exec.Command("cat", p).Output(); err != nil || !bytes.Equal(out, f.sigs[e.Key()]) {
		t.Fatalf("cold cat: %v, %d bytes", err, len(out))
	}
	waits := countWaits(t)
	opens := srv.Requests()["OPEN"]
	for range 3 {
		if out, err := exec.Command("cat", p).Output(); err != nil || !bytes.Equal(out, f.sigs[e.Key()]) {
			t.Fatalf("warm cat: %v, %d bytes", err, len(out))
		}
		if out, err := exec.Command("stat", "-c", "%s", p).Output(); err != nil {
			t.Fatalf("warm stat: %v (%s)", err, out)
		}
	}
	if n := srv.Requests()["OPEN"] - opens; n < 3 {
		t.Fatalf("%d OPENs for 3 cats: the warm reads never reached the mount", n)
	}
	if n := waits.Load(); n != 0 {
		t.Errorf("%d requests of warm reads asked for Done, want 0", n)
	}
}

// TestASignalTheCallerHandlesLetsItsReadGoOn: a shell whose redirection
// opens a signature of a hung GET takes SIGUSR1, which it traps: the
// kernel interrupts the request, but the caller is not dying, so the GET
// goes on (not canceled, not sent again) and the shell reads the bytes
// once the store answers — as a Go program's SIGURG, or git's SIGALRM,
// must not fail a read with EINTR.
func TestASignalTheCallerHandlesLetsItsReadGoOn(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	_, p, data, h, _ := mountHung(t)
	waits := countWaits(t)
	judged := make(chan bool, 4)
	fn := func(dying bool) {
		select {
		case judged <- dying:
		default: // a test's hook never blocks a request
		}
	}
	testHookInterrupted.Store(&fn)
	t.Cleanup(func() { testHookInterrupted.Store(nil) })
	cmd, out, exited, werr := startChild(t, h, bash, "-c", `trap 'echo USR1 >&2' USR1; IFS= read -r line < "$1"; printf '%s\n' "$line"`, "sh", p)
	waitFor(t, h.started, "the shell's GET")
	waitCount(t, waits, 1, "the shell's request to wait on its GET")
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case dying := <-judged:
		if dying {
			t.Fatal("a caller that traps SIGUSR1 was judged dying")
		}
	case <-time.After(time.Minute):
		t.Fatal("no interrupt judged a minute after SIGUSR1")
	}
	if h.wasCanceled() {
		t.Fatal("the GET was canceled by a signal its caller handles")
	}
	h.free()
	waitFor(t, exited, "the shell")
	if *werr != nil || !strings.Contains(out.String(), string(data)) || !strings.Contains(out.String(), "USR1") {
		t.Errorf("shell: %v, output %q; want %q and its trap's USR1", *werr, out, data)
	}
	if n := h.gets.Load(); n != 1 {
		t.Errorf("%d GETs of the signature, want 1", n)
	}
}

func TestSigKillPending(t *testing.T) {
	for _, c := range []struct {
		status string
		want   bool
	}{
		{"Name:\tcat\nSigPnd:\t0000000000000100\nShdPnd:\t0000000000000000\n", true},
		{"Name:\tcat\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n", true},
		{"Name:\tsh\nSigPnd:\t0000000000000200\nShdPnd:\t0000000000000002\n", false},
		{"Name:\tsh\n", false},
	} {
		if got := sigKillPending([]byte(c.status)); got != c.want {
			t.Errorf("sigKillPending(%q) = %v, want %v", c.status, got, c.want)
		}
	}
}
