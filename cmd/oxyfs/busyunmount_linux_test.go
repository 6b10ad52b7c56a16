//go:build linux

package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestABusyUnmountNamesWhatToClose: a mount asked to end while a process
// works in it stays mounted and says which process holds it and how (user
// trial 50: README promised it names what to close; it named nothing).
func TestABusyUnmountNamesWhatToClose(t *testing.T) {
	dir := genFolded(t, 20)
	mnt := watchedMountDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	errb, done := startInProcessMount(t, ctx, "file://"+dir, mnt)
	sleep := exec.Command("sleep", "60")
	sleep.Dir = mnt + "/sig"
	if err := sleep.Start(); err != nil {
		t.Fatalf("start sleep in the mount: %v", err)
	}
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
	cancel() // as SIGINT: the mount tries to unmount
	want := fmt.Sprintf("pid %d (sleep): cwd %s/sig", sleep.Process.Pid, mnt)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errb.String(), "still mounted and serving") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := errb.String(); !strings.Contains(got, "still mounted and serving") || !strings.Contains(got, want) {
		t.Errorf("the busy unmount's message does not name %q:\n%s", want, got)
	}
	_ = sleep.Process.Kill()
	_ = sleep.Wait()
	if err := syscall.Unmount(mnt, 0); err != nil {
		t.Fatalf("unmount from outside after the holder ended: %v", err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the mount did not end after an unmount from outside:\n%s", errb.String())
	}
}
