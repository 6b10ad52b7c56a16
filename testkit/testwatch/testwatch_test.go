package testwatch

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeT records what the watchdog tells a test.
type fakeT struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (f *fakeT) Name() string      { return "TestHung" }
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, format)
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFiresWithTheTestsNameAndEveryGoroutine: a test still running at the
// limit is failed by name, the dump holds this goroutine's stack, and the
// binary exits once the grace has passed with the test still running.
func TestFiresWithTheTestsNameAndEveryGoroutine(t *testing.T) {
	ft := &fakeT{}
	out := &syncBuf{}
	exited := make(chan int, 1)
	w := arm(ft, 10*time.Millisecond, out, func(code int) { exited <- code })
	select {
	case <-w.fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the watchdog did not fire")
	}
	s := out.String()
	if !strings.Contains(s, "TestHung still running") || !strings.Contains(s, "TestFiresWithTheTestsNameAndEveryGoroutine") {
		t.Errorf("dump lacks the test's name or this goroutine:\n%.2000s", s)
	}
	ft.mu.Lock()
	n := len(ft.errs)
	ft.mu.Unlock()
	if n != 1 {
		t.Errorf("the test was failed %d times, want 1", n)
	}
	for _, fn := range ft.cleanups {
		fn()
	}
	select {
	case code := <-exited:
		t.Errorf("exited %d although the test ended within the grace", code)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestQuietWhenTheTestEnds: a test that ends before the limit hears nothing.
func TestQuietWhenTheTestEnds(t *testing.T) {
	ft := &fakeT{}
	out := &syncBuf{}
	w := arm(ft, 50*time.Millisecond, out, func(int) { t.Error("exited") })
	for _, fn := range ft.cleanups {
		fn()
	}
	time.Sleep(100 * time.Millisecond)
	select {
	case <-w.fired:
		t.Errorf("fired after the test ended: %s", out.String())
	default:
	}
}

// TestMountMinor finds a mount's device minor in mountinfo, escapes and
// all, the last mount on a point winning.
func TestMountMinor(t *testing.T) {
	const info = `36 35 98:0 / /mnt1 rw,noatime master:1 - ext3 /dev/root rw
40 35 0:52 / /tmp/Test\040a/001 rw,nosuid,nodev - fuse.oxyfs oxyfs:mem rw
41 40 0:57 / /tmp/Test\040a/001 rw,nosuid,nodev - fuse.oxyfs oxyfs:mem rw
`
	if n, err := mountMinor(strings.NewReader(info), "/tmp/Test a/001"); err != nil || n != 57 {
		t.Errorf("minor: %d %v, want 57", n, err)
	}
	if _, err := mountMinor(strings.NewReader(info), "/elsewhere"); err == nil {
		t.Error("a point not mounted: no error")
	}
}

// TestUnarmedFindsMountsWithoutAWatchdog: a test that mounts through a
// helper with no Arm is named; one whose helper arms, one that only
// mentions mount as a later argument, and one marked as mounting nothing
// are not.
func TestUnarmedFindsMountsWithoutAWatchdog(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "testing"

func bare(t *testing.T)  { Mount(t.TempDir()) }
func armed(t *testing.T) { testwatch.Arm(t); bare(t) }

func TestBare(t *testing.T)    { bare(t) }
func TestArmed(t *testing.T)   { armed(t) }
func TestCLI(t *testing.T)     { run([]string{"mount", "s", "d"}) }
func TestHelp(t *testing.T)    { run([]string{"help", "mount"}) }
func BenchmarkB(b *testing.B)  { exec("oxyfs", "mount", "s") }
func TestTmpfs(t *testing.T)   { syscall.Mount("tmpfs", t.TempDir(), "tmpfs", 0, "") }
func TestThrough(t *testing.T) { Run(t) }

// TestFlags parses flags.
//
// testwatch: mounts nothing
func TestFlags(t *testing.T) { run([]string{"mount", "--help"}) }
`
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bad, err := Unarmed(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"BenchmarkB", "TestBare", "TestCLI"}; !slices.Equal(bad, want) {
		t.Errorf("Unarmed: %v, want %v", bad, want)
	}
	// Run, in a file of the package (not a test's), mounts: only
	// UnarmedThrough follows it.
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte("package p\n\nfunc Run(t any) { mount() }\nfunc mount()   { fs.Mount(\"d\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if bad, err = Unarmed(dir); err != nil || !slices.Equal(bad, []string{"BenchmarkB", "TestBare", "TestCLI"}) {
		t.Errorf("Unarmed with a package file: %v %v", bad, err)
	}
	bad, err = UnarmedThrough(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"BenchmarkB", "TestBare", "TestCLI", "TestThrough"}; !slices.Equal(bad, want) {
		t.Errorf("UnarmedThrough: %v, want %v", bad, want)
	}
}
