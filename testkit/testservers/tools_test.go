package testservers

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func writeExe(t *testing.T, path, script string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// A server program is taken from PATH first, then from OXYFS_TOOLS, and
// only then built or installed (provide).
func TestLocateTriesPathThenOxyfsToolsThenThePinnedBuild(t *testing.T) {
	root := t.TempDir()
	pathDir, tools := filepath.Join(root, "path"), filepath.Join(root, "tools")
	const name = "oxyfs-fake-server"
	onPath, inTools := filepath.Join(pathDir, name), filepath.Join(tools, "node_modules", ".bin", name)
	writeExe(t, onPath, "#!/bin/sh\n")
	writeExe(t, inTools, "#!/bin/sh\n")
	// Not executable: never chosen.
	if err := os.WriteFile(filepath.Join(tools, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", pathDir)
	t.Setenv("OXYFS_TOOLS", filepath.Join(root, "missing")+string(os.PathListSeparator)+tools)

	provided := 0
	provideErr := error(nil)
	b := &backend{binary: name, provide: func(context.Context) (string, error) {
		provided++
		return "/built/" + name, provideErr
	}}
	step := func(want string) {
		t.Helper()
		got, err := locate(t.Context(), b)
		if err != nil || got != want {
			t.Fatalf("locate = %q, %v; want %q", got, err, want)
		}
	}
	step(onPath)
	step(onPath)
	if err := os.Remove(onPath); err != nil {
		t.Fatal(err)
	}
	step(inTools)
	if provided != 0 {
		t.Fatalf("provide ran %d times while a program was found", provided)
	}
	if err := os.Remove(inTools); err != nil {
		t.Fatal(err)
	}
	step("/built/" + name)
	if provided != 1 {
		t.Fatalf("provide ran %d times, want 1", provided)
	}

	provideErr = errors.New("`go tool -n x` failed: no network")
	_, err := locate(t.Context(), b)
	if err == nil || !strings.Contains(err.Error(), "not on PATH nor in OXYFS_TOOLS=") || !errors.Is(err, provideErr) {
		t.Fatalf("locate with a failing build: %v; want both the lookup and the build error", err)
	}

	// What the program needs to run must be on PATH, wherever it is found.
	writeExe(t, onPath, "#!/bin/sh\n")
	b.needs = []string{"oxyfs-fake-interpreter"}
	calls := provided
	_, err = locate(t.Context(), b)
	if want := name + " needs oxyfs-fake-interpreter, which is not on PATH"; err == nil || err.Error() != want || provided != calls {
		t.Fatalf("locate without the interpreter: %v (provide ran %d more times); want %q", err, provided-calls, want)
	}
	writeExe(t, filepath.Join(pathDir, "oxyfs-fake-interpreter"), "#!/bin/sh\n")
	step(onPath)
}

// fakeNPM puts an npm on PATH that counts its runs in COUNT and installs
// node_modules/.bin/fake-bin under --prefix (or fails when NPM_FAIL is set).
func fakeNPM(t *testing.T) (count string) {
	t.Helper()
	dir := t.TempDir()
	count = filepath.Join(dir, "count")
	writeExe(t, filepath.Join(dir, "npm"), `#!/bin/sh
PATH=/usr/bin:/bin
echo "$*" >> "`+count+`"
[ "$1 $2" = "install --prefix" ] || { echo "unexpected args: $*" >&2; exit 2; }
if [ -n "$NPM_FAIL" ]; then echo "npm ERR! 404 Not Found" >&2; exit 1; fi
sleep 0.2
mkdir -p "$3/node_modules/.bin"
printf '#!/bin/sh\n' > "$3/node_modules/.bin/fake-bin"
chmod +x "$3/node_modules/.bin/fake-bin"
`)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return count
}

// quiet keeps the notices of a test from the user's terminal, and counts them.
func quiet(t *testing.T) *int {
	n := new(int)
	var mu sync.Mutex
	saved := notify
	notify = func(key, msg string) {
		mu.Lock()
		defer mu.Unlock()
		*n++
	}
	t.Cleanup(func() { notify = saved })
	return n
}

func npmRuns(t *testing.T, count string) []string {
	t.Helper()
	b, err := os.ReadFile(count)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// Four callers at once (as parallel test binaries would be) install the
// package once, into its own directory of the tools cache; a later call
// finds the install complete and runs nothing.
func TestNPMToolInstallsOnceIntoTheToolsCache(t *testing.T) {
	count := fakeNPM(t)
	notices := quiet(t)
	cache := t.TempDir()
	t.Setenv("OXYFS_TOOLS", cache)
	dir := filepath.Join(cache, "fake@1.2.3")
	want := filepath.Join(dir, "node_modules", ".bin", "fake-bin")

	var wg sync.WaitGroup
	errs := make([]error, 4)
	paths := make([]string, 4)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = npmTool("fake@1.2.3", "fake-bin")(t.Context())
		}()
	}
	wg.Wait()
	for i := range paths {
		if errs[i] != nil || paths[i] != want {
			t.Fatalf("caller %d: %q, %v; want %q", i, paths[i], errs[i], want)
		}
	}
	runs := npmRuns(t, count)
	wantRun := "install --prefix " + dir + " --no-audit --no-fund --loglevel=error fake@1.2.3"
	if len(runs) != 1 || runs[0] != wantRun {
		t.Fatalf("npm runs = %q, want just %q", runs, wantRun)
	}
	if p, err := npmTool("fake@1.2.3", "fake-bin")(t.Context()); err != nil || p != want {
		t.Fatalf("second install: %q, %v", p, err)
	}
	if n := len(npmRuns(t, count)); n != 1 {
		t.Fatalf("npm ran %d times in all, want 1", n)
	}
	if *notices != 1 {
		t.Fatalf("%d notices of the install, want 1", *notices)
	}
}

// An install that did not finish (no stamp) is done again; a failing npm
// is an error that quotes npm.
func TestNPMToolRetriesAnUnfinishedInstallAndReportsFailure(t *testing.T) {
	count := fakeNPM(t)
	quiet(t)
	cache := t.TempDir()
	t.Setenv("OXYFS_TOOLS", cache)
	// A binary left by an interrupted install, without the stamp.
	writeExe(t, filepath.Join(cache, "fake@1.2.3", "node_modules", ".bin", "fake-bin"), "#!/bin/sh\n")

	t.Setenv("NPM_FAIL", "1")
	_, err := npmTool("fake@1.2.3", "fake-bin")(t.Context())
	if err == nil || !strings.Contains(err.Error(), "npm ERR! 404 Not Found") {
		t.Fatalf("install with a failing npm: %v; want npm's message", err)
	}
	t.Setenv("NPM_FAIL", "")
	if _, err := npmTool("fake@1.2.3", "fake-bin")(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(npmRuns(t, count)); n != 2 {
		t.Fatalf("npm ran %d times, want 2 (the failure, then the install)", n)
	}
}

func TestNPMToolWithoutNPM(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("OXYFS_TOOLS", t.TempDir())
	_, err := npmTool("fake@1.2.3", "fake-bin")(t.Context())
	if err == nil || !strings.Contains(err.Error(), "npm is not on PATH to install fake@1.2.3") {
		t.Fatalf("npmTool without npm: %v", err)
	}
}

func TestModuleRootHoldsTheToolsGoMod(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"module github.com/oxyfs/oxyfs\n", "\tgithub.com/versity/versitygw/cmd/versitygw\n", "\tgithub.com/fsouza/fake-gcs-server\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s/go.mod lacks %q", root, want)
		}
	}
}

