package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/internal/lib/english"
	"github.com/oxyfs/oxyfs/store"
)

func init() {
	register(&command{
		name:    "fold",
		args:    "STORE [--dry-run] [--drop-malformed FILE]",
		summary: "fold the store completely: one complete entry list of the journal and every entry prefix; retire the lists it read; mark the journal lines it read; --drop-malformed first moves the lines of the journal and the retired record that do not parse out of them, appending them to FILE",
		run:     runFold,
	})
	register(&command{
		name:    "gc",
		args:    "STORE [--dry-run] [--forget-objects FILE [--apply]]",
		summary: "collect: delete keys retired over an hour ago, drop folded journal lines past their hour, then fold; --forget-objects removes the entries of objects a repository collection deleted",
		run:     runGC,
	})
	register(&command{
		name:    "check",
		args:    "STORE [--json]",
		summary: "check the store (fsck): every per-object key named by a live list or the journal, every listed key present, lists decode and are sorted, records parse, no signature key is 0 bytes, the journal is not cut or shorter than its lists prove (what a failed write leaves), no older list beside the marker hides an entry; each problem has a code, its keys and the command that fixes it (docs/operations.md); exit 1 on problems",
		run:     runCheck,
	})
}

func (e *env) warnFunc() func(string) {
	return func(msg string) { fmt.Fprintf(e.stderr, "oxyfs: warning: %s\n", msg) }
}

func runFold(ctx context.Context, e *env, args []string) error {
	e.common.registerJSON(e.flags)
	dry := e.flags.Bool("dry-run", false, "report what the fold would write, retire and mark; change nothing")
	drop := e.flags.String("drop-malformed", "", "first move the lines of the journal and the retired record that do not parse out of them (compare-and-swap), appending them to this file, synced, before each record is rewritten; with --dry-run only print them")
	e.registerCreate()
	pos, err := e.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if *drop == "-" {
		// Elsewhere "-" is stdin or stdout; here it would be a file named
		// "-", and stdout carries the report and syncs nothing.
		return usagef("--drop-malformed needs a file to save the lines to, not -")
	}
	opts := fold.Options{DryRun: *dry, Warn: e.warnFunc(), DropMalformed: *drop != ""}
	if *drop != "" {
		opts.SaveDropped = saveLinesTo(*drop)
	}
	_, err = maintain(ctx, e, pos[0], *dry, "fold", func(st *store.Store, progress progressFunc) (fold.Report, error) {
		opts.Progress = progress
		return fold.Complete(ctx, st, opts)
	})
	return err
}

// saveLinesTo saves the lines --drop-malformed removes: appended to the
// file name (created 0600 if need be; relative to the working directory),
// each under a "# <record>" comment line, then synced, so that they are on
// disk before the record is rewritten without them.
func saveLinesTo(name string) fold.SaveLines {
	return func(record string, lines []string) error {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "# %s: %s not parse, removed at %s\n", record, english.Count(len(lines), "line that does", "lines that do"), time.Now().UTC().Format(time.RFC3339))
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		_, err = f.WriteString(b.String())
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("save to %s: %w", name, err)
		}
		return nil
	}
}

func runGC(ctx context.Context, e *env, args []string) error {
	e.common.registerJSON(e.flags)
	dry := e.flags.Bool("dry-run", false, "report exactly what would be deleted and dropped; change nothing")
	forget := e.flags.String("forget-objects", "", "file (- for stdin) of objects a repository collection deleted, one per line: OBJECT or KIND[,KIND]:OBJECT")
	apply := e.flags.Bool("apply", false, "with --forget-objects: really delete their entries (without it they are only reported)")
	e.registerCreate()
	pos, err := e.parse(args, 1, 1)
	if err != nil {
		return err
	}
	if *apply && *forget == "" {
		return usagef("--apply goes with --forget-objects")
	}
	opts := fold.CollectOptions{DryRun: *dry, Apply: *apply, Warn: e.warnFunc()}
	if *forget != "" {
		if opts.ForgetObjects, err = readForget(e, *forget); err != nil {
			return err
		}
	}
	_, err = maintain(ctx, e, pos[0], *dry, "gc", func(st *store.Store, progress progressFunc) (fold.CollectReport, error) {
		opts.Progress = progress
		return fold.Collect(ctx, st, opts)
	})
	return err
}

