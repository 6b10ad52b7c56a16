//go:build linux

package main

import (
	"context"
	"os"
	"strings"
	"testing"
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
	dir := genFolded(t, 20)
	mnt := watchedMountDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errb, done := startInProcessMount(t, ctx, "--layout", "bucket", "file://"+dir, mnt)
	// serveMount is running (or about to): the interrupt comes now, on
	// the context only.
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(errb.String(), "unmounting") {
			t.Errorf("mount after the interrupt: exit %d, stderr:\n%s", code, errb.String())
		}
		// Its last word says it is done, as an unmount from outside does.
		if !strings.Contains(errb.String(), "unmounted "+mnt+"; exiting") {
			t.Errorf("no closing \"unmounted %s; exiting\" after the interrupt, stderr:\n%s", mnt, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("mount still serving 20s after its context was cancelled (the first interrupt), stderr:\n%s", errb.String())
	}
	if data, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(data), " "+mnt+" ") {
		t.Errorf("%s is still mounted after the mount exited", mnt)
	}
}
