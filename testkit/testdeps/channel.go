package testdeps

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// markerMaxAge is how long a marker file is kept: far longer than any
// `go test` run.
const markerMaxAge = 24 * time.Hour

// channel is the way to the user's eyes from inside a test binary.
type channel struct {
	proc      string    // procfs root: "/proc"
	ppid      int       // the parent process: the go command, usually
	markerDir string    // where the O_EXCL markers are made
	stderr    io.Writer // when the parent is not the go command, or on any error
	now       func() time.Time
	// getfd duplicates fd of process pid into this one: the same open file
	// description, offset included (pidfdGetfd).
	getfd func(pid, fd int) (*os.File, error)
}

func defaultChannel() *channel {
	return &channel{
		proc:      "/proc",
		ppid:      os.Getppid(),
		markerDir: filepath.Join(os.TempDir(), fmt.Sprintf("oxyfs-test-skips-%d", os.Getuid())),
		stderr:    os.Stderr,
		now:       time.Now,
		getfd:     pidfdGetfd,
	}
}

// send shows line to the user. When the parent is the go command, only the
// first test binary of the run to send key shows it, on the go command's
// standard error; otherwise (or if that cannot be written safely) line goes
// to c.stderr.
func (c *channel) send(key, line string) {
	run, ok := c.goRun()
	if !ok {
		fmt.Fprintln(c.stderr, line)
		return
	}
	f, err := c.openGoStderr()
	if err != nil {
		fmt.Fprintln(c.stderr, line)
		return
	}
	defer f.Close()
	first, err := c.claim(run, key)
	if err != nil {
		fmt.Fprintln(c.stderr, line)
		return
	}
	if !first {
		return
	}
	if _, err := io.WriteString(f, line+"\n"); err != nil {
		fmt.Fprintln(c.stderr, line)
	}
}

// openGoStderr opens the go command's standard error for appending. A
// regular file that the go command writes at its own offset (a shell's >)
// is not opened anew, which would write at an offset of its own that the go
// command's next output overwrites: it is duplicated from the go command
// (pidfd_getfd(2)), the same open file description, so the line goes at the
// go command's offset and moves it on.
func (c *channel) openGoStderr() (*os.File, error) {
	p := c.procPath("fd", "2")
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.Mode().IsRegular() {
		info, err := os.ReadFile(c.procPath("fdinfo", "2"))
		if err != nil {
			return nil, err
		}
		flags, err := fdFlags(string(info))
		if err != nil {
			return nil, err
		}
		if flags&syscall.O_APPEND == 0 {
			if c.getfd == nil {
				return nil, errors.New("the go command writes its stderr file at its own offset")
			}
			f, err := c.getfd(c.ppid, 2)
			if err != nil {
				return nil, fmt.Errorf("the go command writes its stderr file at its own offset, and it cannot be shared: %w", err)
			}
			return f, nil
		}
	}
	return os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
}

// fdFlags returns the open flags of a /proc/PID/fdinfo/FD text: its
// "flags:" line, in octal.
func fdFlags(info string) (int, error) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				return 0, fmt.Errorf("parse fdinfo flags: %w", err)
			}
			return int(n), nil
		}
	}
	return 0, errors.New("parse fdinfo: no flags line")
}

func (c *channel) procPath(elem ...string) string {
	return filepath.Join(append([]string{c.proc, strconv.Itoa(c.ppid)}, elem...)...)
}

// goRun returns "PPID-STARTTIME", naming this run of the go command, if
// the parent process is the go command.
func (c *channel) goRun() (string, bool) {
	comm, err := os.ReadFile(c.procPath("comm"))
	if err != nil || strings.TrimSpace(string(comm)) != "go" {
		return "", false
	}
	stat, err := os.ReadFile(c.procPath("stat"))
	if err != nil {
		return "", false
	}
	start, err := startTime(string(stat))
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%d-%d", c.ppid, start), true
}

// startTime returns field 22 of a /proc/PID/stat line: the time the process
// started, in clock ticks after boot. Field 2 is the command name in
// parentheses, which may itself hold spaces and parentheses, so the fields
// are counted from the last ')'.
func startTime(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("parse /proc stat: no ')' after the command name")
	}
	fields := strings.Fields(stat[i+1:])
	const idx = 22 - 3 // fields[0] is field 3, the state
	if len(fields) <= idx {
		return 0, fmt.Errorf("parse /proc stat: %d fields after the command name, want at least %d", len(fields), idx+1)
	}
	v, err := strconv.ParseUint(fields[idx], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse /proc stat: start time: %w", err)
	}
	return v, nil
}

// claim makes the marker of key for run with O_EXCL: true if this call
// made it, false if another test binary of the run already had.
func (c *channel) claim(run, key string) (bool, error) {
	if err := os.MkdirAll(c.markerDir, 0o700); err != nil {
		return false, fmt.Errorf("make marker dir: %w", err)
	}
	c.prune()
	name := filepath.Join(c.markerDir, run+"-"+fileSafe(key))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, iofs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("make marker %q: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("close marker %q: %w", name, err)
	}
	return true, nil
}

// prune removes markers older than markerMaxAge, quietly.
func (c *channel) prune() {
	entries, err := os.ReadDir(c.markerDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && c.now().Sub(info.ModTime()) > markerMaxAge {
			_ = os.Remove(filepath.Join(c.markerDir, e.Name()))
		}
	}
}

// fileSafe keeps [A-Za-z0-9._-] of key and turns anything else into '_'.
func fileSafe(key string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, key)
}
