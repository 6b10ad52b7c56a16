package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// The command tree, on cobra.
//
// cobra finds the command, prints the completion scripts (`oxyfs completion
// bash|zsh|fish|powershell`) and answers their questions (the hidden
// `oxyfs __complete`), and writes the man pages (`oxyfs man DIR`). Each
// command parses its own flags as it always did (env.parse: pflag, usage
// errors exit 2, --help on stderr exits 0): its cobra.Command has
// DisableFlagParsing, and carries a copy of the command's flags, declared
// by running the command up to its parse (declareFlags), for completion
// and the man pages. So every command, flag, default, help text and exit
// code is what it was before cobra.

// errDeclared stops a command at its parse when only its flags are wanted.
var errDeclared = errors.New("flags declared")

// cli is one run of oxyfs: its streams, for every command.
type cli struct {
	stdout, stderr       io.Writer // escaped (see env)
	rawStdout, rawStderr io.Writer
	stdin                io.Reader
}

// newRoot builds the command tree of one run.
func (s *cli) newRoot(ctx context.Context) *cobra.Command {
	root := &cobra.Command{
		Use:                   "oxyfs COMMAND [flags] ARGS",
		Short:                 "the signatures and index entries of an oxy store as a filesystem",
		Long:                  rootLong,
		Args:                  cobra.ArbitraryArgs,
		DisableFlagParsing:    true,
		DisableFlagsInUseLine: true,
		SilenceErrors:         true,
		SilenceUsage:          true,
		RunE:                  func(_ *cobra.Command, args []string) error { return s.runRoot(args) },
	}
	root.SetOut(s.rawStdout) // completion scripts and answers, exact
	root.SetErr(s.stderr)
	root.SetIn(s.stdin)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef("%v%s", err, suggestFlag(err, c.Flags()))
	})
	cobraHelp := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c == root {
			printUsage(s.stdout)
			return
		}
		cobraHelp(c, args)
	})
	root.SetHelpCommand(&cobra.Command{
		Use:                "help [COMMAND]",
		Short:              "print the commands, or one command's usage and flags",
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				if c, ok := commands[args[0]]; ok {
					return s.runCommand(ctx, root, c, []string{"--help"})
				}
				if c, _, err := root.Find(args); err == nil && c != root {
					return c.Help() // completion's, version's
				}
			}
			printUsage(s.stdout)
			return nil
		},
	})
	root.AddCommand(&cobra.Command{
		Use:                "version",
		Short:              "print the version, commit, commit and build time, Go version and OS/arch",
		Args:               cobra.ArbitraryArgs,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			return s.runVersion(append([]string{"version"}, args...))
		},
	})
	for _, name := range commandNames() {
		c := commands[name]
		cc := &cobra.Command{
			Use:                   c.name + " " + c.args,
			Short:                 c.summary,
			Long:                  c.summary + "\n\n" + commonLong,
			Hidden:                c.hidden,
			Args:                  cobra.ArbitraryArgs,
			DisableFlagParsing:    true,
			DisableFlagsInUseLine: true,
			RunE: func(_ *cobra.Command, args []string) error {
				return s.runCommand(ctx, root, c, args)
			},
			ValidArgsFunction: completeFlagValue,
		}
		declareFlags(ctx, c, cc.Flags())
		root.AddCommand(cc)
	}
	// cobra's completion command, made now to say what it lacks as a
	// usage error (exit 2) instead of printing its help.
	root.InitDefaultCompletionCmd()
	if comp, _, err := root.Find([]string{"completion"}); err == nil && comp != root {
		comp.Args = cobra.ArbitraryArgs
		comp.RunE = func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("completion: name a shell: bash, zsh, fish or powershell")
			}
			shells := []string{"bash", "zsh", "fish", "powershell"}
			if near := nearest(args[0], shells); near != "" {
				return usagef("completion: no shell %q; did you mean %q?", termsafe.Value(args[0]), near)
			}
			return usagef("completion: no shell %q: bash, zsh, fish or powershell", termsafe.Value(args[0]))
		}
	}
	return root
}

