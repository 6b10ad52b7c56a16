package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Detached mounts: `oxyfs mount --daemon` and the mount helper.
//
// mount(8) runs `mount.fuse3 STORE DIR -o OPTS` for an fstab line of type
// fuse.oxyfs, which runs `oxyfs STORE DIR -o OPTS`; a helper installed as
// /sbin/mount.fuse.oxyfs (or mount.oxyfs) is run as `mount.fuse.oxyfs STORE
// DIR -o OPTS [-t fuse.oxyfs] [-n -s -f -v]`. Either way mount(8) waits for
// the helper to exit, so the helper always detaches: it starts `oxyfs mount`
// as a child in a session of its own, shows the child's stderr until the
// child is serving (or fails), and exits with its status.
//
// The child's stderr is a pipe to the parent, which is gone once the parent
// exits. So the child ignores SIGPIPE (ignoreSIGPIPE), and once it serves it
// moves its log off stderr (oxyLog.detach: --log-file, else syslog, else
// nowhere), makes the log file or /dev/null its fd 1 and 2 (what else writes
// there, such as a crash's stack, goes to the log file), and only then
// writes "ready" on the pipe at fd 3 (envDaemonChild) and closes it.

// envDaemonChild marks the detached child: its value is the fd of the pipe
// on which it says "ready".
const envDaemonChild = "OXYFS_MOUNT_CHILD"

// readyTimeout bounds how long a detached mount may take to serve.
const readyTimeout = 2 * time.Minute

// helperArgs recognizes helper mode: argv[0] named mount.oxyfs or
// mount.fuse.oxyfs, or a first argument that is a store URL rather than a
// command (mount.fuse3's way). It returns the arguments of `oxyfs mount`:
// the options mount(8) adds for helpers (-t TYPE, -n, -s, -f, -v) left out.
func helperArgs(argv0 string, args []string) ([]string, bool) {
	base := filepath.Base(argv0)
	if base != "mount.oxyfs" && base != "mount.fuse.oxyfs" && (len(args) == 0 || !strings.Contains(args[0], "://")) {
		return nil, false
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "-t":
			i++ // the type, fuse.oxyfs
		case "-n", "-s", "-f", "-v":
			// no mtab, sloppy, fake, verbose: nothing to do
		default:
			out = append(out, a)
		}
	}
	return out, true
}

// runHelper mounts as mount(8) asks: detached, returning once it serves.
func runHelper(args []string, stderr io.Writer) int {
	if len(positionals(args)) != 2 {
		fmt.Fprintf(stderr, "usage: mount.oxyfs STORE MOUNTPOINT [-o OPTIONS] (got %q)\n", args)
		return 2
	}
	return runDetached(append([]string{"mount"}, args...), stderr)
}

// positionals returns the arguments that are neither flags nor a flag's
// value (-o's); enough to count STORE and MOUNTPOINT.
func positionals(args []string) []string {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-o" || a == "--options":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			pos = append(pos, a)
		}
	}
	return pos
}

// sdNotify sends state ("READY=1", "STOPPING=1") to the service manager at
// $NOTIFY_SOCKET (sd_notify(3), for a systemd Type=notify service); without
// one it does nothing.
func sdNotify(state string) error {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return nil
	}
	switch addr[0] {
	case '@':
		addr = "\x00" + addr[1:] // an abstract socket
	case '/':
	default:
		return fmt.Errorf("sd_notify: NOTIFY_SOCKET %q is neither a path nor an abstract name", addr)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify %s: %w", state, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %s: %w", state, err)
	}
	return nil
}
