package main

import (
	"strings"
	"testing"
)

// TestEveryCommandHelpAndBadFlag: each command's --help (and -h) prints
// its usage line, summary and flags on stderr and exits 0; an unknown flag
// is a usage error (exit 2) that names the flag and points at --help.
func TestEveryCommandHelpAndBadFlag(t *testing.T) {
	if len(commands) < 10 {
		t.Fatalf("%d commands registered: %v", len(commands), commandNames())
	}
	for _, name := range commandNames() {
		c := commands[name]
		for _, h := range []string{"--help", "-h"} {
			out, errOut, code := runCLI(t, name, h)
			if code != 0 || out != "" {
				t.Errorf("oxyfs %s %s: exit %d, stdout %q; want 0 and nothing", name, h, code, out)
			}
			if want := "usage: oxyfs " + name + " " + c.args + "\n\n" + c.summary + "\n\nflags:\n"; !strings.HasPrefix(errOut, want) {
				t.Errorf("oxyfs %s %s: stderr\n%s\nwant it to start with\n%s", name, h, errOut, want)
			}
			if name != "mount" || commands["mount"].args != "[STORE MOUNTPOINT]" || strings.Contains(c.summary, "Linux only") {
				continue
			}
			// The usage is not redacted: its examples are not secrets
			// (they read "AWS_SECRET_ACCESS_KEY=REDACTED mode 0600" and
			// "credentials_file=REDACTED a password…").
			for _, f := range []string{"AWS_SECRET_ACCESS_KEY=..., mode 0600", "(fstab: credentials_file=PATH):", "credentials_file=PATH, debug"} {
				if !strings.Contains(errOut, f) {
					t.Errorf("oxyfs mount --help lacks %q", f)
				}
			}
			for _, f := range []string{"--read-only", "--layout", "--stats", "--timeout", "--max-requests", "-o, --options"} {
				if !strings.Contains(errOut, f) {
					t.Errorf("oxyfs mount --help lacks %s", f)
				}
			}
		}
		_, errOut, code := runCLI(t, name, "--no-such-flag", "x")
		if code != 2 || !strings.Contains(errOut, "oxyfs "+name+": unknown flag: --no-such-flag") ||
			!strings.Contains(errOut, "(see oxyfs "+name+" --help)") {
			t.Errorf("oxyfs %s --no-such-flag: exit %d, stderr %q; want 2 and a usage error", name, code, errOut)
		}
	}
}

// TestTopLevelExitCodes: no command prints the usage and exits 2; help,
// -h and --help print it on stdout and exit 0; an unknown command exits 2,
// naming the nearest command when one is near.
func TestTopLevelExitCodes(t *testing.T) {
	for _, c := range []struct {
		args       []string
		code       int
		out, err   string // substrings; "" for none expected
		noOut, noE bool
	}{
		{args: nil, code: 2, out: "usage: oxyfs COMMAND [flags] ARGS", noE: true},
		{args: []string{"help"}, code: 0, out: "usage: oxyfs COMMAND [flags] ARGS", noE: true},
		{args: []string{"-h"}, code: 0, out: "usage: oxyfs COMMAND [flags] ARGS", noE: true},
		{args: []string{"--help"}, code: 0, out: "Exit codes: 0 ok, 1 failed, 2 usage.", noE: true},
		{args: []string{"mout"}, code: 2, err: `oxyfs: unknown command "mout"; did you mean "mount"?`, noOut: true},
		{args: []string{"chekc"}, code: 2, err: `did you mean "check"?`, noOut: true},
		{args: []string{"zzzzzzzz"}, code: 2, err: `oxyfs: unknown command "zzzzzzzz"`, noOut: true},
		{args: []string{"--bogus"}, code: 2, err: `oxyfs: unknown command "--bogus"`, noOut: true},
		{args: []string{"version", "x"}, code: 2, err: "takes no arguments", noOut: true},
		{args: []string{"--version", "x"}, code: 2, err: "takes no arguments", noOut: true},
		{args: []string{"help", "mount"}, code: 0, err: "usage: oxyfs mount [STORE MOUNTPOINT]\n", noOut: true},
		{args: []string{"help", "completion"}, code: 0, out: "oxyfs completion [command]", noE: true},
		{args: []string{"completion"}, code: 2, err: "oxyfs: completion: name a shell: bash, zsh, fish or powershell\n", noOut: true},
		{args: []string{"completion", "bash", "extra"}, code: 2, err: `unknown command "extra"`, noOut: true},
		{args: []string{"completion", "bash"}, code: 0, out: "complete -o default -F __start_oxyfs oxyfs", noE: true},
		{args: []string{"completion", "zsh"}, code: 0, out: "#compdef oxyfs", noE: true},
		{args: []string{"completion", "fish"}, code: 0, out: "complete -c oxyfs", noE: true},
		{args: []string{"completion", "powershell"}, code: 0, out: "Register-ArgumentCompleter", noE: true},
		{args: []string{"man"}, code: 2, err: "oxyfs man: want 1 argument(s), got 0", noOut: true},
		{args: []string{"version"}, code: 0, out: "- os/arch: ", noE: true},
		{args: []string{"--version"}, code: 0, out: "- go/version: ", noE: true},
	} {
		out, errOut, code := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.err) ||
			c.noOut && out != "" || c.noE && errOut != "" {
			t.Errorf("oxyfs %q: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q", c.args, code, out, errOut, c.code, c.out, c.err)
		}
	}
	// The list names every command.
	out, _, _ := runCLI(t, "help")
	for _, name := range commandNames() {
		if !commands[name].hidden && !strings.Contains(out, "\n  "+name+" ") {
			t.Errorf("oxyfs help does not list %s:\n%s", name, out)
		}
	}
}

// TestOperationFailureExitsOne: a command that fails (not a usage error)
// exits 1 with "oxyfs CMD: " and the reason.
func TestOperationFailureExitsOne(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := runCLI(t, "check", "--layout", "bucket", "file://"+dir+"/nothing-here")
	if code != 1 || !strings.HasPrefix(errOut, "oxyfs check: ") {
		t.Errorf("check of no store: exit %d, stderr %q; want 1", code, errOut)
	}
	_, errOut, code = runCLI(t, "status", "a", "b")
	if code != 2 || !strings.Contains(errOut, "oxyfs status: want 1 argument(s), got 2") {
		t.Errorf("status with two arguments: exit %d, stderr %q; want 2", code, errOut)
	}
}
