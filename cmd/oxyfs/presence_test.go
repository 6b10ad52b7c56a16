package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/testwatch"
	"time"
)

// notAStore are locations that hold nothing of an oxy store, by what a
// user mistakes for one.
func notAStore(t *testing.T) map[string]string {
	empty := t.TempDir()
	photos := t.TempDir()
	for _, k := range []string{"IMG_0001.jpg", "IMG_0002.jpg", "2024/IMG_0003.jpg"} {
		writeFile(t, photos, k, []byte("jpeg"))
	}
	etc := t.TempDir()
	for _, k := range []string{"passwd", "hosts", "ssh/sshd_config"} {
		writeFile(t, etc, k, []byte("root:x:0:0"))
	}
	return map[string]string{"empty": empty, "photos": photos, "etc": etc}
}

// TestALocationHoldingNoStoreIsRefused: an empty location, a directory of
// photos and /etc are refused by mount, serve, ls, cat, fold and gc with a
// message that says what is there and names --create, and check exits 1
// saying why (issue 24 item 5: ls showed an empty skeleton, check said
// "OK: no problems", mount said "0 entries").
func TestALocationHoldingNoStoreIsRefused(t *testing.T) {
	for name, dir := range notAStore(t) {
		url := "file://" + dir
		want := "holds no oxy store"
		if name == "empty" {
			want = "holds nothing"
		}
		for _, args := range [][]string{
			{"ls", "-R", url},
			{"ls", "--layout", "bucket", url},
			{"cat", "--layout", "bucket", url, "sig/ab/cdef/alice"},
			{"fold", "--layout", "bucket", url},
			{"gc", "--layout", "bucket", url},
			{"check", "--layout", "bucket", url},
			{"serve", "--layout", "bucket", "--http", "127.0.0.1:0", url},
			{"mount", "--layout", "bucket", url, t.TempDir()},
		} {
			_, errOut, code := runBounded(t, args...)
			if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "--create") {
				t.Errorf("%s: oxyfs %s: exit %d, want 1 and a message saying %q and naming --create:\n%s", name, args[0], code, want, errOut)
			}
		}
		if entries, err := os.ReadDir(dir); err != nil || name == "empty" && len(entries) != 0 {
			t.Errorf("%s: the refused commands wrote into it: %v %v", name, entries, err)
		}
	}
}

// TestANonStorePathIsRefusedAsSuchByCheckFoldAndGC: a file:// path with no
// pack- key is detected as the directory layout; check, fold and gc on such
// a path that holds no store at all (a typo, an empty directory, /etc) said
// "has the directory layout … pass --layout bucket" (exit 2), sending the
// user after the layout instead of the path. They say what is there (exit
// 1), as with --layout bucket.
func TestANonStorePathIsRefusedAsSuchByCheckFoldAndGC(t *testing.T) {
	for name, dir := range notAStore(t) {
		want := "holds no oxy store"
		if name == "empty" {
			want = "holds nothing"
		}
		for _, cmd := range []string{"check", "fold", "gc"} {
			_, errOut, code := runBounded(t, cmd, "file://"+dir)
			if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "--create") {
				t.Errorf("%s: oxyfs %s (layout detected): exit %d, want 1 and a message saying %q and naming --create:\n%s", name, cmd, code, want, errOut)
			}
		}
	}
	// A repository's own directory (a store, directory layout) is still
	// told that these commands need the bucket layout (a usage error).
	repo := t.TempDir()
	writeFile(t, repo, "sig/ab/cdef/alice", []byte("sig"))
	if _, errOut, code := runBounded(t, "check", "file://"+repo); code != 2 || !strings.Contains(errOut, "--layout bucket") {
		t.Errorf("check of a directory-layout store: exit %d, want 2 naming --layout bucket:\n%s", code, errOut)
	}
}

