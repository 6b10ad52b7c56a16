package main

import (
	"context"
	"fmt"
	iofs "io/fs"
	"strings"
	"syscall"
	"testing"
)

// TestAFullStoreIsSaidPlainly (issue 36): a command whose write fails
// because the store's filesystem is full (or its quota spent) says so
// first, then the operation and the key, and exits 1. Before, it printed
// only the chain ("… sync …: no space left on device"); the real disk is
// filled in integration/TestFullFileStore.
func TestAFullStoreIsSaidPlainly(t *testing.T) {
	const key = "sig/ab/cd/alice"
	for errno, want := range map[syscall.Errno]string{
		syscall.ENOSPC: "no space left on the store's filesystem",
		syscall.EDQUOT: "disk quota exceeded on the store's filesystem",
	} {
		name := "test-full-" + strings.ToLower(fmt.Sprint(int(errno)))
		register(&command{name: name, hidden: true, run: func(_ context.Context, e *env, args []string) error {
			if _, err := e.parse(args, 0, 0); err != nil {
				return err
			}
			return fmt.Errorf("put %s: write key %q: %w", key, key, &iofs.PathError{Op: "sync", Path: "/srv/store/" + key, Err: errno})
		}})
		t.Cleanup(func() { delete(commands, name) })
		_, errOut, code := runCLI(t, name)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", errno, code)
		}
		if !strings.HasPrefix(errOut, "oxyfs "+name+": "+want+": ") || !strings.Contains(errOut, key) {
			t.Errorf("%v: stderr %q, want %q first, then the key", errno, errOut, want)
		}
	}
	// Any other failure is said as before.
	name := "test-other-failure"
	register(&command{name: name, hidden: true, run: func(_ context.Context, e *env, args []string) error {
		return fmt.Errorf("put %s: %w", key, syscall.ECONNREFUSED)
	}})
	t.Cleanup(func() { delete(commands, name) })
	if _, errOut, code := runCLI(t, name); code != 1 || strings.Contains(errOut, "store's filesystem") {
		t.Errorf("another failure: exit %d, %q", code, errOut)
	}
}
