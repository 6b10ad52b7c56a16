package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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

// runDetached runs `oxyfs ARGS` (a mount) as a detached child, copies its
// stderr to stderr until it serves or exits, and returns its exit status (0
// once it serves).
func runDetached(args []string, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "oxyfs: detach: "+format+"\n", a...)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		return fail("%v", err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fail("%v", err)
	}
	defer devnull.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		return fail("%v", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fail("%v", err)
	}
	cmd := &exec.Cmd{Path: self, Args: append([]string{"oxyfs"}, args...)}
	cmd.Env = append(os.Environ(), envDaemonChild+"=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no terminal's SIGHUP or SIGINT
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, errW
	cmd.ExtraFiles = []*os.File{readyW} // fd 3
	err = cmd.Start()
	errW.Close()
	readyW.Close()
	if err != nil {
		errR.Close()
		readyR.Close()
		return fail("start %s: %v", self, err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(errR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(stderr, sc.Text())
		}
		errR.Close()
	}()
	ready := make(chan bool, 1)
	go func() {
		b, _ := io.ReadAll(readyR)
		readyR.Close()
		ready <- string(b) == "ready\n"
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	timeout := time.NewTimer(readyTimeout)
	defer timeout.Stop()
	select {
	case ok := <-ready:
		if ok {
			// The child closed its stderr before it said ready: what it
			// wrote there is all copied now.
			<-copied
			return 0
		}
		// It closed the pipe without a word: it exits.
		return exitStatus(<-exited, copied, stderr)
	case err := <-exited:
		return exitStatus(err, copied, stderr)
	case <-timeout.C:
		_ = cmd.Process.Kill()
		return fail("the mount did not serve within %v; killed it", readyTimeout)
	}
}

// exitStatus reports how a detached child that never served ended.
func exitStatus(err error, copied <-chan struct{}, stderr io.Writer) int {
	<-copied
	code := 1
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
		code = ee.ExitCode()
	}
	if err == nil {
		err = fmt.Errorf("exited before it was serving")
	}
	fmt.Fprintf(stderr, "oxyfs: mount failed: %v\n", err)
	return code
}

// daemonChild is the detached child's end of runDetached, nil in any other
// process.
type daemonChild struct{ ready *os.File }

// detachedChild returns the child's end if this process is the detached
// child, taking the ready pipe out of what its own children inherit.
func detachedChild() *daemonChild {
	v := os.Getenv(envDaemonChild)
	if v == "" {
		return nil
	}
	os.Unsetenv(envDaemonChild)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return &daemonChild{}
	}
	syscall.CloseOnExec(fd)
	return &daemonChild{ready: os.NewFile(uintptr(fd), "ready")}
}

// serving moves the log off stderr (oxyLog.detach), makes fd 1 and 2 the
// log file or /dev/null, and tells the parent the mount serves.
func (c *daemonChild) serving(l *oxyLog) {
	out, err := l.detach()
	if err == nil {
		_ = unix.Dup2(int(out.Fd()), 1)
		_ = unix.Dup2(int(out.Fd()), 2)
		if out.Name() == os.DevNull {
			out.Close()
		}
	} else {
		l.Error(fmt.Sprintf("detach: %v; stderr stays as it is", err))
	}
	if c.ready != nil {
		_, _ = c.ready.WriteString("ready\n")
		c.ready.Close()
	}
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