// TestCreateStartsANewStore: --create takes an empty location (a file://
// directory not made yet included) as a new, empty store.
func TestCreateStartsANewStore(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "new-store")
	if out, errOut, code := runCLI(t, "ls", "--create", "--layout", "bucket", "file://"+fresh); code != 0 {
		t.Errorf("ls --create of a new location: exit %d: %s%s", code, out, errOut)
	}
	// ls is read-only: it showed the store empty and started nothing.
	if _, _, code := runCLI(t, "ls", "--layout", "bucket", "file://"+fresh); code != 1 {
		t.Errorf("ls after ls --create: exit %d, want 1 (a read-only command starts no store)", code)
	}
	// A writer's --create starts it (an empty journal): it stays a store
	// though nothing is written to it (before, it held nothing again).
	if _, errOut, code := runCLI(t, "gc", "--create", "--layout", "bucket", "file://"+fresh); code != 0 {
		t.Errorf("gc --create: exit %d: %s", code, errOut)
	}
	if out, errOut, code := runCLI(t, "ls", "--layout", "bucket", "file://"+fresh); code != 0 {
		t.Errorf("ls after gc --create: exit %d: %s%s", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, "fold", "--create", "--layout", "bucket", "file://"+fresh); code != 0 {
		t.Errorf("fold --create: exit %d: %s", code, errOut)
	}
	// Now it holds a store (the fold's list): no --create needed.
	if _, errOut, code := runCLI(t, "check", "--layout", "bucket", "file://"+fresh); code != 0 {
		t.Errorf("check after fold --create: exit %d: %s", code, errOut)
	}
}

// TestAStoreOfPerObjectKeysOnlyIsAStore: an older writer's store (per-object
// keys, no journal or list) is taken: the root's sig/ says it is a store.
func TestAStoreOfPerObjectKeysOnlyIsAStore(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "sig/ab/cdef01/alice", []byte("sig"))
	out, errOut, code := runCLI(t, "ls", "-R", "--layout", "bucket", "file://"+dir)
	if code != 0 || strings.TrimSpace(out) != "sig/ab/cdef01/alice" {
		t.Fatalf("ls -R: exit %d, %q: %s", code, out, errOut)
	}
}

// TestGenRefusesALocationThatIsNotEmpty: gen writes synthetic entries; into
// a location that holds anything (a store included) only with --force.
func TestGenRefusesALocationThatIsNotEmpty(t *testing.T) {
	h := newHandStore(t)
	before := snapshotDir(t, h.dir)
	_, errOut, code := runCLI(t, "gen", "--entries", "5", "--layout", "bucket", "file://"+h.dir)
	if code != 1 || !strings.Contains(errOut, "--force") {
		t.Errorf("gen into a store: exit %d, want 1 naming --force: %s", code, errOut)
	}
	if after := snapshotDir(t, h.dir); after != before {
		t.Errorf("a refused gen changed the store")
	}
	if _, errOut, code := runCLI(t, "gen", "--force", "--entries", "5", "--layout", "bucket", "file://"+h.dir); code != 0 {
		t.Errorf("gen --force: exit %d: %s", code, errOut)
	}
	fresh := filepath.Join(t.TempDir(), "s")
	if _, errOut, code := runCLI(t, "gen", "--entries", "5", "--layout", "bucket", "file://"+fresh); code != 0 {
		t.Errorf("gen into a new location: exit %d: %s", code, errOut)
	}
}

// TestAnUnfoldedStoreSaysWhatBrowsingCosts: ls, serve and mount of a store
// gen wrote without --fold say once that browsing it costs a LIST per
// object and that oxyfs fold fixes it; on a folded store they say nothing
// of it; check names fold, not gc (issue 24 item 4).
func TestAnUnfoldedStoreSaysWhatBrowsingCosts(t *testing.T) {
	unfolded := filepath.Join(t.TempDir(), "u")
	if _, errOut, code := runCLI(t, "gen", "--entries", "20", "--layout", "bucket", "file://"+unfolded); code != 0 {
		t.Fatalf("gen: %s", errOut)
	}
	url := "file://" + unfolded
	const says = "is not folded: browsing it lists prefixes, a LIST for every directory listed and every object looked up"
	_, errOut, code := runCLI(t, "ls", "-R", "--layout", "bucket", url)
	if code != 0 || strings.Count(errOut, says) != 1 || !strings.Contains(errOut, "`oxyfs fold "+url+"`") {
		t.Errorf("ls -R of an unfolded store: exit %d, stderr:\n%s", code, errOut)
	}
	for _, args := range [][]string{
		{"serve", "--layout", "bucket", "--http", "127.0.0.1:0", url},
		{"mount", "--layout", "bucket", url, t.TempDir()},
	} {
		if errOut := untilServing(t, args...); strings.Count(errOut, says) != 1 {
			t.Errorf("oxyfs %s of an unfolded store does not say once what browsing costs:\n%s", args[0], errOut)
		}
	}
	out, _, _ := runCLI(t, "check", url)
	if !strings.Contains(out, "fix: oxyfs fold "+url) || strings.Contains(out, "oxyfs gc") {
		t.Errorf("check of an unfolded store does not name fold:\n%s", out)
	}
	if _, errOut, code := runCLI(t, "fold", url); code != 0 {
		t.Fatalf("fold: %s", errOut)
	}
	if _, errOut, _ := runCLI(t, "ls", "-R", "--layout", "bucket", url); strings.Contains(errOut, "not folded") {
		t.Errorf("ls -R of the folded store still says it is not folded:\n%s", errOut)
	}
}

