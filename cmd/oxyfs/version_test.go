package main

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionSaysWhatWasBuilt: the build info's module version and VCS
// stamp make the version, commit (modified or not), commit time and
// OS/arch; values set at link time win; without either the source's
// version shows as a dev build.
func TestVersionSaysWhatWasBuilt(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.99.1",
		Main:      debug.Module{Path: "github.com/oxyfs/oxyfs", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.modified", Value: "true"},
			{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
			{Key: "GOOS", Value: "darwin"},
			{Key: "GOARCH", Value: "arm64"},
		},
	}
	var out bytes.Buffer
	readVersion(bi, "", "", "").print(&out)
	want := "oxyfs v1.4.0\n- commit: 0123456789abcdef (modified)\n- commit time: 2026-11-30T10:00:00Z\n- go/version: go1.99.1\n- os/arch: darwin/arm64\n"
	if out.String() != want {
		t.Errorf("from the build info:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	readVersion(bi, "1.5.0", "fedcba9876543210", "2026-12-03T08:00:00Z").print(&out)
	want = "oxyfs 1.5.0\n- commit: fedcba9876543210\n- commit time: 2026-11-30T10:00:00Z\n- built: 2026-12-03T08:00:00Z\n- go/version: go1.99.1\n- os/arch: darwin/arm64\n"
	if out.String() != want {
		t.Errorf("set at link time:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	readVersion(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "", "").print(&out)
	want = "oxyfs " + baseVersion + "-dev\n- commit: unknown\n- go/version: " + runtime.Version() + "\n- os/arch: " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if out.String() != want {
		t.Errorf("a build with no version:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestVersionCommandAndFlagAgree: `oxyfs version` and `oxyfs --version`
// print the same lines, ending with this binary's Go version and OS/arch,
// exit 0; an argument after them is a usage error.
func TestVersionCommandAndFlagAgree(t *testing.T) {
	var outs []string
	for _, arg := range []string{"version", "--version"} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{arg}, nil, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
			t.Fatalf("oxyfs %s: exit %d, stderr %q", arg, code, stderr.String())
		}
		outs = append(outs, stdout.String())
	}
	if outs[0] != outs[1] {
		t.Errorf("version printed %q, --version %q", outs[0], outs[1])
	}
	if !strings.HasPrefix(outs[0], "oxyfs ") || !strings.HasSuffix(outs[0], "- go/version: "+runtime.Version()+"\n- os/arch: "+runtime.GOOS+"/"+runtime.GOARCH+"\n") {
		t.Errorf("version output %q lacks the name, Go version or OS/arch", outs[0])
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"version", "extra"}, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "takes no arguments") {
		t.Errorf("oxyfs version extra: exit %d, stderr %q; want 2 and a usage message", code, stderr.String())
	}
}

// TestLinkTimeVariables: the release build sets main.version, main.commit
// and main.date (-ldflags -X, scripts/release); those are what
// buildVersion reads, and they win over the build info.
func TestLinkTimeVariables(t *testing.T) {
	saved := [3]string{version, commit, date}
	t.Cleanup(func() { version, commit, date = saved[0], saved[1], saved[2] })
	version, commit, date = "9.8.7", "cafe0123", "2026-12-03T11:00:00Z"
	var out bytes.Buffer
	buildVersion().print(&out)
	want := "oxyfs 9.8.7\n- commit: cafe0123\n"
	if got := out.String(); !strings.HasPrefix(got, want) || !strings.Contains(got, "\n- built: 2026-12-03T11:00:00Z\n") {
		t.Errorf("with the link-time variables set: %q; want it to start %q and say when it was built", got, want)
	}
}
