// Command oxyfs mounts the signatures and index entries of an oxy store as a
// directory tree, and inspects, writes, folds and checks such stores.
//
// Exit codes: 0 success, 1 the operation failed, 2 usage error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	flag "github.com/spf13/pflag"

	"github.com/oxyfs/oxyfs/internal/termsafe"
)

// command is one subcommand.
type command struct {
	name    string
	args    string // argument synopsis
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// env is what a command runs with: its streams and common flags.
//
// stderr redacts secrets (store.Redact) and escapes control characters
// (termsafe) in every message, warning and log line; stdout escapes control
// characters in what a command prints. rawStdout is for the store's own
// bytes (cat) and for JSON escaped by termsafe.JSON; rawStderr for the
// progress bar's own control sequences.
type env struct {
	stdout, stderr       io.Writer
	rawStdout, rawStderr io.Writer
	stdin                io.Reader
	flags                *flag.FlagSet
	common               commonFlags
}

// usageError makes the command exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitCode makes the command exit with this code, having said all there is
// to say (a detached mount's parent passes on its child's).
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var code int
	if args, ok := helperArgs(os.Args[0], os.Args[1:]); ok {
		code = runHelper(args, termsafe.Writer{W: os.Stderr})
	} else {
		code = run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	rawStdout, rawStderr := stdout, stderr
	stdout, stderr = termsafe.Escaper{W: stdout}, termsafe.Writer{W: stderr}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "version" {
		if len(args) > 1 {
			fmt.Fprintf(stderr, "oxyfs %s: takes no arguments (got %q)\n", args[0], args[1:])
			return 2
		}
		buildVersion().print(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		if near := nearestCommand(args[0]); near != "" {
			fmt.Fprintf(stderr, "oxyfs: unknown command %q; did you mean %q? (oxyfs help lists them)\n", args[0], near)
			return 2
		}
		fmt.Fprintf(stderr, "oxyfs: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return 2
	}
	e := &env{stdout: stdout, stderr: stderr, rawStdout: rawStdout, rawStderr: rawStderr, stdin: stdin}
	e.flags = flag.NewFlagSet("oxyfs "+c.name, flag.ContinueOnError)
	e.flags.SetOutput(stderr)
	e.flags.Usage = func() {
		fmt.Fprintf(stderr, "usage: oxyfs %s %s\n\n%s\n\nflags:\n", c.name, c.args, c.summary)
		e.flags.PrintDefaults()
	}
	e.common.register(e.flags)
	stopProfile := startProfile(stderr)
	err := c.run(ctx, e, args[1:])
	stopProfile()
	e.common.printStats(stderr)
	var ue *usageError
	var ec exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return int(ec)
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "oxyfs %s: %v\n", c.name, err)
		fmt.Fprintf(stderr, "usage: oxyfs %s %s (see oxyfs %s --help)\n", c.name, c.args, c.name)
		return 2
	default:
		fmt.Fprintf(stderr, "oxyfs %s: %v\n", c.name, err)
		return 1
	}
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "oxyfs %s — the signatures and index entries of an oxy store as a filesystem\n\nusage: oxyfs COMMAND [flags] ARGS\n\ncommands:\n", buildVersion().Version)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(w, "  %-8s %s\n           %s\n", n, c.args, c.summary)
	}
	fmt.Fprintf(w, "\nSTORE is a gocloud.dev/blob URL: file:///path, s3://bucket?endpoint=…&region=…, gs://bucket, azblob://container, mem://\nEvery command takes --layout bucket|directory|auto and --stats (request counts on stderr at exit).\nExit codes: 0 ok, 1 failed, 2 usage.\n")
}

// nearestCommand returns the command a misspelling most likely meant: the
// one within two edits (a transposition counting as one) or that it starts,
// else "".
func nearestCommand(typed string) string {
	best, bestD := "", 3
	for name := range commands {
		d := editDistance(typed, name)
		if len(typed) >= 2 && len(typed) < len(name) && name[:len(typed)] == typed {
			d = min(d, 1)
		}
		if d < bestD || d == bestD && name < best {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b (bytes).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