// readForget reads --forget-objects: an object a line; blank lines and
// lines starting with # are skipped.
func readForget(e *env, name string) ([]fold.ForgetObject, error) {
	var out []fold.ForgetObject
	err := eachLine(e, name, 0, func(n int, line string) error {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			return nil
		}
		o, err := fold.ParseForgetObject(line)
		if err != nil {
			return usagef("%s line %d: %v", name, n, err)
		}
		out = append(out, o)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func runCheck(ctx context.Context, e *env, args []string) error {
	e.common.registerJSON(e.flags)
	pos, err := e.parse(args, 1, 1)
	if err != nil {
		return err
	}
	// A location holding nothing of a store is no store to pass: exit 1,
	// saying why (openBucketStore: one LIST; the check lists everything
	// anyway).
	rep, err := maintain(ctx, e, pos[0], true, "check", func(st *store.Store, progress progressFunc) (fold.CheckReport, error) {
		return fold.Check(ctx, st, fold.CheckOptions{Progress: progress, Warn: e.warnFunc()})
	})
	if err == nil && !rep.OK() {
		return fmt.Errorf("%s found", english.Count(len(rep.Problems), "problem", "problems"))
	}
	return err
}

// progressFunc is how fold, gc and check report their progress.
type progressFunc = func(done, total int64, phase string)

// runReported runs a fold, collection or check with a progress bar on a
// terminal (label), then prints its report: as JSON under --json, else
// as text (printReport).
func runReported[R fmt.Stringer](e *env, label string, do func(progressFunc) (R, error)) (R, error) {
	bar := e.newProgress(label)
	rep, err := do(bar.update)
	bar.done()
	if err != nil {
		return rep, err
	}
	if e.common.json {
		return rep, e.printJSON(rep)
	}
	e.printReport(rep.String())
	return rep, nil
}

// maintain runs a fold, collection or check (do) on the store at url,
// opened by openBucketStore (read-only as readOnly says) and closed after,
// and prints its report (runReported, label).
func maintain[R fmt.Stringer](ctx context.Context, e *env, url string, readOnly bool, label string, do func(st *store.Store, progress progressFunc) (R, error)) (R, error) {
	st, err := e.openBucketStore(ctx, url, readOnly)
	if err != nil {
		var zero R
		return zero, err
	}
	defer st.Close()
	return runReported(e, label, func(progress progressFunc) (R, error) { return do(st, progress) })
}

// openBucketStore opens a store for fold, gc and check, which only apply to
// the bucket layout: a repository's own directory keeps no journal or lists.
// A location that holds no store is refused as such (requireStore), whatever
// layout was detected for it.
func (e *env) openBucketStore(ctx context.Context, url string, readOnly bool) (*store.Store, error) {
	st, err := e.openStore(ctx, url, store.Options{ReadOnly: readOnly})
	if err != nil {
		return nil, err
	}
	// A location holding nothing of a store is refused as that (exit 1),
	// whatever its layout: a file:// location with no pack- key is taken
	// for a directory store, and a path typo, an empty or unrelated
	// directory is no store, not one of the wrong layout.
	if err := e.requireStore(ctx, st, false); err != nil {
		st.Close()
		return nil, err
	}
	if st.Layout() != store.LayoutBucket {
		st.Close()
		return nil, usagef("%s has the %s layout, which keeps no journal or lists; pass --layout bucket for a store kept in the bucket layout", st.URL(), st.Layout())
	}
	return st, nil
}

// printReport prints a fold, collection or check report. Its "requests:"
// lines are left out under --stats, which prints the same counts once, on
// stderr, for every command.
func (e *env) printReport(text string) {
	if e.common.stats {
		var b strings.Builder
		for l := range strings.Lines(text) {
			if !strings.HasPrefix(strings.TrimLeft(l, " "), "requests: ") {
				b.WriteString(l)
			}
		}
		text = b.String()
	}
	fmt.Fprint(e.stdout, text)
}
