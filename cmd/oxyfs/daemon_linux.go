package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The detaching of a mount on Linux (daemon.go says how it goes).

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
	args, env := hideStoreURL(args)
	cmd := &exec.Cmd{Path: self, Args: append([]string{"oxyfs"}, args...)}
	cmd.Env = append(append(os.Environ(), envDaemonChild+"=3"), env...)
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
	said := false // set before copied closes: the child wrote a line
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(errR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			said = true
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
		return exitStatus(<-exited, copied, &said, stderr)
	case err := <-exited:
		return exitStatus(err, copied, &said, stderr)
	case <-timeout.C:
		_ = cmd.Process.Kill()
		return fail("the mount did not serve within %v; killed it", readyTimeout)
	}
}

// exitStatus reports how a detached child that never served ended, and
// returns the status to exit with. A child that failed and said so (its
// last line, copied above: "oxyfs mount: open store …: …") has said why:
// the parent adds nothing ("mount failed: exit status 1" after it said
// only that a process exited). A child that said nothing — killed, or
// gone with status 0 before it served — gets one line that says so.
func exitStatus(err error, copied <-chan struct{}, said *bool, stderr io.Writer) int {
	<-copied // said is final
	code := 1
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		code = ee.ExitCode()
		if *said {
			return code
		}
		fmt.Fprintf(stderr, "oxyfs: mount failed: the mount exited with status %d before it served, and said nothing\n", code)
	case err != nil && ee != nil:
		fmt.Fprintf(stderr, "oxyfs: mount failed: the mount ended (%v) before it served\n", ee.ProcessState)
	case err != nil:
		fmt.Fprintf(stderr, "oxyfs: mount failed: %v\n", err)
	default:
		fmt.Fprintf(stderr, "oxyfs: mount failed: the mount exited before it served\n")
	}
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
