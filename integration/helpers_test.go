package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/testservers"
	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// Deadlines. Nothing in these tests waits without one.
const (
	cmdTimeout     = 2 * time.Minute  // one run of the oxyfs binary or a coreutil
	mountReady     = 60 * time.Second // from exec to the "oxyfs: mounted" line
	unmountTimeout = 30 * time.Second // from SIGINT to the process's exit
)

// s3Store starts (or reuses) the S3 server and FUSE, and returns the server
// and the URL of a fresh bucket.
func s3Store(t *testing.T) (*testservers.Server, string) {
	t.Helper()
	testservers.RequireFUSE(t)
	srv := testservers.Start(t, "s3")
	return srv, srv.NewBucket(t)
}

// childEnv is the environment of a child process: ours plus the server's
// credentials.
func childEnv(srv *testservers.Server) []string {
	env := os.Environ()
	if srv != nil {
		env = append(env, srv.Environ()...)
	}
	return env
}

// result is what one run of the oxyfs binary did.
type result struct {
	args     []string
	stdout   string
	stderr   string
	code     int
	requests store.Counts // the --stats line, if printed
	hasStats bool
}

func (r result) String() string {
	return fmt.Sprintf("oxyfs %s: exit %d\n--- stdout ---\n%s\n--- stderr ---\n%s", strings.Join(r.args, " "), r.code, clip(r.stdout, 4000), clip(r.stderr, 4000))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d more bytes)", len(s)-n)
}

var statsRE = regexp.MustCompile(`(?m)^requests: list=(\d+) get=(\d+) head=(\d+) put=(\d+) delete=(\d+)$`)

// parseStats reads the last `requests: list=N get=N head=N put=N delete=N`
// line of a command's stderr.
func parseStats(stderr string) (store.Counts, bool) {
	ms := statsRE.FindAllStringSubmatch(stderr, -1)
	if len(ms) == 0 {
		return store.Counts{}, false
	}
	m := ms[len(ms)-1]
	n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
	return store.Counts{List: n(1), Get: n(2), Head: n(3), Put: n(4), Delete: n(5)}, true
}

// oxyfs runs the binary with the server's environment and returns what it
// did, whatever its exit code. A run past cmdTimeout is killed and fails
// the test.
func oxyfs(t *testing.T, srv *testservers.Server, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, oxyfsBin, args...)
	cmd.Env = childEnv(srv)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	r.requests, r.hasStats = parseStats(r.stderr)
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("oxyfs %s: still running after %v; killed\n%s", strings.Join(args, " "), cmdTimeout, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("oxyfs %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// mustOxyfs is oxyfs that fails the test unless the command exits 0.
func mustOxyfs(t *testing.T, srv *testservers.Server, args ...string) result {
	t.Helper()
	r := oxyfs(t, srv, args...)
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	return r
}

// run runs a command (a coreutil against the mount) and returns its stdout;
// it fails the test on a non-zero exit.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, errOut, err := runErr(name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n--- stderr ---\n%s", name, strings.Join(args, " "), err, clip(errOut, 4000))
	}
	return out
}

// runErr runs a command with a deadline and returns its output and error.
func runErr(name string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("still running after %v: %w", cmdTimeout, err)
	}
	return o.String(), e.String(), err
}

// lines splits output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if l = strings.TrimRight(l, "\n"); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// lineLog collects a child's output, line by line, and tells waiters when
// a line containing some text appears.
type lineLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	changed chan struct{} // closed and replaced on every new line
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
		added = true
	}
	if added {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	return len(p), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + "\n" + string(l.partial)
}

// count returns how many lines contain sub, and a channel closed at the next
// new line.
func (l *lineLog) count(sub string) (int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n, l.changed
}

// first returns the first line containing sub.
func (l *lineLog) first(sub string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return s
		}
	}
	return ""
}

