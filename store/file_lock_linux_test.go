package store

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// otherUID runs a command as uid and gid 65534 (nobody), the local user of
// issue 41's attacks, without groups.
func otherUID(name string, args ...string) *exec.Cmd {
	return exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", name}, args...)...)
}

// sharedStoreDir makes a store directory another user can reach and read
// (0755 up to /tmp, as stores are), removed after the test.
func sharedStoreDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test changes uid with setpriv: run it as root")
	}
	dir, err := os.MkdirTemp("", "oxylock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// holdFlock starts cmd (which takes flock on path and sleeps) and waits
// until path's lock is held, killing cmd at the test's end.
func holdFlock(t *testing.T, cmd *exec.Cmd, path string) {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // flock(1) forks: kill the group
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
	for {
		select {
		case err := <-exited:
			t.Fatalf("%v exited before locking %s: %v: %s", cmd.Args, path, err, stderr.String())
		default:
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		f.Close() // releases it if we got it
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// writeWithin runs one conditional write (UpdateRecord) with ctx and
// returns its error; a write still blocked after hang fails the test (the
// bug: it blocked until the other process let go).
func writeWithin(t *testing.T, ctx context.Context, st *Store, hang time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := st.UpdateRecord(ctx, "record", func(old []byte, _ bool) ([]byte, error) {
			return append(old, "line\n"...), nil
		})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(hang):
		t.Fatalf("a write was still blocked on the store's lock after %v", hang)
		return nil
	}
}

// TestFileLockOtherUserCannotBlockWrites (issue 41, 1): another local user
// who can only read the store holds flock on its directory (what oxyfs
// locked, blocking, so every write waited for as long as that user
// liked); writes go on, and that user cannot open the lock file that
// writers lock now.
func TestFileLockOtherUserCannotBlockWrites(t *testing.T) {
	dir := sharedStoreDir(t)
	ctx := context.Background()
	st, err := Open(ctx, "file://"+dir, Options{Layout: LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := writeWithin(t, ctx, st, time.Minute); err != nil {
		t.Fatal(err)
	}
	holdFlock(t, otherUID("flock", "--exclusive", dir, "sleep", "600"), dir)
	for range 3 {
		if err := writeWithin(t, ctx, st, time.Minute); err != nil {
			t.Fatalf("write while another user holds the directory's flock: %v", err)
		}
	}
	data, _, err := st.ReadRecord(ctx, "record")
	if err != nil || strings.Count(string(data), "line\n") != 4 {
		t.Fatalf("record = %q, %v; want 4 lines", data, err)
	}
	lock := filepath.Join(dir, lockFileName)
	fi, err := os.Stat(lock)
	if err != nil {
		t.Fatalf("the lock file: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("lock file mode %v in a 0755 store, want 0600", perm)
	}
	// flock(1) opens read-only when it cannot write: the lock file must
	// not open at all for a user who cannot write the store.
	out, err := otherUID("flock", "--nonblock", "--exclusive", lock, "true").CombinedOutput()
	if err == nil {
		t.Fatalf("another user took the store's lock file %s: %s", lock, out)
	}
	if !strings.Contains(string(out), "Permission denied") {
		t.Errorf("another user's flock of the lock file failed, but not for want of permission: %v: %s", err, out)
	}
}

// TestFileLockWaitEndsWithContext (issue 41, 1): a write waiting for the
// lock another process holds ends at its context's deadline with the
// context's error (it blocked until the lock was freed: `put --timeout 2s`
// did not exit, a mount could not unmount).
func TestFileLockWaitEndsWithContext(t *testing.T) {
	dir := sharedStoreDir(t)
	st, err := Open(context.Background(), "file://"+dir, Options{Layout: LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lock := filepath.Join(dir, lockFileName)
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Another writer (this user: it may) holds both the directory and the
	// lock file.
	holdFlock(t, exec.Command("flock", "--exclusive", dir, "flock", "--exclusive", lock, "sleep", "600"), lock)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = writeWithin(t, ctx, st, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write while another writer holds the lock: %v, want the context's deadline", err)
	}
}

// TestFileLockHardLinkRefused (F3): a hard link at the lock path to a
// root-owned 0600 file (what a local user may make where
// fs.protected_hardlinks is off, or on macOS) in a store anyone may write:
// a write is refused with a clear error and the linked file's mode stays
// 0600 (root fchmodded it to 0666, making it writable by all).
func TestFileLockHardLinkRefused(t *testing.T) {
	dir := sharedStoreDir(t)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(target, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, lockFileName)
	if err := os.Link(target, lock); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := Open(ctx, "file://"+dir, Options{Layout: LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = writeWithin(t, ctx, st, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "links") {
		t.Errorf("write with a hard link at the lock path: %v, want it refused for the links", err)
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("the linked file's mode became %v, want 0600", perm)
	}
}

// TestFileLockExistingNeverWidened (F3): a lock file this user owns that
// was there already is narrowed to the directory's mode, never widened; a
// lock file this process creates gets the directory's mode.
func TestFileLockExistingNeverWidened(t *testing.T) {
	for _, c := range []struct {
		perm, want os.FileMode
		created    bool
		out        os.FileMode
	}{
		{0o600, 0o666, false, 0o600},
		{0o644, 0o666, false, 0o644},
		{0o666, 0o600, false, 0o600},
		{0o777, 0o660, false, 0o660},
		{0o600, 0o666, true, 0o666},
	} {
		if got := lockFileModeFor(c.perm, c.want, c.created); got != c.out {
			t.Errorf("lockFileModeFor(%v, %v, created %v) = %v, want %v", c.perm, c.want, c.created, got, c.out)
		}
	}
	dir := sharedStoreDir(t)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, lockFileName)
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := openLockFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Stat(lock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("an existing 0600 lock file in a 0777 store: %v, %v; want it left 0600", fi.Mode(), err)
	}
}