// flagValues are the values completion offers for the flags that take one of a few.
var flagValues = map[string][]string{
	"layout":     {"bucket", "directory", "auto"},
	"log-level":  {"debug", "info", "warn", "error"},
	"log-format": {"text", "json"},
	"kinds":      kindNames(), // watch: one kind (more, comma-separated, by hand)
}

// completeFlagValue completes the value of the flag before it (cobra
// completes flag names itself; without a flag before, a file, for a
// file:// STORE, a MOUNTPOINT or a FILE).
func completeFlagValue(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		if name, ok := strings.CutPrefix(args[len(args)-1], "--"); ok {
			if f := c.Flags().Lookup(name); f != nil && f.NoOptDefVal == "" {
				if vals, ok := flagValues[name]; ok {
					var out []cobra.Completion
					for _, v := range vals {
						if strings.HasPrefix(v, toComplete) {
							out = append(out, v)
						}
					}
					return out, cobra.ShellCompDirectiveNoFileComp
				}
			}
		}
	}
	if strings.HasPrefix(toComplete, "-") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveDefault
}

// rootLong and commonLong are what the man pages say beside each command's summary.
const (
	commonLong = "STORE is a gocloud.dev/blob URL: file:///path, s3://bucket?endpoint=…&region=…, gs://bucket, azblob://container, mem://. " +
		"Every command takes --layout bucket|directory|auto and --stats (request counts on stderr at exit).\n\n" +
		"Exit codes: 0 ok, 1 failed, 2 usage."
	rootLong = "oxyfs mounts the signatures and index entries of an oxy store as a directory tree, and inspects, writes, folds and checks such stores. " +
		"`oxyfs help` lists the commands, `oxyfs COMMAND --help` says one's flags.\n\n" + commonLong
)

// declareFlags adds c's flags to fs: the common ones, then c's own, which
// c registers before it parses (env.parse stops it there, errDeclared).
func declareFlags(ctx context.Context, c *command, fs *flag.FlagSet) {
	e := &env{stdout: io.Discard, stderr: io.Discard, rawStdout: io.Discard, rawStderr: io.Discard, stdin: eofReader{}, flags: fs, declaring: true}
	e.common.register(fs)
	ctx, cancel := context.WithCancel(ctx)
	cancel() // nothing a command does before its parse waits; this makes sure
	_ = c.run(ctx, e, nil)
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// runRoot is oxyfs without a command it knows: the usage (no arguments:
// exit 2; -h, --help: exit 0), the version, or an unknown command (exit 2).
func (s *cli) runRoot(args []string) error {
	if len(args) == 0 {
		printUsage(s.stdout)
		return exitCode(2)
	}
	switch args[0] {
	case "-h", "--help":
		printUsage(s.stdout)
		return nil
	case "--version":
		return s.runVersion(args)
	}
	if near := nearestCommand(args[0]); near != "" {
		fmt.Fprintf(s.stderr, "oxyfs: unknown command %q; did you mean %q? (oxyfs help lists them)\n", termsafe.Value(args[0]), near)
		return exitCode(2)
	}
	fmt.Fprintf(s.stderr, "oxyfs: unknown command %q\n\n", termsafe.Value(args[0]))
	printUsage(s.stderr)
	return exitCode(2)
}

// runVersion is `oxyfs version` and `oxyfs --version` (args[0]).
func (s *cli) runVersion(args []string) error {
	if len(args) > 1 {
		fmt.Fprintf(s.stderr, "oxyfs %s: takes no arguments (got %q)\n", args[0], args[1:])
		return exitCode(2)
	}
	buildVersion().print(s.stdout)
	return nil
}

// runCommand runs command c with its arguments, as oxyfs always has: its
// own flag set, the common flags, the profile and --stats around it. It
// says what went wrong and returns the exit code (exitCode), or nil.
func (s *cli) runCommand(ctx context.Context, root *cobra.Command, c *command, args []string) error {
	e := &env{stdout: s.stdout, stderr: s.stderr, rawStdout: s.rawStdout, rawStderr: s.rawStderr, stdin: s.stdin, root: root}
	e.flags = flag.NewFlagSet("oxyfs "+c.name, flag.ContinueOnError)
	e.flags.SetOutput(s.stderr)
	e.flags.Usage = func() {
		// The usage is oxyfs's own text: escaped, never redacted (its
		// examples, AWS_SECRET_ACCESS_KEY=... and credentials_file=PATH,
		// read as secrets to termsafe.Redact and were cut from --help).
		out := termsafe.Escaper{W: s.rawStderr}
		fmt.Fprintf(out, "usage: oxyfs %s %s\n\n%s\n\nflags:\n", c.name, c.args, c.summary)
		e.flags.SetOutput(out)
		e.flags.PrintDefaults()
		e.flags.SetOutput(s.stderr)
	}
	e.common.register(e.flags)
	stopProfile := startProfile(s.stderr)
	err := c.run(ctx, e, args)
	stopProfile()
	e.common.printStats(s.stderr)
	var ue *usageError
	var ec exitCode
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ec):
		return ec
	case errors.Is(err, flag.ErrHelp):
		return nil
	case errors.As(err, &ue):
		fmt.Fprintf(s.stderr, "oxyfs %s: %s\n", c.name, errorLine(err))
		fmt.Fprintf(s.stderr, "usage: oxyfs %s %s (see oxyfs %s --help)\n", c.name, c.args, c.name)
		return exitCode(2)
	case storeFullMessage(err) != "":
		fmt.Fprintf(s.stderr, "oxyfs %s: %s: %s\n", c.name, storeFullMessage(err), errorLine(err))
		return exitCode(1)
	default:
		fmt.Fprintf(s.stderr, "oxyfs %s: %s\n", c.name, errorLine(err))
		return exitCode(1)
	}
}