// runBounded runs a command that may serve until stopped (serve, mount):
// it is stopped after a bound, as a signal would. A refused open returns
// before.
func runBounded(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if args[0] == "mount" {
		testwatch.Arm(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if args[0] == "mount" {
		// A cancelled context makes a mount unmount as soon as it serves.
		c, stop := context.WithCancel(ctx)
		stop()
		ctx = c
	}
	var out, errb syncBuffer
	code = run(ctx, args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// untilServing runs serve or mount until its stderr has the ready line,
// then stops it and returns stderr.
func untilServing(t *testing.T, args ...string) string {
	t.Helper()
	if args[0] == "mount" {
		testwatch.Arm(t)
	}
	ready := map[string]string{"serve": "oxyfs: serving ", "mount": "oxyfs: mounted "}[args[0]]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if args[0] == "mount" {
		cancel() // it unmounts as soon as it serves
	}
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, strings.NewReader(""), &out, &errb) }()
	deadline := time.After(20 * time.Second)
	for !strings.Contains(errb.String(), ready) {
		select {
		case code := <-done:
			if !strings.Contains(errb.String(), ready) {
				t.Errorf("oxyfs %s exited %d before it served:\n%s", args[0], code, errb.String())
			}
			return errb.String()
		case <-deadline:
			t.Fatalf("oxyfs %s did not serve within the bound:\n%s", args[0], errb.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	<-done
	return errb.String()
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// snapshotDir is every file under dir with its size, as one string.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String() + " " + strconv.FormatInt(fi.Size(), 10) + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestUnfoldedNoticeIsAnEventOfTheMountLog: a mount's notice that its store
// is not folded is one event of its log, in the log's format and where the
// log goes (--log-file, syslog once detached); it was written to stderr
// alone, unformatted, so a mount from fstab or systemd with a log file
// never logged it.
func TestUnfoldedNoticeIsAnEventOfTheMountLog(t *testing.T) {
	unfolded := filepath.Join(t.TempDir(), "u")
	if _, errOut, code := runCLI(t, "gen", "--entries", "20", "--layout", "bucket", "file://"+unfolded); code != 0 {
		t.Fatalf("gen: %s", errOut)
	}
	logFile := filepath.Join(t.TempDir(), "mount.log")
	_, errOut, code := runBounded(t, "mount", "--log-file", logFile, "--log-format", "json", "file://"+unfolded, t.TempDir())
	if code != 0 {
		t.Fatalf("mount: exit %d: %s", code, errOut)
	}
	if strings.Contains(errOut, "not folded") {
		t.Errorf("the notice went to stderr, not to --log-file:\n%s", errOut)
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var notices int
	for line := range strings.Lines(string(data)) {
		var ev struct{ Time, Level, Msg string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Errorf("log line is not JSON: %q: %v", line, err)
			continue
		}
		if strings.Contains(ev.Msg, "is not folded: browsing it lists prefixes") {
			notices++
			if ev.Time == "" || ev.Level != "INFO" || strings.HasSuffix(ev.Msg, "\n") {
				t.Errorf("notice event: %+v", ev)
			}
		}
	}
	if notices != 1 {
		t.Errorf("log file has %d notices that the store is not folded, want 1:\n%s", notices, data)
	}
}
