package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/testkit/testservers"
	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// envFstabChild marks the run of TestFstabMountSurvivesItsLog inside its
// private mount namespace.
const envFstabChild = "OXYFS_TEST_FSTAB_CHILD"

// fstabWait bounds each wait for a mount to do something (serve, refresh,
// exit); it is no measure of speed.
const fstabWait = 60 * time.Second

// TestFstabMountSurvivesItsLog mounts the ways users deploy a mount, each
// time on a file:// store the test made: mount(8) with an fstab line's type
// and options (`mount -t fuse.oxyfs STORE DIR -o rw,refresh=2s,log_file=…`,
// through /sbin/mount.fuse.oxyfs), the helper `mount.oxyfs` with its own
// stdout and stderr closed, a foreground `oxyfs mount … 2>&1 | head -1`, and
// `oxyfs mount --daemon`. Each mount then gets a SIGHUP, interval refreshes
// and a refused overwrite (EPERM), each of which it logs, and must still
// serve: ls and cat work and the process is alive. A mount that writes its
// log to a pipe nobody reads any more died of SIGPIPE on the first of these.
//
// It runs itself again as root in a private mount namespace (unshare -m)
// where /usr/sbin has mount.fuse.oxyfs (an overlay), so nothing of the
// machine changes, and the mounts vanish with the namespace.
func TestFstabMountSurvivesItsLog(t *testing.T) {
	if os.Getenv(envFstabChild) != "" {
		fstabScenarios(t)
		return
	}
	testservers.RequireFUSE(t)
	// The mounts are in a child (unshare), which the watchdog's dump
	// does not reach: it fails this test by name instead of the binary
	// hanging until -timeout.
	testwatch.Arm(t)
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root; mount(8) with a helper needs it")
		}
		t.Skip("mount -t fuse.oxyfs needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is needed for a private mount namespace: %v", err)
	}
	sbin, err := filepath.EvalSymlinks("/sbin")
	if err != nil {
		t.Fatal(err)
	}
	helpers := t.TempDir()
	if err := os.Symlink(oxyfsBin, filepath.Join(helpers, "mount.fuse.oxyfs")); err != nil {
		t.Fatal(err)
	}
	// mount(8) looks for /sbin/mount.fuse.oxyfs: an overlay adds it.
	script := `mount -t overlay overlay -o "lowerdir=$HELPERS:$SBIN" "$SBIN" || exit 1
exec "$@"`
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c", script, "sh",
		os.Args[0], "-test.run", "^TestFstabMountSurvivesItsLog$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envFstabChild+"=1", "OXYFS_REQUIRE=fuse", "HELPERS="+helpers, "SBIN="+sbin,
		envIntegrationBin+"="+oxyfsBin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the mounts in a private namespace failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// fstabScenarios is the test inside the namespace.
func fstabScenarios(t *testing.T) {
	tmp := t.TempDir()
	storeDir := filepath.Join(tmp, "store")
	url := "file://" + storeDir
	mustOxyfs(t, nil, "gen", url, "--entries", "40", "--signers", "2")
	helper := filepath.Join(tmp, "mount.oxyfs")
	if err := os.Symlink(oxyfsBin, helper); err != nil {
		t.Fatal(err)
	}
	newDir := func(name string) (mnt, log string) {
		mnt = filepath.Join(tmp, name)
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if isMounted(mnt) {
				_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
			}
		})
		return mnt, filepath.Join(tmp, name+".log")
	}

	t.Run("mount -t fuse.oxyfs", func(t *testing.T) {
		mnt, log := newDir("fstab")
		out, errOut, err := runErr("mount", "-t", "fuse.oxyfs", url, mnt, "-o", "rw,refresh=2s,log_file="+log+",noauto")
		if err != nil {
			t.Fatalf("mount -t fuse.oxyfs: %v\n%s%s", err, out, errOut)
		}
		exercise(t, mnt, mountPid(t, mnt), log)
	})
	t.Run("mount.oxyfs with its output closed", func(t *testing.T) {
		mnt, log := newDir("helper")
		out, errOut, err := runErr("sh", "-c", `exec "$@" >&- 2>&-`, "sh", helper, url, mnt, "-o", "rw,refresh=2s,log_file="+log)
		if err != nil {
			t.Fatalf("mount.oxyfs >&- 2>&-: %v\n%s%s", err, out, errOut)
		}
		exercise(t, mnt, mountPid(t, mnt), log)
	})
	t.Run("foreground piped to head -1", func(t *testing.T) {
		mnt, _ := newDir("head")
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		mount := exec.Command(oxyfsBin, "mount", "--refresh-interval", "2s", url, mnt)
		mount.Stdout, mount.Stderr = pw, pw // 2>&1
		var first strings.Builder
		head := exec.Command("head", "-1")
		head.Stdin, head.Stdout = pr, &first
		if err := head.Start(); err != nil {
			t.Fatal(err)
		}
		if err := mount.Start(); err != nil {
			t.Fatal(err)
		}
		pr.Close()
		pw.Close()
		exited := make(chan error, 1)
		go func() { exited <- mount.Wait() }()
		t.Cleanup(func() {
			mount.Process.Kill()
			<-exited
		})
		waitHead := make(chan error, 1)
		go func() { waitHead <- head.Wait() }()
		select {
		case err := <-waitHead:
			if err != nil || !strings.Contains(first.String(), "oxyfs: mounted") {
				t.Fatalf("head -1: %v, %q; want the mounted line", err, first.String())
			}
		case err := <-exited:
			t.Fatalf("oxyfs mount exited (%v) before it mounted", err)
		case <-time.After(fstabWait):
			t.Fatalf("no line from oxyfs mount within %v", fstabWait)
		}
		// head is gone: every line the mount logs from now on meets a
		// closed pipe.
		exercise(t, mnt, mount.Process.Pid, "")
	})
	t.Run("--daemon", func(t *testing.T) {
		mnt, log := newDir("daemon")
		r := mustOxyfs(t, nil, "mount", "--daemon", "--refresh-interval", "2s", "--log-file", log, url, mnt)
		if !strings.Contains(r.stderr, "oxyfs: mounted") || !strings.Contains(r.stderr, "logging to log file "+log) {
			t.Errorf("oxyfs mount --daemon said:\n%s\nwant the mounted line and where it logs", r.stderr)
		}
		exercise(t, mnt, mountPid(t, mnt), log)
	})
}

