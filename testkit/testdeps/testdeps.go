package testdeps

import (
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Required reports whether a missing dependency called name ("fuse", "s3",
// "azure", "gcs", "chromium") must fail the test rather than skip it: when
// CI is true or OXYFS_REQUIRE lists the name (or "all").
func Required(name string) bool {
	if ci, err := strconv.ParseBool(os.Getenv("CI")); err == nil && ci {
		return true
	}
	for _, f := range strings.Split(os.Getenv("OXYFS_REQUIRE"), ",") {
		f = strings.TrimSpace(f)
		if f == name || f == "all" {
			return true
		}
	}
	return false
}

// SkipOrFail ends the test because the dependency called name is missing,
// for the reason given: it fails the test when [Required] says so, and
// otherwise records the skip for [Report] and skips the test.
func SkipOrFail(t testing.TB, name, reason string) {
	t.Helper()
	if Required(name) {
		t.Fatalf("%s (required: CI=%q, OXYFS_REQUIRE=%q)", reason, os.Getenv("CI"), os.Getenv("OXYFS_REQUIRE"))
		return // only a fake t returns from Fatalf
	}
	record(name, reason)
	t.Skipf("%s (skipping; set OXYFS_REQUIRE=%s to make this fail)", reason, name)
}

// skipped is what this test binary skipped for one dependency.
type skipped struct {
	dep    string
	reason string // the first reason given
	count  int    // tests skipped
}

var (
	mu    sync.Mutex
	skips = map[string]*skipped{} // by dependency; guarded by mu
)

func record(dep, reason string) {
	mu.Lock()
	defer mu.Unlock()
	s := skips[dep]
	if s == nil {
		s = &skipped{dep: dep, reason: reason}
		skips[dep] = s
	}
	s.count++
}

// recorded returns the skips so far, sorted by dependency.
func recorded() []skipped {
	mu.Lock()
	defer mu.Unlock()
	out := make([]skipped, 0, len(skips))
	for _, s := range skips {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dep < out[j].dep })
	return out
}

// Main runs the tests, reports what they skipped and exits with m.Run's
// code. A package whose tests may call SkipOrFail calls it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Report()
	os.Exit(code)
}

// Report tells the user, once per `go test` run and dependency, which
// tests this binary skipped and why (see the package doc). Call it after
// m.Run.
func Report() {
	c := defaultChannel()
	pkg := packageName()
	for _, s := range recorded() {
		c.send("skip-"+s.dep, summaryLine(pkg, s))
	}
}

// Notice tells the user msg once per `go test` run and key, through the
// same channel as Report: for what a test does that takes long, such as
// building a server on first use.
func Notice(key, msg string) {
	defaultChannel().send("notice-"+key, "oxyfs tests: "+oneLine(msg, 500))
}

func summaryLine(pkg string, s skipped) string {
	return fmt.Sprintf("oxyfs tests: skipped tests that need %s (%d in %s, the first package to skip them): %s; set OXYFS_REQUIRE=%s to fail instead",
		s.dep, s.count, pkg, oneLine(s.reason, 500), s.dep)
}

// packageName names the package under test relative to its module
// ("store", "testkit/testservers"), or the binary's name if the build
// information says nothing.
func packageName() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" {
		p := strings.TrimSuffix(bi.Path, ".test")
		if rel, ok := strings.CutPrefix(p, bi.Main.Path+"/"); ok && bi.Main.Path != "" {
			return rel
		}
		return p
	}
	name := os.Args[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return strings.TrimSuffix(name, ".test")
}

// oneLine makes s one line of at most max bytes to show on a terminal:
// runs of white space (newlines too) become one space, other control
// characters and invalid UTF-8 become \xNN, and a longer text is cut with
// "...".
func oneLine(s string, max int) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			space = true
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == utf8.RuneError && w == 1:
			flushSpace(&b, &space)
			for _, c := range []byte(s[i : i+w]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		default:
			flushSpace(&b, &space)
			b.WriteString(s[i : i+w])
		}
		i += w
		if b.Len() > max {
			break
		}
	}
	out := b.String()
	if len(out) <= max {
		return out
	}
	cut := max - len("...")
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + "..."
}

func flushSpace(b *strings.Builder, space *bool) {
	if *space && b.Len() > 0 {
		b.WriteByte(' ')
	}
	*space = false
}
