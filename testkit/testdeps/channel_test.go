package testdeps

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeParent lays out /proc/PID/{comm,stat,fd/2,fdinfo/2} under a temp
// dir, with fd/2 a regular file standing for the go command's standard
// error, which it appends to (a shell's >>).
type fakeParent struct {
	proc, goStderr, markerDir string
	pid                       int
}

func newFakeParent(t *testing.T, comm string, start uint64) *fakeParent {
	t.Helper()
	root := t.TempDir()
	p := &fakeParent{proc: filepath.Join(root, "proc"), pid: 4242, markerDir: filepath.Join(root, "markers")}
	dir := filepath.Join(p.proc, "4242")
	for _, d := range []string{"fd", "fdinfo"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.setFlags(t, "0102001") // O_LARGEFILE|O_APPEND|O_WRONLY
	p.goStderr = filepath.Join(dir, "fd", "2")
	if err := os.WriteFile(p.goStderr, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(comm+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.setStart(t, comm, start)
	return p
}

func (p *fakeParent) setFlags(t *testing.T, octal string) {
	t.Helper()
	info := "pos:\t1234\nflags:\t" + octal + "\nmnt_id:\t30\nino:\t77\n"
	if err := os.WriteFile(filepath.Join(p.proc, "4242", "fdinfo", "2"), []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (p *fakeParent) setStart(t *testing.T, comm string, start uint64) {
	t.Helper()
	// Fields 3..21, then 22 = start, then a few more, as the kernel writes them.
	stat := fmt.Sprintf("%d (%s) S 1 4242 4242 34816 4242 4194304 100 0 0 0 5 3 0 0 20 0 12 0 %d 1000000 500 18446744073709551615\n", p.pid, comm, start)
	if err := os.WriteFile(filepath.Join(p.proc, "4242", "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
}

// binary returns the channel of one test binary whose parent is p.
func (p *fakeParent) binary(stderr *bytes.Buffer) *channel {
	return &channel{proc: p.proc, ppid: p.pid, markerDir: p.markerDir, stderr: stderr, now: time.Now,
		getfd: func(pid, fd int) (*os.File, error) { return nil, syscall.EPERM }}
}

func (p *fakeParent) shown(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(p.goStderr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStartTimeIsField22CountedAfterTheCommandName(t *testing.T) {
	for _, comm := range []string{"go", "a b", "x) (y", ")"} {
		stat := fmt.Sprintf("77 (%s) S 1 77 77 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 1 2 3\n", comm)
		got, err := startTime(stat)
		if err != nil || got != 987654 {
			t.Errorf("startTime(%q) = %d, %v; want 987654", stat, got, err)
		}
	}
	for _, bad := range []string{"", "77 go S 1", "77 (go) S 1 2 3", "77 (go) S 1 77 77 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 -5 1"} {
		if got, err := startTime(bad); err == nil {
			t.Errorf("startTime(%q) = %d, nil; want an error", bad, got)
		}
	}
}

func FuzzStartTime(f *testing.F) {
	f.Add("77 (go) S 1 77 77 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 1 2 3\n")
	f.Add("1 (x) y) S")
	f.Add(")))")
	f.Fuzz(func(t *testing.T, stat string) {
		v, err := startTime(stat)
		if err != nil {
			return
		}
		i := strings.LastIndexByte(stat, ')')
		field := strings.Fields(stat[i+1:])[19]
		if digits := strings.TrimLeft(field, "0"); digits != fmt.Sprint(v) && !(v == 0 && digits == "") {
			t.Fatalf("startTime(%q) = %d, but field 22 is %q", stat, v, field)
		}
	})
}

// Three test binaries of one go test run: each line reaches the go
// command's stderr once, from the first binary that sends it.
func TestSendShowsEachKeyOncePerGoRun(t *testing.T) {
	p := newFakeParent(t, "go", 1000)
	var e1, e2, e3 bytes.Buffer
	p.binary(&e1).send("skip-azure", "line azure from 1")
	p.binary(&e2).send("skip-azure", "line azure from 2")
	p.binary(&e2).send("skip-fuse", "line fuse from 2")
	p.binary(&e3).send("skip-fuse", "line fuse from 3")
	if got, want := p.shown(t), "line azure from 1\nline fuse from 2\n"; got != want {
		t.Fatalf("the go command's stderr got %q, want %q", got, want)
	}
	if e1.Len()+e2.Len()+e3.Len() != 0 {
		t.Fatalf("the binaries' own stderr got %q %q %q, want nothing", e1.String(), e2.String(), e3.String())
	}

	// The same pid started again is another run: it is told again.
	p.setStart(t, "go", 2000)
	p.binary(&e1).send("skip-azure", "line azure, next run")
	if got, want := p.shown(t), "line azure from 1\nline fuse from 2\nline azure, next run\n"; got != want {
		t.Fatalf("after a new run the go command's stderr has %q, want %q", got, want)
	}
}

// A test binary run by hand (or by another test) has no run to share: each
// one prints on its own stderr and makes no marker.
func TestSendWithoutTheGoCommandPrintsEveryTime(t *testing.T) {
	p := newFakeParent(t, "bash", 1000)
	var e1, e2 bytes.Buffer
	p.binary(&e1).send("skip-azure", "azure line")
	p.binary(&e2).send("skip-azure", "azure line")
	if e1.String() != "azure line\n" || e2.String() != "azure line\n" {
		t.Fatalf("stderr of the two binaries: %q, %q; want the line in each", e1.String(), e2.String())
	}
	if got := p.shown(t); got != "" {
		t.Fatalf("the parent's fd 2 got %q, want nothing", got)
	}
	if _, err := os.Stat(p.markerDir); !os.IsNotExist(err) {
		t.Fatalf("marker dir: %v; want none made", err)
	}
}

// When the marker cannot be made (here the marker dir is a file) the line
// still reaches the user, on the binary's own stderr.
func TestSendFallsBackToStderr(t *testing.T) {
	p := newFakeParent(t, "go", 1000)
	if err := os.WriteFile(p.markerDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var e bytes.Buffer
	p.binary(&e).send("skip-s3", "s3 line")
	if e.String() != "s3 line\n" || p.shown(t) != "" {
		t.Fatalf("stderr %q, go's stderr %q; want the line on stderr only", e.String(), p.shown(t))
	}

	// No fd 2 to open: stderr as well.
	q := newFakeParent(t, "go", 1000)
	if err := os.Remove(q.goStderr); err != nil {
		t.Fatal(err)
	}
	var e2 bytes.Buffer
	q.binary(&e2).send("skip-s3", "s3 line")
	if e2.String() != "s3 line\n" {
		t.Fatalf("stderr %q; want the line", e2.String())
	}
}

// TestSendWritesAtTheGoCommandsOffset: the go command's stderr is a file
// it writes at its own offset (`go test ./... > out 2>&1`). The line is
// written through the go command's own descriptor, so what the go command
// writes next follows it instead of overwriting it. The "go command" is a
// real process (sh) with the file as its fd 2, opened without O_APPEND;
// /proc/PID/comm and stat are faked to name it go.
func TestSendWritesAtTheGoCommandsOffset(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "out")
	sh := exec.Command("sh", "-c", `exec 2>"$1"; echo "ok  	store	1.2s" >&2; read go_on; echo "ok  	web	3.4s" >&2`, "sh", out)
	stdin, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Process.Kill(); sh.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(out); strings.HasSuffix(string(b), "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sh wrote nothing to its stderr file")
		}
	}
	pid := sh.Process.Pid
	proc := filepath.Join(root, "proc")
	dir := filepath.Join(proc, strconv.Itoa(pid))
	for _, d := range []string{"fd", "fdinfo"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/2", pid))
	if err != nil {
		t.Fatal(err)
	}
	if flags, err := fdFlags(string(info)); err != nil || flags&syscall.O_APPEND != 0 {
		t.Fatalf("sh's fd 2: flags %o %v; want a file written at its own offset", flags, err)
	}
	stat := fmt.Sprintf("%d (go) S 1 1 1 0 -1 4194304 100 0 0 0 5 3 0 0 20 0 12 0 777 1000000 500 1\n", pid)
	for name, data := range map[string]string{"comm": "go\n", "stat": stat, "fdinfo/2": string(info)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(out, filepath.Join(dir, "fd", "2")); err != nil {
		t.Fatal(err)
	}
	var e bytes.Buffer
	c := &channel{proc: proc, ppid: pid, markerDir: filepath.Join(root, "markers"), stderr: &e, now: time.Now, getfd: pidfdGetfd}
	c.send("skip-s3", "oxyfs tests: skipped tests that need s3")
	stdin.Write([]byte("\n"))
	if err := sh.Wait(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	want := "ok  \tstore\t1.2s\noxyfs tests: skipped tests that need s3\nok  \tweb\t3.4s\n"
	if string(got) != want || e.Len() != 0 {
		t.Fatalf("the go command's file:\n%s\nbinary's stderr %q; want:\n%s", got, e.String(), want)
	}
}

// Where the go command's descriptor cannot be shared (pidfd_getfd refused),
// appending to its file from here would be overwritten, so the line goes to
// the binary's stderr, and no marker is claimed.
func TestSendLeavesAFileTheGoCommandDoesNotAppendTo(t *testing.T) {
	p := newFakeParent(t, "go", 1000)
	p.setFlags(t, "0100001") // O_LARGEFILE|O_WRONLY
	var e1, e2 bytes.Buffer
	p.binary(&e1).send("skip-gcs", "gcs line")
	p.binary(&e2).send("skip-gcs", "gcs line")
	if e1.String() != "gcs line\n" || e2.String() != "gcs line\n" || p.shown(t) != "" {
		t.Fatalf("stderr %q and %q, go's stderr %q; want the line on each binary's stderr only", e1.String(), e2.String(), p.shown(t))
	}
}

func TestFdFlags(t *testing.T) {
	got, err := fdFlags("pos:\t0\nflags:\t0102001\nmnt_id:\t30\n")
	if err != nil || got != 0o102001 {
		t.Fatalf("fdFlags = %o, %v; want 102001", got, err)
	}
	for _, bad := range []string{"", "pos:\t0\n", "flags:\t9\n", "flags:\n"} {
		if got, err := fdFlags(bad); err == nil {
			t.Errorf("fdFlags(%q) = %o, nil; want an error", bad, got)
		}
	}
}

func FuzzFdFlags(f *testing.F) {
	f.Add("pos:\t0\nflags:\t0102001\nmnt_id:\t30\n")
	f.Add("flags:\t77777777777")
	f.Fuzz(func(t *testing.T, info string) {
		if v, err := fdFlags(info); err == nil && v < 0 {
			t.Fatalf("fdFlags(%q) = %d", info, v)
		}
	})
}

func TestClaimPrunesMarkersOlderThanADay(t *testing.T) {
	p := newFakeParent(t, "go", 1000)
	c := p.binary(&bytes.Buffer{})
	if err := os.MkdirAll(p.markerDir, 0o700); err != nil {
		t.Fatal(err)
	}
	old, fresh := filepath.Join(p.markerDir, "1-1-skip-x"), filepath.Join(p.markerDir, "1-2-skip-x")
	for _, f := range []string{old, fresh} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dayAgo := time.Now().Add(-markerMaxAge - time.Minute)
	if err := os.Chtimes(old, dayAgo, dayAgo); err != nil {
		t.Fatal(err)
	}
	if first, err := c.claim("4242-1000", "skip-y"); !first || err != nil {
		t.Fatalf("claim = %v, %v; want true, nil", first, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("marker older than a day: %v; want it removed", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh marker: %v; want it kept", err)
	}
}

func TestFileSafe(t *testing.T) {
	if got := fileSafe("notice-go tool/../x\n"); got != "notice-go_tool_.._x_" {
		t.Fatalf("fileSafe = %q", got)
	}
}
