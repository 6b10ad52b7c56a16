package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// What `oxyfs version` (and --version) says: the version, the commit it was
// built from and whether the tree had changes, when that commit was made and
// when the binary was built, the Go version and the OS/arch.
//
// A release build sets version, commit and date at link time
// (-ldflags "-X main.version=… -X main.commit=… -X main.date=…", what
// scripts/release does). Anything not set so comes from the build info Go
// records: the module's version for `go install …@vX.Y.Z`, the VCS stamp
// (vcs.revision, vcs.modified, vcs.time) for a build inside a checkout.

// Set at link time; empty otherwise.
var (
	version string
	commit  string
	date    string
)

// baseVersion is this source's version, for a build that carries none.
const baseVersion = "0.1.0"

// versionInfo is what `oxyfs version` prints.
type versionInfo struct {
	Version    string
	Commit     string // "" when unknown
	Modified   bool   // the commit's tree had uncommitted changes
	CommitTime string // the commit's time (vcs.time), "" when unknown
	BuildTime  string // set at link time only, "" otherwise
	GoVersion  string
	OS, Arch   string
}

// buildVersion is this binary's versionInfo.
func buildVersion() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	return readVersion(bi, version, commit, date)
}

// readVersion makes the versionInfo of build info bi (nil: none) and the
// values set at link time (which win).
func readVersion(bi *debug.BuildInfo, ldVersion, ldCommit, ldDate string) versionInfo {
	v := versionInfo{Version: baseVersion + "-dev", GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			v.GoVersion = bi.GoVersion
		}
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			v.Version = mv
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			case "vcs.time":
				v.CommitTime = s.Value
			case "GOOS":
				v.OS = s.Value
			case "GOARCH":
				v.Arch = s.Value
			}
		}
	}
	if ldVersion != "" {
		v.Version = ldVersion
	}
	if ldCommit != "" && ldCommit != v.Commit {
		v.Commit, v.Modified = ldCommit, false
	}
	v.BuildTime = ldDate
	return v
}

// print writes the version as rclone does: the name and version, then one
// "- key: value" line each.
func (v versionInfo) print(w io.Writer) {
	fmt.Fprintf(w, "oxyfs %s\n", v.Version)
	c := v.Commit
	switch {
	case c == "":
		c = "unknown"
	case v.Modified:
		c += " (modified)"
	}
	fmt.Fprintf(w, "- commit: %s\n", c)
	if v.CommitTime != "" {
		fmt.Fprintf(w, "- commit time: %s\n", v.CommitTime)
	}
	if v.BuildTime != "" {
		fmt.Fprintf(w, "- built: %s\n", v.BuildTime)
	}
	fmt.Fprintf(w, "- go/version: %s\n", v.GoVersion)
	fmt.Fprintf(w, "- os/arch: %s/%s\n", v.OS, v.Arch)
}
