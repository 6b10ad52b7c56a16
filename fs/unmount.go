package fs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Unmounting without waiting for the kernel's clean-up.
//
// An umount(2) of a FUSE mount detaches it, closes its connection (the
// serve loops end: read on /dev/fuse says ENODEV), and then, before the
// call returns, frees every inode and dentry the kernel kept of the mount:
// after an `ls -lR` or `find` of a million entries, over a million of
// each, which takes the unmounting process seconds (0.7 s for the 127,000
// of a 100,000-entry store on a 2-core VM; docs/design.md §7 "Unmount").
// The mount has nothing left to do once the connection is closed, and the
// mountpoint is free from then on. So Unmount runs the unmount in a helper
// process of its own (umount -i as root, else fusermount3 -u, as go-fuse
// does) and returns as soon as the serve loops have ended; the helper
// finishes the kernel's clean-up on its own time and is reaped in the
// background (or by init once this process has exited). A helper that
// fails (a busy mount) is waited for, and its words returned.

// unmountHelper returns the command that unmounts dir in a process of its
// own, and the command to name in a busy mount's hint; nil when there is
// none (root without util-linux's umount, another user without
// fusermount3): the unmount is then done in this process. It is
// Server.helper unless a test set another.
func unmountHelper(dir string) (*exec.Cmd, string) {
	if os.Geteuid() == 0 {
		// -i: no umount.<type> helper. Root needs no fusermount3 (mount
		// uses mount(2) directly); util-linux's umount is everywhere.
		if p, err := exec.LookPath("umount"); err == nil {
			return exec.Command(p, "-i", dir), "umount -l " + dir
		}
		return nil, ""
	}
	for _, name := range []string{"fusermount3", "fusermount"} {
		if p, err := exec.LookPath(name); err == nil {
			return exec.Command(p, "-u", dir), name + " -uz " + dir
		}
	}
	return nil, ""
}

// errHelperFailed is a helper that failed for another reason than a busy
// mount: the caller unmounts as it did before helpers (its own error).
var errHelperFailed = errors.New("the unmount helper failed")

// unmountByHelper unmounts m's directory with unmountHelper, retrying a
// few times while the mount is busy (the kernel may not yet have seen the
// release of a file just closed), and returns once the serve loops have
// ended, without waiting for the helper to finish the kernel's clean-up
// (above). ok is false when there is no helper. A busy mount is
// ErrMountBusy with the hint; any other failure wraps errHelperFailed.
func (m *Server) unmountByHelper() (ok bool, err error) {
	delay := 5 * time.Millisecond
	for try := 0; ; try++ {
		cmd, hint := m.helper(m.dir)
		if cmd == nil {
			return false, nil
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return true, fmt.Errorf("unmount %s: %w: %w", m.dir, errHelperFailed, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-m.served:
			// The connection is closed and the mountpoint free; the
			// helper frees the kernel's inodes and is reaped by the
			// goroutine above, or by init once this process is gone.
			return true, nil
		case err := <-exited:
			if err == nil {
				<-m.served // the connection closes within the call
				return true, nil
			}
			msg := strings.Join(strings.Fields(out.String()), " ")
			if !strings.Contains(msg, "busy") {
				return true, fmt.Errorf("unmount %s: %w: %s (%w)", m.dir, errHelperFailed, msg, err)
			}
			if try == 4 {
				return true, fmt.Errorf("unmount %s: %w: files or directories under it are still in use (close them, or detach lazily with %s): %s", m.dir, ErrMountBusy, hint, msg)
			}
		}
		time.Sleep(delay)
		delay *= 2
		m.cutReads() // the requests that came meanwhile hold the mount too
	}
}
