package testdeps

import (
	"fmt"
	"strings"
	"testing"
)

// fakeTB records what SkipOrFail asks of a test.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }
func (f *fakeTB) Skipf(format string, args ...any)  { f.skip = fmt.Sprintf(format, args...) }

func resetRecords(t *testing.T) {
	mu.Lock()
	saved := skips
	skips = map[string]*skipped{}
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		skips = saved
		mu.Unlock()
	})
}

func TestRequired(t *testing.T) {
	for _, c := range []struct {
		ci, require string
		want        map[string]bool
	}{
		{"", "", map[string]bool{"fuse": false, "s3": false}},
		{"true", "", map[string]bool{"fuse": true, "chromium": true}},
		{"1", "", map[string]bool{"azure": true}},
		{"false", "s3, gcs", map[string]bool{"s3": true, "gcs": true, "azure": false, "s": false}},
		{"", "all", map[string]bool{"fuse": true, "chromium": true}},
		{"", "fuse3", map[string]bool{"fuse": false}},
	} {
		t.Setenv("CI", c.ci)
		t.Setenv("OXYFS_REQUIRE", c.require)
		for name, want := range c.want {
			if got := Required(name); got != want {
				t.Errorf("CI=%q OXYFS_REQUIRE=%q: Required(%q) = %v, want %v", c.ci, c.require, name, got, want)
			}
		}
	}
}

func TestSkipOrFailRecordsOnlySkips(t *testing.T) {
	resetRecords(t)
	t.Setenv("CI", "")
	t.Setenv("OXYFS_REQUIRE", "s3")

	var a, b, c fakeTB
	SkipOrFail(&a, "azure", "azurite-blob not found")
	SkipOrFail(&b, "azure", "another reason")
	SkipOrFail(&c, "s3", "versitygw not found")

	if want := "azurite-blob not found (skipping; set OXYFS_REQUIRE=azure to make this fail)"; a.skip != want || a.fatal != "" {
		t.Errorf("azure: skip %q fatal %q; want skip %q", a.skip, a.fatal, want)
	}
	if want := `versitygw not found (required: CI="", OXYFS_REQUIRE="s3")`; c.fatal != want || c.skip != "" {
		t.Errorf("s3: fatal %q skip %q; want fatal %q", c.fatal, c.skip, want)
	}
	got := recorded()
	want := []skipped{{dep: "azure", reason: "azurite-blob not found", count: 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("recorded = %+v, want %+v", got, want)
	}
}

func TestSummaryLine(t *testing.T) {
	got := summaryLine("testkit/testservers", skipped{dep: "azure", reason: "azure server \"azurite-blob\" not found;\n\tnpm: not on PATH\x1b[2J", count: 3})
	want := `oxyfs tests: skipped tests that need azure (3 in testkit/testservers, the first package to skip them): azure server "azurite-blob" not found; npm: not on PATH\x1b[2J; set OXYFS_REQUIRE=azure to fail instead`
	if got != want {
		t.Fatalf("summaryLine =\n%s\nwant\n%s", got, want)
	}
}

func TestOneLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"  a\n\n b\t", 100, "a b"},
		{"bell\a\xff", 100, `bell\x07\xff`},
		{"\u009b2J", 100, `\xc2\x9b2J`},
		{strings.Repeat("é", 10), 9, "ééé..."},
		{strings.Repeat("é", 10), 8, "éé..."},
		{"abcdefghij", 8, "abcde..."},
		{"abc", 3, "abc"},
	} {
		if got := oneLine(c.in, c.max); got != c.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

func TestPackageNameIsRelativeToTheModule(t *testing.T) {
	if got := packageName(); got != "testkit/testdeps" {
		t.Fatalf("packageName() = %q, want testkit/testdeps", got)
	}
}
