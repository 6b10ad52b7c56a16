//go:build !linux

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestMountSaysItNeedsLinux: off Linux, mount fails (exit 1) saying it
// needs Linux FUSE and what to use instead; the helper does the same.
//
// testwatch: mounts nothing (flags and usage only).
func TestMountSaysItNeedsLinux(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"mount", "file:///s", "/mnt"}, nil, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "needs Linux FUSE") || !strings.Contains(stderr.String(), "oxyfs serve") {
		t.Errorf("mount: exit %d, stderr %q; want 1 and a message naming Linux FUSE and serve", code, stderr.String())
	}
	stderr.Reset()
	if code := runHelper([]string{"file:///s", "/mnt"}, &stderr); code != 1 || !strings.Contains(stderr.String(), "needs Linux FUSE") {
		t.Errorf("mount.oxyfs: exit %d, stderr %q", code, stderr.String())
	}
}
