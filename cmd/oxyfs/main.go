package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// command is one subcommand.
type command struct {
	name    string
	args    string // argument synopsis
	summary string
	run     func(ctx context.Context, env *env, args []string) error
	hidden  bool // left out of the usage, the man pages and completion (man)
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// env is what a command runs with: its streams and common flags.
//
// stderr redacts secrets (termsafe.Redact) and escapes control characters
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
	declaring            bool           // only declare the flags: parse returns errDeclared (declareFlags)
	root                 *cobra.Command // the command tree (oxyfs man)
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
	s := &cli{
		stdout: termsafe.Escaper{W: stdout}, stderr: termsafe.Writer{W: stderr},
		rawStdout: stdout, rawStderr: stderr, stdin: stdin,
	}
	root := s.newRoot(ctx)
	if args == nil {
		args = []string{} // not os.Args, which cobra takes for nil
	}
	root.SetArgs(args)
	return s.exitStatus(root.ExecuteContext(ctx))
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "oxyfs %s — the signatures and index entries of an oxy store as a filesystem\n\nusage: oxyfs COMMAND [flags] ARGS\n\ncommands:\n", buildVersion().Version)
	for _, n := range commandNames() {
		c := commands[n]
		if c.hidden {
			continue
		}
		fmt.Fprintf(w, "  %-8s %s\n           %s\n", n, c.args, c.summary)
	}
	fmt.Fprintf(w, "\nSTORE is a gocloud.dev/blob URL: file:///path, s3://bucket?endpoint=…&region=…, gs://bucket, azblob://container, mem://\nEvery command takes --layout bucket|directory|auto and --stats (request counts on stderr at exit).\nExit codes: 0 ok, 1 failed, 2 usage.\n")
	fmt.Fprintf(w, "\noxyfs version (or --version) says what was built; oxyfs completion bash|zsh|fish|powershell prints a completion script.\n")
}

// commandNames are the registered commands, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// nearestCommand returns the command a misspelling most likely meant
// (nearest), else "".
func nearestCommand(typed string) string {
	var names []string
	for _, n := range commandNames() {
		if !commands[n].hidden {
			names = append(names, n)
		}
	}
	return nearest(typed, append(names, "completion", "help", "version"))
}

// nearest returns the name a misspelling most likely meant: the one within
// two edits (a transposition counting as one) or that it starts, else "".
func nearest(typed string, names []string) string {
	best, bestD := "", 3
	for _, name := range names {
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
