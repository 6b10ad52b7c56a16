package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/lib/english"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

func init() {
	register(&command{
		name: "diff",
		args: "STORE OLD [NEW] | STORE --last-fold [--json] [--stat]",
		summary: "compare two states of a store's entries: OLD and NEW are entry lists (pack-<id>.entries, pack-<id>.entries-part, live or retired while they exist), journal (its own set) or now (the current view, NEW's default); " +
			"prints + PATH for an entry NEW has and OLD lacks, - PATH for the reverse, sorted; --last-fold: what the newest complete fold changed. Exit 0 equal, 1 differ, 2 error, as diff(1)",
		run: runDiff,
	})
}

// diffRow is one line of oxyfs diff (and of oxyfs watch), and its JSON
// form. Signer, Size and Time are a signature's (watch's).
type diffRow struct {
	Op     string `json:"op"`
	Path   string `json:"path"`
	Key    string `json:"key"`
	Kind   string `json:"kind"`
	Signer string `json:"signer,omitempty"`
	Size   *int64 `json:"size,omitempty"`
	Time   string `json:"time,omitempty"`
}

// opSigns are the text form of each op.
var opSigns = map[string]string{"add": "+", "replace": "~", "remove": "-"}

// newDiffRow is the row of key: its path on the mount is its key, its kind
// "malformed" for a key the key rules refuse (a list may hold one: it is
// shown, never dropped).
func newDiffRow(op, key string) diffRow {
	r := diffRow{Op: op, Path: key, Key: key, Kind: "malformed"}
	if e, err := index.ParseEntryPath(key); err == nil { // an entry's path is its key
		r.Kind = e.Kind.String()
		if e.Kind == format.KindSig {
			r.Signer = e.Value
		}
	}
	return r
}

// rowWriter prints rows, as text (`+ PATH`, PATH escaped as oxyfs ls
// escapes names) or one JSON object a line, each line written whole.
type rowWriter struct {
	text, raw io.Writer // escaped stdout, raw stdout (for termsafe.JSON)
	json      bool
}

func (w rowWriter) write(r diffRow) error {
	if w.json {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = w.raw.Write(append(termsafe.JSON(b), '\n'))
		return err
	}
	_, err := io.WriteString(w.text, opSigns[r.Op]+" "+termsafe.Quote(r.Path)+"\n")
	return err
}

// diffStat counts the entries added and removed, per kind.
type diffStat struct {
	Added   int `json:"added"`
	Removed int `json:"removed"`
}

func runDiff(ctx context.Context, e *env, args []string) error {
	e.common.registerJSON(e.flags)
	stat := e.flags.Bool("stat", false, "print only the count of entries added and removed per kind")
	lastFold := e.flags.Bool("last-fold", false, "compare what the newest complete fold read (the lists it retired and the journal lines it marked) with the list it wrote; within the hour after it, while they exist")
	pos, err := e.parse(args, 1, 3)
	if err != nil {
		return err
	}
	if *lastFold && len(pos) != 1 {
		return usagef("--last-fold takes STORE alone")
	}
	if !*lastFold && len(pos) < 2 {
		return usagef("want STORE OLD [NEW], or STORE --last-fold")
	}
	differ, err := diffStore(ctx, e, pos, *lastFold, *stat)
	switch {
	case err != nil:
		var ue *usageError
		if errors.As(err, &ue) {
			return err
		}
		if errors.Is(err, syscall.EPIPE) {
			return exitCode(2)
		}
		fmt.Fprintf(e.stderr, "oxyfs diff: %v\n", err)
		return exitCode(2)
	case differ:
		return exitCode(1)
	}
	return nil
}