// exercise checks that the mount at mnt, served by process pid, survives
// what it logs: a SIGHUP, interval refreshes, a refused overwrite. Then it
// unmounts with umount(8) and waits for the process to end. log is the
// mount's log file, "" for none.
func exercise(t *testing.T, mnt string, pid int, log string) {
	t.Helper()
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	sigs := lines(run(t, "find", filepath.Join(mnt, "sig"), "-type", "f"))
	if len(sigs) == 0 {
		t.Fatal("no signature on the mount")
	}
	sig := sigs[0]
	want, err := os.ReadFile(sig)
	if err != nil {
		t.Fatalf("cat before: %v", err)
	}
	serves := func(after string) {
		t.Helper()
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("after %s the mount process %d is gone: %v\n%s", after, pid, err, readLog(log))
		}
		if got, err := os.ReadFile(sig); err != nil || string(got) != string(want) {
			t.Fatalf("after %s cat %s: %v (%d bytes, want %d)\n%s", after, sig, err, len(got), len(want), readLog(log))
		}
		if _, errOut, err := runErr("ls", filepath.Join(mnt, "sig")); err != nil {
			t.Fatalf("after %s ls: %v %s\n%s", after, err, errOut, readLog(log))
		}
	}
	// The loop refreshes one at a time and logs each before the next: once
	// the count passes n, the log line of the refresh before was written.
	refreshes := func() int64 { return readStatus(t, mnt).Refreshes }
	waitRefreshes := func(n int64, what string) {
		t.Helper()
		deadline := time.Now().Add(fstabWait)
		for refreshes() < n {
			if syscall.Kill(pid, 0) != nil || time.Now().After(deadline) {
				t.Fatalf("%s: the mount did not refresh %d times (process alive: %v)\n%s", what, n, syscall.Kill(pid, 0) == nil, readLog(log))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	r0 := refreshes()
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatalf("SIGHUP: %v", err)
	}
	waitRefreshes(r0+1, "SIGHUP")
	serves("a SIGHUP")
	// Two more: at least one is the 2s interval's, logged before the next.
	waitRefreshes(r0+3, "interval")
	serves("interval refreshes")
	f, err := os.OpenFile(sig, os.O_WRONLY|os.O_TRUNC, 0)
	if err == nil {
		f.Close()
		t.Fatalf("overwrote %s without allow_overwrite", sig)
	}
	if !errors.Is(err, syscall.EPERM) {
		t.Fatalf("overwrite: %v, want EPERM\n%s", err, readLog(log))
	}
	serves("a refused overwrite")
	r1 := refreshes()
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatalf("SIGHUP: %v", err)
	}
	waitRefreshes(r1+1, "SIGHUP after the refusal")
	serves("everything")
	if log != "" {
		text := readLog(log)
		for _, w := range []string{"refreshed (SIGHUP)", "refreshed (interval)", "refused"} {
			if !strings.Contains(text, w) {
				t.Errorf("the log file has no %q line:\n%s", w, text)
			}
		}
	}
	if out, errOut, err := runErr("umount", mnt); err != nil {
		t.Fatalf("umount: %v %s%s", err, out, errOut)
	}
	deadline := time.Now().Add(fstabWait)
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the mount process %d still runs %v after umount", pid, fstabWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mountPid finds the process that serves mnt: the one whose command line
// names mnt and is not a mount(8) or helper parent that already exited.
func mountPid(t *testing.T, mnt string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		// Only oxyfs processes (by comm, which needs no lock): reading
		// another process's cmdline waits on its memory map's lock, which
		// a process stuck in a FUSE page fault (another test's) holds.
		if comm, err := os.ReadFile(filepath.Join(filepath.Dir(p), "comm")); err != nil || strings.TrimSpace(string(comm)) != "oxyfs" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if len(args) > 1 && filepath.Base(args[0]) == "oxyfs" && slices.Contains(args, mnt) {
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if err == nil && !zombie(pid) {
				return pid
			}
		}
	}
	t.Fatalf("no oxyfs process serves %s", mnt)
	return 0
}

func readLog(log string) string {
	if log == "" {
		return "(no log file)"
	}
	data, err := os.ReadFile(log)
	if err != nil {
		return fmt.Sprintf("(log file: %v)", err)
	}
	return "--- log ---\n" + clip(string(data), 4000)
}

// zombie reports whether pid has exited and waits for its parent (a child
// of this process that is not waited for yet).
func zombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] == 'Z'
}