// readyLineRE is the ready line of `oxyfs mount`: a log line (time, level,
// message) saying it mounted.
var readyLineRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d) INFO oxyfs: mounted `)

// mountProc is `oxyfs mount STORE DIR` running as a child process.
type mountProc struct {
	t      *testing.T
	dir    string
	cmd    *exec.Cmd
	stderr *lineLog
	stdout *lineLog
	exited chan struct{} // closed once the process has exited
	err    error         // cmd.Wait's, set before exited closes
	// stopSignal unmounts at cleanup: SIGINT unless a test sets SIGTERM.
	stopSignal os.Signal
}

// startMount runs `oxyfs mount [flags] STORE DIR` and waits (up to
// mountReady) for its "oxyfs: mounted" line. At cleanup it sends SIGINT,
// waits for a clean exit (status 0) within unmountTimeout (else SIGKILL and
// fusermount3 -uz, and the test fails) and checks DIR is no longer mounted.
func startMount(t *testing.T, srv *testservers.Server, storeURL, dir string, flags ...string) *mountProc {
	t.Helper()
	// Armed before the cleanup that unmounts, so the unmount runs under it.
	w := testwatch.Arm(t)
	// A list cache of its own (not the user's, shared by every test): the
	// mount's open reads the lists from the store, as the tests count.
	args := append([]string{"mount", "--cache-dir", t.TempDir()}, flags...)
	if !slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, "--refresh-interval") }) {
		// Refreshes when the test says (SIGHUP: mountProc.refresh), not
		// every minute: a quiet refresh of a folded store sends 2 GETs,
		// which a test counting what browsing sends would count when
		// the load stretches it past the minute (CI: browse_test's second
		// pass met one, 68 s after the mount).
		args = append(args, "--refresh-interval=0")
	}
	args = append(args, storeURL, dir)
	m := &mountProc{t: t, dir: dir, stderr: newLineLog(), stdout: newLineLog(), exited: make(chan struct{}), stopSignal: os.Interrupt}
	w.OnFire(m.dump)
	w.Abort(dir)
	m.cmd = exec.Command(oxyfsBin, args...)
	m.cmd.Env = childEnv(srv)
	m.cmd.Stdout, m.cmd.Stderr = m.stdout, m.stderr
	// Its own process group: a ^C in the terminal running go test reaches
	// the test binary, which then unmounts in order.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start oxyfs mount: %v", err)
	}
	go func() {
		m.err = m.cmd.Wait()
		close(m.exited)
	}()
	t.Cleanup(m.stop)
	if err := m.waitLog("oxyfs: mounted", 1, mountReady); err != nil {
		t.Fatalf("oxyfs %s: %v\n--- stderr ---\n%s", strings.Join(args, " "), err, m.stderr)
	}
	if l := m.stderr.first("oxyfs: mounted"); !readyLineRE.MatchString(l) {
		t.Errorf("the ready line is not one log line, \"TIME INFO oxyfs: mounted …\": %q", l)
	}
	if !isMounted(dir) {
		t.Fatalf("oxyfs mount said it mounted %s, but /proc/self/mountinfo does not list it\n%s", dir, m.stderr)
	}
	return m
}

// waitLog waits until n stderr lines contain sub, the process exits, or the
// timeout passes.
func (m *mountProc) waitLog(sub string, n int, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		got, changed := m.stderr.count(sub)
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-m.exited:
			if got, _ := m.stderr.count(sub); got >= n {
				return nil
			}
			return fmt.Errorf("exited (%v) before printing %q", m.err, sub) //nolint:errorlint // m.err is nil after exit 0 (shown as <nil>); a message, nothing matches it
		case <-deadline.C:
			return fmt.Errorf("no line %q (%d of %d) within %v", sub, got, n, timeout)
		}
	}
}

// signal sends sig to the mount process.
func (m *mountProc) signal(sig os.Signal) {
	m.t.Helper()
	if err := m.cmd.Process.Signal(sig); err != nil {
		m.t.Fatalf("signal %v to oxyfs mount: %v", sig, err)
	}
}

// refresh sends SIGHUP and waits for the mount to log that it refreshed.
func (m *mountProc) refresh() {
	m.t.Helper()
	n, _ := m.stderr.count("refreshed (SIGHUP)")
	m.signal(syscall.SIGHUP)
	if err := m.waitLog("refreshed (SIGHUP)", n+1, cmdTimeout); err != nil {
		m.t.Fatalf("refresh: %v\n%s", err, m.stderr)
	}
}

// stop unmounts: SIGINT (or stopSignal), then the checks described at
// startMount.
func (m *mountProc) stop() {
	t := m.t
	select {
	case <-m.exited:
	default:
		_ = m.cmd.Process.Signal(m.stopSignal)
		select {
		case <-m.exited:
		case <-time.After(unmountTimeout):
			t.Errorf("oxyfs mount %s: still running %v after %v; killing it and detaching the mount", m.dir, unmountTimeout, m.stopSignal)
			_ = m.cmd.Process.Kill()
			<-m.exited
			forceUnmount(m.dir)
		}
	}
	if m.err != nil {
		t.Errorf("oxyfs mount %s exited with %v (want a clean exit 0 after %v)", m.dir, m.err, m.stopSignal)
	}
	if isMounted(m.dir) {
		t.Errorf("%s is still mounted after oxyfs mount exited; detaching it", m.dir)
		forceUnmount(m.dir)
	}
	if t.Failed() {
		t.Logf("oxyfs mount %s stderr:\n%s", m.dir, m.stderr)
	}
}

// dump asks a hung mount for its goroutines (SIGQUIT: the Go runtime
// prints them and exits 2) and logs its stderr: the watchdog's part.
func (m *mountProc) dump() {
	if m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
	}
	m.t.Logf("oxyfs mount %s (sent SIGQUIT by the watchdog) stderr:\n%s", m.dir, m.stderr)
}

// forceUnmount detaches a mount lazily (what an operator does after kill -9).
func forceUnmount(dir string) {
	for _, bin := range []string{"fusermount3", "fusermount"} {
		if _, _, err := runErr(bin, "-uz", dir); err == nil {
			return
		}
	}
	_ = syscall.Unmount(dir, syscall.MNT_DETACH)
}

// isMounted reports whether dir is a mount point, from /proc/self/mountinfo.
func isMounted(dir string) bool {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for l := range strings.Lines(string(data)) {
		f := strings.Fields(l)
		if len(f) > 4 && unescapeOctal(f[4]) == real {
			return true
		}
	}
	return false
}

// unescapeOctal undoes mountinfo's \NNN escapes (space, tab, newline, \).
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountStatus is .oxy/status: the index's status and the mount's own fields.
type mountStatus struct {
	index.Status
	Mountpoint string           `json:"mountpoint"`
	ReadOnly   bool             `json:"read_only"`
	FuseOps    map[string]int64 `json:"fuse_ops"`
}

// readStatus reads and decodes MOUNT/.oxy/status.
func readStatus(t *testing.T, dir string) mountStatus {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".oxy", "status"))
	if err != nil {
		t.Fatalf("read .oxy/status: %v", err)
	}
	var s mountStatus
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("decode .oxy/status: %v\n%s", err, clip(string(data), 4000))
	}
	return s
}

// settledRequests reads .oxy/status until its request counters hold still
// for settleQuiet (work the mount does in the background, such as fetching
// ahead, is then counted), at most settleMax; it returns the last counts.
func settledRequests(t *testing.T, dir string) store.Counts {
	t.Helper()
	const settleQuiet, settleMax = 300 * time.Millisecond, 10 * time.Second
	deadline := time.Now().Add(settleMax)
	prev := readStatus(t, dir).Requests
	for time.Now().Before(deadline) {
		time.Sleep(settleQuiet)
		cur := readStatus(t, dir).Requests
		if cur == prev {
			return cur
		}
		prev = cur
	}
	t.Logf("the mount's request counters still moved after %v: %s", settleMax, prev)
	return prev
}

// openStore opens the store at url in the test process (a separate handle
// from any mount's), closed at cleanup.
func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url, store.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// bucketState is every key of a bucket with its size, and the bytes of the
// two records, for before/after comparisons.
type bucketState struct {
	keys    map[string]int64
	journal string
	retired string
}

func readBucket(t *testing.T, st *store.Store) bucketState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	b := bucketState{keys: map[string]int64{}}
	if err := st.List(ctx, "", "", func(it store.ListItem) error {
		b.keys[it.Key] = it.Size
		return nil
	}); err != nil {
		t.Fatalf("list bucket: %v", err)
	}
	for _, r := range []struct {
		key string
		dst *string
	}{{format.JournalKey, &b.journal}, {format.RetiredKey, &b.retired}} {
		data, _, err := st.ReadRecord(ctx, r.key)
		if err != nil {
			t.Fatalf("read %s: %v", r.key, err)
		}
		*r.dst = string(data)
	}
	return b
}

// diff describes how b differs from a ("" if it does not).
func (a bucketState) diff(b bucketState) string {
	var d []string
	for k, n := range a.keys {
		if m, ok := b.keys[k]; !ok {
			d = append(d, "gone: "+k)
		} else if m != n {
			d = append(d, fmt.Sprintf("size of %s: %d -> %d", k, n, m))
		}
	}
	for k := range b.keys {
		if _, ok := a.keys[k]; !ok {
			d = append(d, "new: "+k)
		}
	}
	if a.journal != b.journal {
		d = append(d, "the journal changed")
	}
	if a.retired != b.retired {
		d = append(d, "the retired record changed")
	}
	return strings.Join(d, "\n")
}

// journalLines reads and parses the journal through st.
func journalLines(t *testing.T, st *store.Store) []format.JournalLine {
	t.Helper()
	data, _, err := st.ReadRecord(context.Background(), format.JournalKey)
	if err != nil {
		t.Fatalf("read journal: %v", err)
	}
	ls, bad := format.ParseJournal(data)
	if bad.Count > 0 {
		t.Errorf("journal has %d lines that do not parse; first: %v", bad.Count, bad.First[0])
	}
	return ls
}

// unfoldedLines counts the journal lines "0 key".
func unfoldedLines(ls []format.JournalLine, key string) int {
	n := 0
	for _, l := range ls {
		if l.Key == key && !l.Folded() {
			n++
		}
	}
	return n
}

// newObject returns a random 64-hex object id.
func newObject(t *testing.T) string {
	t.Helper()
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// randomBytes returns n random bytes (a stand-in signature).
func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// genFolded writes n journaled entries with `oxyfs gen`, then folds them
// with `oxyfs fold`, both as separate processes.
func genFolded(t *testing.T, srv *testservers.Server, url string, n, signers int) (gen, fold result) {
	t.Helper()
	gen = mustOxyfs(t, srv, "gen", url, "--entries", strconv.Itoa(n), "--signers", strconv.Itoa(signers), "--stats")
	fold = mustOxyfs(t, srv, "fold", url, "--stats")
	return gen, fold
}

// sigFiles returns the signature files of a mount, as `find MOUNT/sig -type f`
// prints them.
func sigFiles(t *testing.T, mnt string) []string {
	t.Helper()
	out := lines(run(t, "find", filepath.Join(mnt, "sig"), "-type", "f"))
	if len(out) == 0 {
		t.Fatalf("no signature under %s/sig", mnt)
	}
	return out
}

// rel is p relative to the mount root, as `oxyfs cat` takes it.
func rel(t *testing.T, mnt, p string) string {
	t.Helper()
	r, err := filepath.Rel(mnt, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// errnoOf returns the errno inside err (0 if none).
func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}