// diffStore runs oxyfs diff and reports whether the sides differ.
func diffStore(ctx context.Context, e *env, pos []string, lastFold, stat bool) (bool, error) {
	var oldSrc, newSrc index.Source
	if !lastFold {
		var err error
		if oldSrc, err = index.ParseSource(pos[1]); err != nil {
			return false, usagef("OLD: %v", err)
		}
		newSrc = index.Source{Now: true}
		if len(pos) == 3 {
			if newSrc, err = index.ParseSource(pos[2]); err != nil {
				return false, usagef("NEW: %v", err)
			}
		}
	}
	st, err := e.openStore(ctx, pos[0], store.Options{ReadOnly: true})
	if err != nil {
		return false, err
	}
	defer st.Close()
	var sn *store.Snapshot
	if st.Layout() != store.LayoutDirectory {
		if sn, err = st.ReadSnapshot(ctx); err != nil {
			return false, err
		}
	}
	known := sn != nil && (len(sn.Journal) > 0 || len(sn.Lists) > 0 || len(sn.Retired) > 0)
	if err := e.requireStore(ctx, st, known); err != nil {
		return false, err
	}
	var old, new index.KeyStream
	if lastFold {
		if sn == nil {
			return false, errors.New("--last-fold: a directory-layout store is never folded")
		}
		sides, err := index.LastFold(sn)
		if err != nil {
			return false, err
		}
		lines := "no journal line"
		if sides.MarkedAt != 0 {
			// the journal's ms (to find the lines in .oxy/journal), and as a time
			lines = fmt.Sprintf("the journal lines it folded at %d (%s)", sides.MarkedAt, time.UnixMilli(sides.MarkedAt).UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(e.stderr, "oxyfs diff: the newest complete fold read %s and %s; it wrote %s\n", orNone(sides.Retired), lines, sides.Wrote)
		old, new = index.OpenLastFold(ctx, st, sn, sides)
	} else {
		if old, err = index.OpenSource(ctx, st, sn, oldSrc); err != nil {
			return false, err
		}
		if new, err = index.OpenSource(ctx, st, sn, newSrc); err != nil {
			old.Close()
			return false, err
		}
	}
	defer old.Close()
	defer new.Close()
	out := bufio.NewWriterSize(e.stdout, 64<<10)
	raw := bufio.NewWriterSize(e.rawStdout, 64<<10)
	w := rowWriter{text: out, raw: raw, json: e.common.json}
	stats := map[string]*diffStat{}
	differ := false
	err = index.DiffKeys(old, new, false, func(op index.DiffOp, key []byte) error {
		differ = true
		r := newDiffRow("add", string(key))
		if op == index.DiffRemoved {
			r.Op = "remove"
		}
		if stat {
			s := stats[r.Kind]
			if s == nil {
				s = &diffStat{}
				stats[r.Kind] = s
			}
			if op == index.DiffAdded {
				s.Added++
			} else {
				s.Removed++
			}
			return nil
		}
		r.Signer = "" // diff compares keys: the signer is in the path
		return w.write(r)
	})
	if err == nil && stat {
		err = writeStat(e, w, stats)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if ferr := raw.Flush(); err == nil {
		err = ferr
	}
	if l, ok := new.(*index.Listing); ok {
		warnMalformed(e, l)
	}
	if l, ok := old.(*index.Listing); ok {
		warnMalformed(e, l)
	}
	return differ, err
}

// warnMalformed says what a listing skipped.
func warnMalformed(e *env, l *index.Listing) {
	if n, first := l.Malformed(); n > 0 {
		fmt.Fprintf(e.stderr, "oxyfs diff: warning: skipped %s under the entry prefixes that are not entry keys (first: %s); oxyfs check names them\n", english.Count(n, "key", "keys"), termsafe.Quote(first))
	}
}

// writeStat prints the counts per kind, in the kinds' order.
func writeStat(e *env, w rowWriter, stats map[string]*diffStat) error {
	var names []string
	for _, k := range format.Kinds {
		names = append(names, k.String())
	}
	names = append(names, "malformed")
	if w.json {
		m := map[string]diffStat{}
		for _, n := range names {
			if s := stats[n]; s != nil {
				m[n] = *s
			}
		}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = w.raw.Write(append(b, '\n'))
		return err
	}
	var total diffStat
	for _, n := range names {
		if s := stats[n]; s != nil {
			fmt.Fprintf(w.text, "%-9s +%d -%d\n", n, s.Added, s.Removed)
			total.Added += s.Added
			total.Removed += s.Removed
		}
	}
	_, err := fmt.Fprintf(w.text, "%-9s +%d -%d\n", "total", total.Added, total.Removed)
	return err
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "no list"
	}
	return strings.Join(names, ", ")
}
