// Package mapcopy copies a memory mapping of a file on a FUSE mount that
// this very process serves, in a child process: the mapping is made and
// read there, never here.
//
// A page fault on such a mapping is served by the process's own FUSE
// server. A goroutine in a page fault cannot be stopped for the garbage
// collector, which then waits for it, while the server's goroutines wait
// for the collector: the process hangs (a test binary did so in CI, one
// thread in folio_wait_bit_common). Copying the mapping through write(2),
// so that the kernel took the fault inside a system call, was not enough:
// the simulation's test binary hung in CI again (2026-12-06), every
// thread stopped for the collector but one in a pwrite(2) whose source
// was the mapping — the fault holds the process's memory map lock, which
// the runtime's own page faults and mmap calls then wait for. So the
// mapping lives in another process, which takes the faults; this one
// only serves them.
//
// The child is this executable run again with childEnv set: a binary that
// uses Start calls MaybeChild first thing (a test package in its
// TestMain). The open file is passed to the child over a socket
// (SCM_RIGHTS), so the mapping is of the very open the caller made — the
// same handle, with the size the caller saw.
//
// Memory: the copy (size bytes), in each process. Concurrency: a Child
// takes one Copy at a time (its mutex); one per goroutine that maps keeps
// them from waiting on each other.
package mapcopy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// childEnv set (to "1") makes MaybeChild run the child's loop.
const childEnv = "OXYFS_MAPCOPY_CHILD"

// childFD is the child's end of the socket (cmd.ExtraFiles[0]).
const childFD = 3

// startTimeout bounds the wait for the child's first word.
const startTimeout = 30 * time.Second

// ready is the child's first word, once it serves.
const ready = "mapcopy ready\n"

// Child is a child process that maps and copies files for this one.
type Child struct {
	mu   sync.Mutex // held by a Copy, and by Close
	cmd  *exec.Cmd
	sock *os.File // this process's end of the socket; nil once closed; guarded by mu
	err  error    // the first failure of the socket; every Copy after returns it; guarded by mu
}

// Start runs the child (this executable again, which must call
// MaybeChild first) and waits for it to say it serves.
func Start() (*Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("mapcopy: start the child: %w", err)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("mapcopy: start the child: socketpair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "mapcopy"), os.NewFile(uintptr(fds[1]), "mapcopy-child")
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		mine.Close()
		return nil, fmt.Errorf("mapcopy: start the child %s: %w", exe, err)
	}
	c := &Child{cmd: cmd, sock: mine}
	word := make([]byte, len(ready))
	kill := time.AfterFunc(startTimeout, func() { cmd.Process.Kill() }) // a child that never answers ends the read
	_, err = io.ReadFull(mine, word)
	kill.Stop()
	if err == nil && string(word) != ready {
		err = errors.New("another first word")
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("mapcopy: the child %s did not say it serves (%q; does its main call mapcopy.MaybeChild first?): %w", exe, word, err)
	}
	return c, nil
}

// Copy maps size bytes of f in the child, read-only, MAP_SHARED if
// shared, else MAP_PRIVATE, and returns a copy of them. The mapping's
// failure keeps its errno (ENODEV: a mount that maps no direct-I/O file).
func (c *Child) Copy(f *os.File, size int, shared bool) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	if c.sock == nil {
		return nil, errors.New("mapcopy: copy after Close")
	}
	var req [9]byte
	req[0] = 'p'
	if shared {
		req[0] = 's'
	}
	binary.BigEndian.PutUint64(req[1:], uint64(size))
	if err := syscall.Sendmsg(int(c.sock.Fd()), req[:], syscall.UnixRights(int(f.Fd())), nil, 0); err != nil {
		c.err = fmt.Errorf("mapcopy: send %s to the child: %w", f.Name(), err)
		return nil, c.err
	}
	out, err := readReply(c.sock)
	if err != nil {
		var ce *childError
		if !errors.As(err, &ce) {
			c.err = fmt.Errorf("mapcopy: the child's answer for %s: %w", f.Name(), err)
			return nil, c.err
		}
		return nil, fmt.Errorf("mapcopy %s: %w", f.Name(), err)
	}
	return out, nil
}

// Close ends the child: it exits at the end of its socket.
func (c *Child) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sock == nil {
		return nil
	}
	c.sock.Close()
	c.sock = nil
	if err := c.cmd.Wait(); err != nil {
		return fmt.Errorf("mapcopy: the child: %w", err)
	}
	return nil
}

// childError is a failure the child reported: its message and errno.
type childError struct {
	msg   string
	errno syscall.Errno // 0: none
}

func (e *childError) Error() string { return e.msg }

func (e *childError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}

// readReply reads one answer: 'o', a length and the bytes; or 'e', an
// errno, a length and the message.
func readReply(r io.Reader) ([]byte, error) {
	var head [9]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint64(head[1:])
	switch head[0] {
	case 'o':
		if n > maxCopy {
			return nil, fmt.Errorf("a copy of %d bytes, over %d", n, maxCopy)
		}
		out := make([]byte, n)
		_, err := io.ReadFull(r, out)
		return out, err
	case 'e':
		var ml [8]byte
		if _, err := io.ReadFull(r, ml[:]); err != nil {
			return nil, err
		}
		m := binary.BigEndian.Uint64(ml[:])
		if m > 1<<16 {
			return nil, fmt.Errorf("an error message of %d bytes", m)
		}
		msg := make([]byte, m)
		if _, err := io.ReadFull(r, msg); err != nil {
			return nil, err
		}
		return nil, &childError{msg: string(msg), errno: syscall.Errno(n)}
	}
	return nil, fmt.Errorf("an answer of kind %q", head[0])
}

// maxCopy bounds one copy (the largest mapping a caller asks for).
const maxCopy = 1 << 30
