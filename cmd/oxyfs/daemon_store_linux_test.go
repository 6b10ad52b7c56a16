package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// TestDetachedChildArgvHoldsNoSecret (issue 41, 10): a detached mount (the
// fstab helper's way) whose store URL holds a password starts its child
// without the password in argv, which every local user reads in
// /proc/PID/cmdline; the child gets the URL through its environment. The
// store's endpoint accepts connections and never answers, so the child
// stays, opening the store, while its argv is read.
func TestDetachedChildArgvHoldsNoSecret(t *testing.T) {
	const secret = "SuperSecretPass"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	mnt := t.TempDir()
	testwatch.Arm(t).Abort(mnt)
	url := "s3://b?endpoint=http://minioadmin:" + secret + "@" + ln.Addr().String() + "&region=us-east-1&use_path_style=true"
	_, env := oxyfsOnPath(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "mount", "--daemon", "--timeout", "30s", url, mnt)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	selfComm := filepath.Base(self)
	if len(selfComm) > 15 {
		selfComm = selfComm[:15] // TASK_COMM_LEN
	}
	var child int
	for deadline := time.Now().Add(20 * time.Second); child == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no detached child found; the helper's stderr:\n%s", stderr.String())
		}
		procs, _ := filepath.Glob("/proc/[0-9]*/environ")
		for _, p := range procs {
			// Only this binary's processes: reading another process's
			// environ or cmdline waits for its memory map's lock, which a
			// process stuck in a page fault on a FUSE mount (another
			// test's, beside this one) holds — the read then hangs. comm
			// needs no such lock.
			if comm, err := os.ReadFile(filepath.Join(filepath.Dir(p), "comm")); err != nil || strings.TrimSpace(string(comm)) != selfComm {
				continue
			}
			envs, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(envs, []byte(envDaemonChild+"=3\x00")) {
				continue
			}
			argv, err := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
			if err != nil || !bytes.Contains(argv, []byte(mnt)) {
				continue
			}
			child, _ = strconv.Atoi(filepath.Base(filepath.Dir(p)))
			defer syscall.Kill(child, syscall.SIGKILL)
			if bytes.Contains(argv, []byte(secret)) {
				t.Fatalf("the detached child's argv holds the password: %q", strings.ReplaceAll(string(argv), "\x00", " "))
			}
			if !bytes.Contains(envs, []byte(envChildStore+"="+url+"\x00")) {
				t.Errorf("the detached child's environment does not carry the store URL")
			}
			break
		}
	}
}

// TestFailedDetachedMountSaysWhyOnce (issue 38): a detached mount that
// fails says why in one line — the child's — and the parent adds no
// "mount failed: exit status 1" after it; the exit status is the child's.
// Its --log-file says why too (it was empty).
func TestFailedDetachedMountSaysWhyOnce(t *testing.T) {
	mnt := t.TempDir()
	testwatch.Arm(t).Abort(mnt)
	_, env := oxyfsOnPath(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-store")
	logFile := filepath.Join(t.TempDir(), "mount.log")
	cmd := exec.Command(self, "mount", "--daemon", "--cache-dir", "", "--log-file", logFile, "file://"+missing, mnt)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("the failed mount ended with %v, want exit status 1; stderr:\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], missing) {
		t.Errorf("stderr has %d line(s), want the one that names the missing store %s:\n%s", len(lines), missing, stderr.String())
	}
	if strings.Contains(stderr.String(), "exit status") {
		t.Errorf("stderr says a process's exit status instead of why:\n%s", stderr.String())
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	logged := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(logged) != 1 || !strings.Contains(logged[0], " ERROR oxyfs: mount failed: ") || !strings.Contains(logged[0], missing) {
		t.Errorf("the log file holds %q; want one ERROR line that says the mount failed and names %s", data, missing)
	}
}
