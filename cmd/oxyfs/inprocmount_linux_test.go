//go:build linux

package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// genFolded makes a folded file:// store of n entries in the bucket
// layout (`oxyfs gen --fold`) and returns its directory.
func genFolded(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	if _, errOut, code := runCLI(t, "gen", "--entries", strconv.Itoa(n), "--fold", "--layout", "bucket", "file://"+dir); code != 0 {
		t.Fatalf("gen: %s", errOut)
	}
	return dir
}

// watchedMountDir is a mount point under the test's watchdog. A mount
// that never unmounts would keep it busy for the rest of the tests (and
// its TempDir's removal fails): it is detached at cleanup.
func watchedMountDir(t *testing.T) string {
	t.Helper()
	mnt := t.TempDir()
	testwatch.Arm(t).Abort(mnt)
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	return mnt
}

// startInProcessMount runs `oxyfs mount args...` in this process (run,
// until ctx is cancelled) and returns once it serves (its "mounted"
// line): its stderr, and its exit code when it ends.
func startInProcessMount(t *testing.T, ctx context.Context, args ...string) (*syncBuffer, <-chan int) {
	t.Helper()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"mount"}, args...), strings.NewReader(""), &out, &errb)
	}()
	deadline := time.After(20 * time.Second)
	for !strings.Contains(errb.String(), "oxyfs: mounted ") {
		select {
		case code := <-done:
			t.Fatalf("mount exited %d before it served:\n%s", code, errb.String())
		case <-deadline:
			t.Fatalf("mount did not serve within 20s:\n%s", errb.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return &errb, done
}
