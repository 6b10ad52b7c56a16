package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestReliabilityServerKilledDuringWritesAndFolds kills the S3 server
// (SIGKILL) while `oxyfs put` processes, cp through a mount and `oxyfs fold`
// run, then restarts it, twice (more with OXYFS_RELIABILITY_SCALE). During
// each outage a write through the mount is EIO with a log line naming the
// store, `oxyfs put` exits 1 naming it, and the mount still lists, stats and
// reads what it holds. After the restart the same cp succeeds on the same
// mount, no acknowledged write is lost, and `oxyfs check` finds every live
// list whole: a fold the kill interrupted left no half-written list live.
//
// Not parallel: every test of this binary shares the server it kills.
func TestReliabilityServerKilledDuringWritesAndFolds(t *testing.T) {
	srv, url := s3Store(t)
	scale := relScale(t)
	outages := 2 * scale
	genFolded(t, srv, url, 300, 4)
	st := openStore(t, url)
	mnt := t.TempDir()
	// The mount re-reads the store after each restart (SIGHUP); the long
	// run (scale > 1) also refreshes it every 500 ms, outages included.
	var flags []string
	if scale > 1 {
		flags = []string{"--refresh-interval", "500ms"}
	}
	m := startMount(t, srv, url, mnt, flags...)
	bucket := strings.TrimPrefix(strings.SplitN(url, "?", 2)[0], "s3://")

	cached := sigFiles(t, mnt)[0]
	cachedBytes, err := os.ReadFile(cached)
	if err != nil {
		t.Fatal(err)
	}
	objDir := filepath.Dir(cached)

	var (
		mu                                sync.Mutex
		acked                             []relAck
		putsRefused, cpsRefused, foldsCut int
		foldsDone                         int
		failures                          []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	stop := make(chan struct{})
	var stopOnce sync.Once
	var load sync.WaitGroup
	down := false
	// Whatever ends the test, the load stops before it and the server is
	// up again for the tests after it.
	t.Cleanup(func() {
		stopOnce.Do(func() { close(stop) })
		load.Wait()
		if down {
			srv.Restart(t)
		}
	})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	// Writers: oxyfs put processes, and cp through the mount.
	for w := range 2 {
		load.Go(func() {
			for i := 0; !stopped(); i++ {
				e := format.Entry{Kind: format.KindSig, Object: relObject(w, i), Value: fmt.Sprintf("put-%d", w)}
				data := []byte(fmt.Sprintf("signature %d by put-%d", i, w))
				r := oxyfs(t, srv, "put", "--timeout", "5s", url, e.Key(), relTempFile(t, "sig", data))
				switch {
				case r.code == 0:
					mu.Lock()
					acked = append(acked, relAck{e.Key(), data})
					mu.Unlock()
				case r.code == 1 && strings.Contains(r.stderr, "unavailable") && strings.Contains(r.stderr, bucket):
					mu.Lock()
					putsRefused++
					mu.Unlock()
				default:
					fail("oxyfs put during faults: want exit 0, or 1 naming the store as unavailable:\n%s", r)
				}
			}
		})
	}
	load.Go(func() {
		for i := 0; !stopped(); i++ {
			e := format.Entry{Kind: format.KindSig, Object: relObject(9, i), Value: "cp"}
			data := []byte(fmt.Sprintf("signature %d by cp", i))
			dst := filepath.Join(mnt, e.Key())
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				fail("mkdir through the mount: %v", err)
				continue
			}
			err := relWrite(dst, data)
			switch {
			case err == nil:
				mu.Lock()
				acked = append(acked, relAck{e.Key(), data})
				mu.Unlock()
			case errnoOf(err) == syscall.EIO:
				mu.Lock()
				cpsRefused++
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			default:
				fail("write through the mount during faults: %v, want success or EIO", err)
			}
		}
	})
	load.Go(func() {
		for !stopped() {
			r := oxyfs(t, srv, "fold", "--timeout", "5s", url)
			switch {
			case r.code == 0:
				mu.Lock()
				foldsDone++
				mu.Unlock()
			case r.code == 1 && strings.Contains(r.stderr, "unavailable"):
				mu.Lock()
				foldsCut++
				mu.Unlock()
			default:
				fail("oxyfs fold during faults: want exit 0, or 1 saying the store is unavailable:\n%s", r)
			}
		}
	})

	var refusedCp string // a write refused during the first outage, tried again after it
	refusedData := []byte("written during an outage, then again after it")
	outageTook := time.Duration(0)
	for n := range outages {
		time.Sleep(time.Second)
		srv.Kill(t)
		down = true
		killed := time.Now()

		// The mount serves what it holds.
		if names, err := os.ReadDir(objDir); err != nil || len(names) == 0 {
			t.Errorf("outage %d: ls of a directory the mount holds: %d names, %v", n, len(names), err)
		}
		if got, err := os.ReadFile(cached); err != nil || !bytes.Equal(got, cachedBytes) {
			t.Errorf("outage %d: cat of a signature the mount holds: %d bytes, %v", n, len(got), err)
		}
		if _, err := os.Stat(cached); err != nil {
			t.Errorf("outage %d: stat of a signature the mount holds: %v", n, err)
		}
		if s := readStatus(t, mnt); s.Entries < 300 {
			t.Errorf("outage %d: .oxy/status shows %d entries, want at least 300", n, s.Entries)
		}
		// A write is EIO, with a line naming the store in the mount's log.
		e := format.Entry{Kind: format.KindSig, Object: relObject(20, n), Value: "during-outage"}
		dst := filepath.Join(mnt, e.Key())
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Errorf("outage %d: mkdir through the mount: %v", n, err)
		} else if err := relWrite(dst, refusedData); errnoOf(err) != syscall.EIO {
			t.Errorf("outage %d: write through the mount with the server down: %v, want EIO", n, err)
		} else if refusedCp == "" {
			refusedCp = dst
			if err := m.waitLog(e.Key(), 1, cmdTimeout); err != nil {
				t.Errorf("outage %d: the mount logged nothing about the refused write: %v", n, err)
			}
			if l := m.stderr.first(e.Key()); !strings.Contains(l, "(EIO)") || !strings.Contains(l, "unavailable") || !strings.Contains(l, bucket) {
				t.Errorf("outage %d: the mount's log line for the refused write does not name the store as unavailable: %q", n, l)
			} else {
				t.Logf("the mount logged: %s", l)
			}
		}
		// oxyfs put exits 1 naming the store.
		e.Value = "put-during-outage"
		r := oxyfs(t, srv, "put", url, e.Key(), relTempFile(t, "sig", refusedData))
		if r.code != 1 || !strings.Contains(r.stderr, bucket) || !strings.Contains(r.stderr, "unavailable") {
			t.Errorf("outage %d: oxyfs put with the server down: want exit 1 naming the store as unavailable\n%s", n, r)
		} else if n == 0 {
			t.Logf("oxyfs put said: %s", strings.TrimSpace(r.stderr))
		}

		// Down long enough that the loads' processes (slow to start under
		// -race) send requests into the outage, folds among them.
		time.Sleep(2 * time.Second)
		mu.Lock()
		before := len(acked)
		mu.Unlock()
		srv.Restart(t)
		down = false
		outageTook += time.Since(killed)
		m.refresh()
		// The load recovers on its own.
		relWaitFor(t, fmt.Sprintf("outage %d: a write acknowledged after the restart", n), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(acked) > before
		})
	}
	time.Sleep(time.Second)
	stopOnce.Do(func() { close(stop) })
	load.Wait()

	// The write refused during the first outage succeeds on the same mount.
	if refusedCp != "" {
		if err := relWrite(refusedCp, refusedData); err != nil {
			t.Errorf("the write refused during the outage, again on the same mount after the restart: %v", err)
		} else {
			acked = append(acked, relAck{rel(t, mnt, refusedCp), refusedData})
		}
	}
	for _, f := range failures {
		t.Error(f)
	}
	// No half-written list is live: check reads every live list whole.
	check := oxyfs(t, srv, "check", url)
	if check.code != 0 {
		t.Errorf("oxyfs check after %d outages:\n%s", outages, check)
	}
	mustOxyfs(t, srv, "fold", url)
	if r := oxyfs(t, srv, "check", url); r.code != 0 {
		t.Errorf("oxyfs check after the final fold:\n%s", r)
	}
	m.refresh()
	found, readBack := relVerifyAcked(t, st, mnt, acked)
	relFigure(t, "%d outages survived (SIGKILL, down %v in all, same mount throughout): writes acknowledged %d, found %d, read back %d; refused during outages: %d oxyfs put (exit 1), %d writes through the mount (EIO); folds: %d completed, %d failed by an outage (started in one or cut off by the kill); oxyfs check after the outages: exit %d",
		outages, outageTook.Round(100*time.Millisecond), len(acked), found, readBack, putsRefused, cpsRefused, foldsDone, foldsCut, check.code)
	if putsRefused == 0 || cpsRefused == 0 || foldsCut == 0 {
		t.Errorf("the outages refused %d puts, %d writes through the mount and %d folds; the test proves little", putsRefused, cpsRefused, foldsCut)
	}
}

