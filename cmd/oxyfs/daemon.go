package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Mount helper mode. mount(8) runs `mount.fuse3 STORE DIR -o OPTS` for an
// fstab line of type fuse.oxyfs, which runs `oxyfs STORE DIR -o OPTS`; a
// helper installed as mount.oxyfs is run as `mount.oxyfs STORE DIR -o OPTS`.
// Either way mount(8) waits for the helper to exit, so the helper starts the
// real mount as a detached child, waits until it is serving (or failed), and
// exits with its status.

// envDaemonChild marks the detached child of the mount helper.
const envDaemonChild = "OXYFS_MOUNT_CHILD"

// helperArgs recognizes helper mode: argv[0] named mount.oxyfs, or a first
// argument that is a store URL rather than a command.
func helperArgs(argv0 string, args []string) ([]string, bool) {
	base := filepath.Base(argv0)
	if base == "mount.oxyfs" || base == "mount.fuse.oxyfs" {
		return args, true
	}
	if len(args) > 0 && strings.Contains(args[0], "://") {
		return args, true
	}
	return nil, false
}

// runHelper starts `oxyfs mount ARGS` detached and waits for its ready line.
func runHelper(ctx context.Context, args []string, stderr io.Writer) int {
	if os.Getenv(envDaemonChild) != "" {
		// The child: mount in the foreground (the parent reads stderr).
		return run(ctx, append([]string{"mount"}, args...), os.Stdin, os.Stdout, os.Stderr)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "oxyfs: mount helper: %v\n", err)
		return 1
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), envDaemonChild+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin = nil
	cmd.Stdout = nil
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(stderr, "oxyfs: mount helper: %v\n", err)
		return 1
	}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "oxyfs: mount helper: start: %v\n", err)
		return 1
	}
	pw.Close()
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(stderr, line)
			if strings.HasPrefix(line, "oxyfs: mounted ") {
				ready <- true
				// Keep draining so the child never blocks on a full pipe;
				// once the parent exits the child's writes fail quietly.
				io.Copy(io.Discard, pr)
				return
			}
		}
		ready <- false
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case ok := <-ready:
		if ok {
			return 0
		}
		err := <-exited
		fmt.Fprintf(stderr, "oxyfs: mount failed: %v\n", err)
		return 1
	case err := <-exited:
		fmt.Fprintf(stderr, "oxyfs: mount failed: %v\n", err)
		return 1
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		fmt.Fprintln(stderr, "oxyfs: mount did not become ready within 2 minutes")
		return 1
	}
}