// fakeGo puts a go command on PATH that runs script for `go tool -n NAME`.
func fakeGo(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	writeExe(t, filepath.Join(dir, "go"), "#!/bin/sh\nPATH=/usr/bin:/bin\n"+script)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("OXYFS_TOOLS", t.TempDir())
}

func TestGoToolRunsGoToolDashNInTheModuleRoot(t *testing.T) {
	quiet(t)
	bin := filepath.Join(t.TempDir(), "versitygw")
	writeExe(t, bin, "#!/bin/sh\n")
	args := filepath.Join(t.TempDir(), "args")
	fakeGo(t, `echo "$PWD $*" > `+args+`; echo `+bin)
	got, err := goTool("versitygw")(t.Context())
	if err != nil || got != bin {
		t.Fatalf("goTool = %q, %v; want %q", got, err, bin)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(root)
	if want := abs + " tool -n versitygw\n"; string(b) != want {
		t.Fatalf("the go command ran as %q, want %q", b, want)
	}
}

func TestGoToolReportsTheBuildError(t *testing.T) {
	quiet(t)
	fakeGo(t, `echo "go: downloading github.com/versity/versitygw v1.8.0" >&2; echo "dial tcp: lookup proxy.golang.org: no such host" >&2; exit 1`)
	_, err := goTool("versitygw")(t.Context())
	if err == nil || !strings.Contains(err.Error(), "failed: exit status 1: go: downloading github.com/versity/versitygw v1.8.0\ndial tcp: lookup proxy.golang.org: no such host") {
		t.Fatalf("goTool with a failing build: %v", err)
	}
	fakeGo(t, `echo not-a-path`)
	if _, err := goTool("versitygw")(t.Context()); err == nil || !strings.Contains(err.Error(), `printed "not-a-path\n", not an executable file`) {
		t.Fatalf("goTool printing garbage: %v", err)
	}
}

// A build cut short by Prepare's budget says why (the cause of ctx).
func TestGoToolStopsAtTheDeadlineWithItsCause(t *testing.T) {
	quiet(t)
	fakeGo(t, `exec sleep 60`)
	cause := errors.New("not done within 1ms, half of the test timeout")
	ctx, cancel := context.WithTimeoutCause(t.Context(), time.Millisecond, cause)
	defer cancel()
	_, err := goTool("versitygw")(ctx)
	if !errors.Is(err, cause) {
		t.Fatalf("goTool past the deadline: %v; want the cause %q", err, cause)
	}
}

func TestTimeoutContextIsHalfTheTestTimeout(t *testing.T) {
	ctx, cancel := timeoutContext(2 * time.Millisecond)
	defer cancel()
	<-ctx.Done()
	want := "not done within 1ms, half of the test timeout (-timeout 2ms); the go build cache and the tools cache keep what was done: run the tests again, or with a longer -timeout"
	if got := context.Cause(ctx); got == nil || got.Error() != want {
		t.Fatalf("cause = %v, want %q", got, want)
	}
	ctx, cancel = timeoutContext(0)
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("no test timeout, yet a deadline")
	}
}

// A lock held by another test binary is waited for, up to ctx.
func TestLockInWaitsForTheHolderUntilTheDeadline(t *testing.T) {
	t.Setenv("OXYFS_TOOLS", t.TempDir())
	unlock, err := lockIn(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("budget spent")
	ctx, cancel := context.WithTimeoutCause(t.Context(), 50*time.Millisecond, cause)
	defer cancel()
	if _, err := lockIn(ctx, "x"); !errors.Is(err, cause) {
		t.Fatalf("lockIn of a held lock: %v; want the cause %q", err, cause)
	}
	got := make(chan error, 1)
	go func() {
		u, err := lockIn(t.Context(), "x")
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("lockIn after the holder let go: %v", err)
	}
}
