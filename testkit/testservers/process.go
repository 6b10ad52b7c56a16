package testservers

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// errAddrInUse marks a start that failed because the port was taken.
var errAddrInUse = errors.New("address already in use")

// process is one run of a server binary.
type process struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done is closed
}

// spawnReq asks the spawner goroutine to start cmd.
type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

// startCmd starts cmd from a goroutine locked to its OS thread for the life of
// the test binary. Pdeathsig fires when the thread that forked the child exits,
// not the process; starting every server from a thread that never exits makes
// Pdeathsig mean "the test binary died".
func startCmd(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for req := range spawnCh {
				req.reply <- req.cmd.Start()
			}
		}()
	})
	reply := make(chan error)
	spawnCh <- spawnReq{cmd: cmd, reply: reply}
	return <-reply
}

// spawn starts bin with args in dir, with its output appended to logPath.
func spawn(bin string, args, env []string, dir, logPath string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer logf.Close() // the child has its own copy
	fmt.Fprintf(logf, "=== testservers: %s %s\n", bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = nil
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = serverProcAttr()
	if err := startCmd(cmd); err != nil {
		return nil, fmt.Errorf("exec %s: %w", bin, err)
	}
	p := &process{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitReady polls url until the server answers with any HTTP response, the
// process exits, or the deadline passes.
func (p *process) waitReady(url string, deadline time.Time) error {
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-p.done:
			err := fmt.Errorf("server exited before it was ready: %v", p.waitErr) //nolint:errorlint // nil after exit 0 (shown as <nil>); errAddrInUse is what callers match
			if t := tail(p.logPath, 8192); strings.Contains(t, "address already in use") || strings.Contains(t, "EADDRINUSE") {
				err = fmt.Errorf("%w: %w", errAddrInUse, err)
			}
			return err
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %v: last error: %w", startTimeout, err)
		}
		select {
		case <-p.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL to the process group and waits for the process to exit.
func (p *process) kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	pid := p.cmd.Process.Pid
	if err := killGroup(pid); err != nil && !errors.Is(err, syscall.ESRCH) {
		if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("kill pid %d: %w", pid, err)
		}
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("pid %d did not exit within 10s of SIGKILL", pid)
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last n bytes of the file at path, or a note why it can't.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	off := st.Size() - int64(n)
	if off < 0 {
		off = 0
	}
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return fmt.Sprintf("(read log: %v)", err)
	}
	return string(b)
}
