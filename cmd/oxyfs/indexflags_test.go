package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helpFlags runs `oxyfs CMD --help` and returns each flag's help line by
// flag name, the padding between the flag and its text made one space (its
// width follows the command's longest flag).
func helpFlags(t *testing.T, cmd string) map[string]string {
	t.Helper()
	_, errOut, code := runCLI(t, cmd, "--help")
	if code != 0 {
		t.Fatalf("oxyfs %s --help: exit %d: %s", cmd, code, errOut)
	}
	line := regexp.MustCompile(`^\s+(?:-\w, )?--([\w-]+)(\S*(?: \w+)?)\s{2,}(\S.*)$`)
	flags := map[string]string{}
	for _, l := range strings.Split(errOut, "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			flags[m[1]] = "--" + m[1] + m[2] + " " + m[3]
		}
	}
	if len(flags) == 0 {
		t.Fatalf("oxyfs %s --help lists no flags:\n%s", cmd, errOut)
	}
	return flags
}

// TestSharedFlagsHaveOneHelp: every flag `oxyfs mount` and `oxyfs serve`
// both take has the same help line, type and default in both (indexFlags
// and commonFlags register them once), so the two cannot drift apart.
//
// testwatch: mounts nothing (flags and usage only).
func TestSharedFlagsHaveOneHelp(t *testing.T) {
	mount, serve := helpFlags(t, "mount"), helpFlags(t, "serve")
	var shared []string
	for name, m := range mount {
		s, ok := serve[name]
		if !ok {
			continue
		}
		shared = append(shared, name)
		if m != s {
			t.Errorf("--%s differs:\nmount: %s\nserve: %s", name, m, s)
		}
	}
	slices.Sort(shared)
	want := []string{"allow-remote", "cache-dir", "cache-size", "create", "layout", "log-file", "log-format", "log-level", "max-requests", "metrics-addr", "pipeline-depth", "read-ahead", "refresh-interval", "sig-cache-size", "stats", "timeout"}
	if !slices.Equal(shared, want) {
		t.Errorf("flags both commands take: %q, want %q", shared, want)
	}
}
