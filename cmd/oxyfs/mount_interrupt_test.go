//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/testwatch"
	"time"
)

// TestMountUnmountsOnAnInterruptThatCameBeforeItsHandler: the first
// SIGINT reaches a mount through its context (signal.NotifyContext in
// main), whose cancel runs on a goroutine of its own. A signal that came
// after the ready line but before serveMount registered its own handler
// was seen only there — and once serveMount had looked at ctx.Err() and
// found nothing yet, the mount served on and never unmounted (an
// integration test's mount stayed "still running 30s after interrupt").
// Here the context is cancelled after the mount serves, with no signal at
// all: the mount must unmount, say so and exit 0.
func TestMountUnmountsOnAnInterruptThatCameBeforeItsHandler(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	if _, errOut, code := runCLI(t, "gen", "--entries", "20", "--fold", "--layout", "bucket", "file://"+dir); code != 0 {
		t.Fatalf("gen: %s", errOut)
	}
	mnt := t.TempDir()
	testwatch.Arm(t).Abort(mnt)
	// A mount that never unmounts would keep the directory busy for the
	// rest of the tests (and its TempDir's removal fails): detach it.
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"mount", "--layout", "bucket", "file://" + dir, mnt}, strings.NewReader(""), &out, &errb)
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
	// serveMount is running (or about to): the interrupt comes now, on
	// the context only.
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(errb.String(), "unmounting") {
			t.Errorf("mount after the interrupt: exit %d, stderr:\n%s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("mount still serving 20s after its context was cancelled (the first interrupt), stderr:\n%s", errb.String())
	}
	if data, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(data), " "+mnt+" ") {
		t.Errorf("%s is still mounted after the mount exited", mnt)
	}
}