// TestReliabilityHungServer: a server that accepts connections and never
// answers (a proxy in front of the S3 server holding every byte) cannot
// hang anything for long. `oxyfs ls --timeout 1s` and `oxyfs put` exit 1
// within 3 tries of 1 s; through a mount started with --timeout 1s, what
// the mount holds is listed and read at once, a signature it does not hold
// fails with EIO, and a write fails with EIO, each within the same bound.
// When the server answers again the mount serves both, without a remount.
func TestReliabilityHungServer(t *testing.T) {
	t.Parallel()
	srv, direct := s3Store(t)
	genFolded(t, srv, direct, 100, 4)
	p := newRelProxy(t, srv.Addr())
	url := strings.Replace(direct, srv.Addr(), p.Addr(), 1)
	mnt := t.TempDir()
	startMount(t, srv, url, mnt, "--timeout", "1s")
	sigs := sigFiles(t, mnt)
	held, uncached := sigs[0], sigs[len(sigs)-1]
	heldBytes, err := os.ReadFile(held)
	if err != nil {
		t.Fatal(err)
	}
	obj := newObject(t)
	newSig := filepath.Join(mnt, "sig", obj[:2], obj[2:], "during-hang")
	run(t, "mkdir", "-p", filepath.Dir(newSig))

	// The bound: 3 tries of 1 s, two waits under 0.3 s, and process start
	// (a -race binary) with room to spare.
	const bound = 3*time.Second + 300*time.Millisecond + 4*time.Second
	p.setHang(true)
	// Each case returns what happened and whether that is what it wants.
	timed := func(what string, fn func() (string, bool)) {
		t.Helper()
		began := time.Now()
		outcome, ok := fn()
		took := time.Since(began)
		switch {
		case !ok:
			t.Errorf("%s with the server hung: %s", what, outcome)
		case took > bound:
			t.Errorf("%s with the server hung took %v, want under %v", what, took, bound)
		}
		relFigure(t, "%s with the server hung: %s after %v", what, outcome, took.Round(10*time.Millisecond))
	}
	cliFails := func(args ...string) (string, bool) {
		r := oxyfs(t, srv, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "no answer within 1s") {
			return r.String(), false
		}
		return "exit 1, \"no answer within 1s\"", true
	}
	errnoIs := func(err error, want syscall.Errno) (string, bool) {
		if got := errnoOf(err); got != want {
			return fmt.Sprintf("%v, want %v", err, want), false
		}
		return want.Error(), true
	}
	timed("oxyfs ls --timeout 1s", func() (string, bool) { return cliFails("ls", "--timeout", "1s", url) })
	timed("oxyfs put --timeout 1s", func() (string, bool) {
		return cliFails("put", "--timeout", "1s", url, rel(t, mnt, newSig), relTempFile(t, "sig", []byte("x")))
	})
	timed("find over the mount", func() (string, bool) {
		out, errOut, err := runErr("find", mnt, "-type", "f")
		if err != nil {
			return fmt.Sprintf("%v: %s", err, errOut), false
		}
		return fmt.Sprintf("%d files", len(lines(out))), true
	})
	timed("cat of a signature the mount holds", func() (string, bool) {
		got, err := os.ReadFile(held)
		if err != nil || !bytes.Equal(got, heldBytes) {
			return fmt.Sprintf("%d bytes, %v; want the %d read before", len(got), err, len(heldBytes)), false
		}
		return fmt.Sprintf("%d bytes", len(got)), true
	})
	timed("cat of a signature the mount does not hold", func() (string, bool) {
		_, err := os.ReadFile(uncached)
		return errnoIs(err, syscall.EIO)
	})
	timed("cp through the mount", func() (string, bool) {
		return errnoIs(relWrite(newSig, []byte("signature written while the server hangs")), syscall.EIO)
	})

	p.setHang(false)
	if _, err := os.ReadFile(uncached); err != nil {
		t.Errorf("cat of the signature after the server answers again: %v", err)
	}
	if err := relWrite(newSig, []byte("signature written after the hang")); err != nil {
		t.Errorf("cp through the mount after the server answers again: %v", err)
	}
}

// relWrite writes data to a new file as cp does (create, write, close)
// and returns the first error: close reports whether the entry landed.
func relWrite(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// relObject is a 64-hex object id for writer w's i-th entry.
func relObject(w, i int) string {
	return fmt.Sprintf("%02x%02x%060x", (w*53+i*7)%256, w, i)
}

// relWaitFor polls cond until it holds, failing the test after cmdTimeout.
func relWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(cmdTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, cmdTimeout)
		}
		time.Sleep(relPoll)
	}
}

func relFirstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
