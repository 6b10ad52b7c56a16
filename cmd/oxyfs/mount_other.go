//go:build !linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// oxyfs mounts on Linux only (mount.go). go-fuse builds for macOS with
// macFUSE, but its author tests only Linux and lists macFUSE's limits: no
// kernel notifications (oxyfs's refresh invalidates the kernel's cache
// through them), STATFS issued continuously, and trouble with concurrent
// reads of the FUSE device. Windows has no FUSE go-fuse speaks. Everywhere
// else, every other command works (ls, cat, check, serve, fold, gc, …), and
// `oxyfs serve`'s WebDAV is how Finder and Explorer mount a store.

func init() {
	register(&command{
		name:    "mount",
		args:    "[STORE MOUNTPOINT]",
		summary: "mount the store's entries at MOUNTPOINT: Linux only (FUSE); elsewhere use serve, whose WebDAV Finder and Explorer mount",
		run: func(context.Context, *env, []string) error {
			return errMountNeedsLinux
		},
	})
}

// errMountNeedsLinux is what mount says off Linux.
var errMountNeedsLinux = errors.New("oxyfs mount needs Linux FUSE (go-fuse); this build has no mount. " +
	"On macOS, go-fuse's macFUSE support is untested by its author and lacks kernel notifications, which the refresh needs; " +
	"on Windows there is no FUSE. Use `oxyfs serve STORE` and mount its WebDAV (Finder: Go > Connect to Server; Explorer: Map network drive); " +
	"ls, cat, check, fold and gc work here as on Linux")

// runDetached is the mount helper's (mount.oxyfs) detached mount: Linux only.
func runDetached(_ []string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "oxyfs: %v\n", errMountNeedsLinux)
	return 1
}