// errorLine is a command's error as one line: a line break in it (a
// path or key the user typed, a name the store holds) is escaped as
// every other control character is, so no text after it can pass for a
// line of oxyfs's own (user trial 50: "oxyfs put: sig/aa/0001/a" then
// "FAKE: wrote 1 entry"). No error of oxyfs's own spans lines. Its
// backslashes stay as they are (termsafe.EscapeControls): a name an error
// quotes for a shell ($'…\xff…', termsafe.Quote) or in Go's syntax
// ("…\x07…", termsafe.Value) reads back as written (user trial 52: put's
// $'…\\xff…' was pasted as a backslash and "xff").
// A path an io/fs error names as it is ("stat sig/…/x<BEL>y: file does
// not exist") is quoted as ls quotes a name (termsafe.Quote), so it reads
// back too, and two paths never show the same.
func errorLine(err error) string {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if q := termsafe.Quote(pe.Path); q != pe.Path {
			msg = strings.Replace(msg, pe.Op+" "+pe.Path+": ", pe.Op+" "+q+": ", 1)
		}
	}
	return termsafe.EscapeControls(msg)
}

// exitStatus is the exit code of what the root command returned: its
// exitCode, 0 for none; any other error is cobra's own or completion's (a
// bad flag or argument, no such shell), a usage error (exit 2).
func (s *cli) exitStatus(err error) int {
	var ec exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return int(ec)
	default:
		fmt.Fprintf(s.stderr, "oxyfs: %v\n", err)
		return 2
	}
}

// suggestFlag is "; did you mean --NAME?" for the unknown flag err names
// when a flag of fs is near it (nearest), else "". pflag reports
// "unknown flag: --raed-only", and a long name given with one dash as
// "unknown shorthand flag: 'r' in -read-only".
func suggestFlag(err error, fs *flag.FlagSet) string {
	var typed string
	if _, after, ok := strings.Cut(err.Error(), "unknown flag: --"); ok {
		typed = after
	} else if _, after, ok := strings.Cut(err.Error(), "' in -"); ok && len(after) > 1 {
		typed, _, _ = strings.Cut(after, "=")
	}
	if typed == "" {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if near := nearest(typed, names); near != "" {
		return "; did you mean --" + near + "?"
	}
	return ""
}

// isTerminal tells whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
