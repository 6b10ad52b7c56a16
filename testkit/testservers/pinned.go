package testservers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/oxyfs/oxyfs/testkit/testdeps"
)

// The pinned servers: what the harness builds or installs itself when a
// server is neither on PATH nor in OXYFS_TOOLS.
const (
	// goToolTimeout bounds one `go tool -n`: a first build of versitygw
	// from an empty build cache took 330 s of CPU (15 minutes on a busy
	// 2-core machine); later calls take it from the go build cache.
	goToolTimeout = 15 * time.Minute
	// azuritePkg is the npm package installed for "azure".
	azuritePkg = "azurite@3.35.0"
	// npmTimeout bounds the npm install of azuritePkg.
	npmTimeout = 10 * time.Minute
	// waitDelay bounds the wait for a killed command's output pipes, which
	// its children may hold open.
	waitDelay = 10 * time.Second
	// lockPoll is how often a test binary waiting for another's build or
	// install tries the lock again.
	lockPoll = 200 * time.Millisecond
	// noticeDelay: a build or install still running after this long is
	// announced to the user, so that a first `go test` does not look hung.
	noticeDelay = 10 * time.Second
)

// goTool returns a provide function for a tool of go.mod: `go tool -n
// NAME`, run in the module root, builds the tool at the version go.mod
// pins (go.sum checks it) into the go build cache on first use, and prints
// the path of the cached binary. Concurrent test binaries are safe (the go
// build cache is); a lock file makes the second one wait for the first's
// build instead of compiling the same code alongside it.
func goTool(name string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeoutCause(ctx, goToolTimeout, fmt.Errorf("not done within %v", goToolTimeout))
		defer cancel()
		unlock, err := lockIn(ctx, "go-tool-"+name)
		if err != nil && ctx.Err() != nil {
			return "", fmt.Errorf("`go tool -n %s`: waiting for another test binary's build: %w", name, err)
		}
		if err == nil {
			defer unlock()
		} // without the lock both builds run, which is only slower
		stop := noticeAfter("go-tool-"+name, fmt.Sprintf("getting %s from `go tool -n %s` in %s (it builds it on first use, then takes it from the go build cache) ...", name, name, root))
		defer stop()

		cmd := exec.CommandContext(ctx, "go", "tool", "-n", name)
		cmd.Dir = root
		cmd.WaitDelay = waitDelay
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("`go tool -n %s` in %s: %w", name, root, context.Cause(ctx))
			}
			return "", fmt.Errorf("`go tool -n %s` in %s failed: %w: %s", name, root, err, lastLines(stderr.Bytes(), 2048))
		}
		if took := time.Since(t0); took > noticeDelay { // the notice above was shown
			notify("go-tool-done-"+name, fmt.Sprintf("got %s from `go tool` in %v", name, took.Round(100*time.Millisecond)))
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		p := strings.TrimSpace(lines[len(lines)-1])
		if !filepath.IsAbs(p) || !executable(p) {
			return "", fmt.Errorf("`go tool -n %s` in %s printed %q, not an executable file", name, root, stdout.String())
		}
		return p, nil
	}
}

// moduleRoot returns the directory of oxyfs's go.mod, which lists the
// tools: from this file's own path, or (a binary built with -trimpath)
// from `go env GOMOD` in the working directory, which go test sets to the
// package's directory.
func moduleRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return root, nil
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("find the module root: not inside a module (go env GOMOD = %q)", gomod)
	}
	return filepath.Dir(gomod), nil
}

// npmTool returns a provide function that installs the npm package pkg
// (name@version) into its own directory of the tools cache, DIR/pkg, once,
// and returns DIR/pkg/node_modules/.bin/bin. A stamp file written after a
// successful install marks it complete; a lock file keeps concurrent test
// binaries from running npm into the same directory at once.
func npmTool(pkg, bin string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		cache, err := toolsCache()
		if err != nil {
			return "", err
		}
		dir := filepath.Join(cache, pkg)
		p := filepath.Join(dir, "node_modules", ".bin", bin)
		stamp := filepath.Join(dir, ".oxyfs-installed")
		done := func() bool {
			b, err := os.ReadFile(stamp)
			return err == nil && string(b) == pkg && executable(p)
		}
		if done() {
			return p, nil
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			return "", fmt.Errorf("npm is not on PATH to install %s (install Node.js and npm)", pkg)
		}
		ctx, cancel := context.WithTimeoutCause(ctx, npmTimeout, fmt.Errorf("not done within %v", npmTimeout))
		defer cancel()
		unlock, err := lockIn(ctx, pkg)
		if err != nil {
			return "", fmt.Errorf("install %s: %w", pkg, err)
		}
		defer unlock()
		if done() { // another test binary installed it while this one waited
			return p, nil
		}
		notify("install-"+pkg, fmt.Sprintf("installing %s with npm into %s (first use) ...", pkg, dir))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("install %s: %w", pkg, err)
		}
		cmd := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", pkg)
		cmd.Dir = dir
		cmd.WaitDelay = waitDelay
		if out, err := cmd.CombinedOutput(); err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("npm install --prefix %s %s: %w", dir, pkg, context.Cause(ctx))
			}
			return "", fmt.Errorf("npm install --prefix %s %s: %w: %s", dir, pkg, err, lastLines(out, 2048))
		}
		if !executable(p) {
			return "", fmt.Errorf("npm install --prefix %s %s succeeded but %s is not there", dir, pkg, p)
		}
		if err := os.WriteFile(stamp, []byte(pkg), 0o644); err != nil {
			return "", fmt.Errorf("install %s: %w", pkg, err)
		}
		return p, nil
	}
}

// toolsCache returns the directory the harness installs into and keeps its
// lock files in, creating it: the first entry of OXYFS_TOOLS, or else
// oxyfs-tools in the user cache directory (~/.cache/oxyfs-tools).
func toolsCache() (string, error) {
	dir := ""
	for _, d := range filepath.SplitList(os.Getenv("OXYFS_TOOLS")) {
		if d != "" {
			dir = d
			break
		}
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("tools cache: set OXYFS_TOOLS: %w", err)
		}
		dir = filepath.Join(base, "oxyfs-tools")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("tools cache: %w", err)
	}
	return dir, nil
}

// lockIn takes an exclusive flock on NAME.lock in the tools cache, waiting
// for another process that holds it until ctx is done. unlock releases it.
func lockIn(ctx context.Context, name string) (unlock func(), err error) {
	cache, err := toolsCache()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cache, name+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	for {
		err = tryLock(f)
		if err == nil {
			return func() { f.Close() }, nil // closing the file releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, context.Cause(ctx))
		case <-time.After(lockPoll):
		}
	}
}

// notify tells the user msg while tests run; tests of this package replace
// it.
var notify = testdeps.Notice

// noticeAfter tells the user msg (once per go test run and key) if stop is
// not called within noticeDelay.
func noticeAfter(key, msg string) (stop func()) {
	t := time.AfterFunc(noticeDelay, func() { notify(key, msg) })
	return func() { t.Stop() }
}
