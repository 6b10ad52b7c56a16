package fold

import (
	"fmt"
	"github.com/oxyfs/oxyfs/internal/lib/english"
	"strings"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// String prints the report of a fold for a terminal.
func (r Report) String() string {
	var b strings.Builder
	would := func(did, will string) string {
		if r.DryRun {
			return will
		}
		return did
	}
	if r.DryRun {
		b.WriteString("dry run: nothing was written\n")
	}
	if d := r.DroppedMalformed; d != nil {
		writeItems(&b, "journal lines that do not parse, "+would("moved out (saved first)", "to move out"), quoted(d.Journal))
		writeItems(&b, "retired record lines that do not parse, "+would("moved out (saved first)", "to move out"), quoted(d.Retired))
		if len(d.Rewritten) > 0 {
			fmt.Fprintf(&b, "records rewritten without them: %s\n", strings.Join(d.Rewritten, ", "))
		} else if !r.DryRun {
			b.WriteString("records: no line to drop\n")
		}
	}
	fmt.Fprintf(&b, "journal: %s read, %d unfolded\n", english.Count(r.JournalLines, "line", "lines"), r.JournalUnfolded)
	writeKinds(&b, "listed", r.Listed)
	switch {
	case r.Legacy.Skipped:
		b.WriteString("older lists: folded before (marker present)\n")
	default:
		fmt.Fprintf(&b, "older lists: %d read, %d entries %s, %d kept (already there)", r.Legacy.Lists, r.Legacy.Copied, would("copied", "to copy"), r.Legacy.Kept)
		if r.Legacy.Marker {
			fmt.Fprintf(&b, ", marker %s %s", format.LegacyFoldedMarker, would("written", "to write"))
		}
		b.WriteString("\n")
	}
	switch {
	case r.List.Name == "":
	case r.Deferred != "":
		fmt.Fprintf(&b, "list: %s (%d entries) — deferred: %s\n", r.List.Name, r.List.Entries, r.Deferred)
		if r.Unfolded {
			fmt.Fprintf(&b, "store: %s not folded (the lists read hold entries whose keys are gone)\n", would("left", "would be left"))
		}
	case r.List.Revived:
		fmt.Fprintf(&b, "list: %s %s (%d entries), retired within the hour, live again\n", would("revived", "would revive"), r.List.Name, r.List.Entries)
	case r.List.Unchanged:
		fmt.Fprintf(&b, "list: unchanged, %s (%s)", r.List.Name, english.Count(r.List.Entries, "entry", "entries"))
		if r.List.Repaired {
			b.WriteString(", corrupt copy rewritten")
		}
		b.WriteString("\n")
	default:
		fmt.Fprintf(&b, "list: %s %s (%s, %d bytes)\n", would("wrote", "would write"), r.List.Name, english.Count(r.List.Entries, "entry", "entries"), r.List.Bytes)
	}
	fmt.Fprintf(&b, "retired: %s%s\n", english.Count(len(r.Retired), "list", "lists"), listSuffix(r.Retired))
	if r.LeftOut > 0 {
		fmt.Fprintf(&b, "left out: %d entries of the lists read, whose keys are gone\n", r.LeftOut)
	}
	fmt.Fprintf(&b, "journal lines %s folded: %d", would("marked", "to mark"), r.Marked)
	if r.Dropped > 0 {
		fmt.Fprintf(&b, " (and %d folded lines past their hour dropped)", r.Dropped)
	}
	b.WriteString("\n")
	writeItems(&b, "malformed keys (left out)", r.Malformed)
	writeItems(&b, "malformed keys the lists read hold (not entry keys; left out)", quoted(r.ListMalformed))
	writeItems(&b, "0-byte signature keys (listed as they are; re-sign each: oxyfs put --force STORE KEY SIGFILE)", r.EmptySignatures)
	writeItems(&b, "journal keys the listing did not show (kept)", r.JournalOnly)
	writeItems(&b, "journal lines that do not parse (kept as is)", r.JournalBad)
	writeItems(&b, "retired record lines that do not parse (kept as is)", r.RetiredBad)
	writeItems(&b, "older keys that do not parse (left alone)", r.Legacy.Malformed)
	writeItems(&b, "older list lines that do not parse (not copied)", r.Legacy.BadLines)
	fmt.Fprintf(&b, "%s, compare-and-swap tries=%d\n", r.Requests, r.CASTries)
	return b.String()
}

// String prints the report of a collection for a terminal.
func (r CollectReport) String() string {
	var b strings.Builder
	verb := "deleted"
	if r.DryRun {
		b.WriteString("dry run: nothing was deleted or written\n")
		verb = "would delete"
	}
	fmt.Fprintf(&b, "retired over %v ago: %d %s\n", format.GracePeriod, len(r.Deleted), verb)
	for _, k := range r.Deleted {
		fmt.Fprintf(&b, "  %s %s\n", verb, k)
	}
	for _, k := range r.Missing {
		fmt.Fprintf(&b, "  gone already %s\n", k)
	}
	for _, k := range r.Failed {
		fmt.Fprintf(&b, "  still there after its DELETE (retired line kept) %s\n", k)
	}
	if r.Waiting > 0 {
		fmt.Fprintf(&b, "retired within the hour: %d kept (next due after %s)\n", r.Waiting, time.UnixMilli(r.NextDue).UTC().Format(time.RFC3339))
	}
	writeItems(&b, "never deleted although retired", r.Refused)
	fmt.Fprintf(&b, "retired lines %s: %d\n", dropVerb(r.DryRun), r.RetiredLinesDropped)
	fmt.Fprintf(&b, "folded journal lines past their hour %s: %d\n", dropVerb(r.DryRun), r.JournalLinesDropped)
	if len(r.Forget.Keys) > 0 || r.Forget.Lines > 0 {
		fv := "to delete with --apply"
		switch {
		case r.Forget.Applied:
			fv = "deleted"
		case r.DryRun:
			fv = "would delete (with --apply)"
		}
		if r.Forget.Applied {
			fmt.Fprintf(&b, "forgotten objects: %d keys (%d confirmed gone) and %d journal lines dropped\n", len(r.Forget.Keys), r.Forget.Deleted, r.Forget.Lines)
		} else {
			fmt.Fprintf(&b, "forgotten objects: %d keys and %d journal lines %s\n", len(r.Forget.Keys), r.Forget.Lines, fv)
		}
		if n := r.Forget.RecordsPlanned; n > 0 {
			fmt.Fprintf(&b, "  first, %s for readers would be retired and written (deleted after its hour)\n", english.Count(n, "forget record", "forget records"))
		}
		for _, name := range r.Forget.Records {
			fmt.Fprintf(&b, "  forget record for readers (retired; deleted after its hour): %s\n", name)
		}
		failed := make(map[string]bool, len(r.Forget.Failed))
		for _, k := range r.Forget.Failed {
			failed[k] = true
		}
		for _, k := range r.Forget.Keys {
			if failed[k] {
				fmt.Fprintf(&b, "  %s (still there after its DELETE)\n", k)
			} else {
				fmt.Fprintf(&b, "  %s\n", k)
			}
		}
	}
	if r.Fold != nil {
		b.WriteString("fold:\n")
		for l := range strings.Lines(r.Fold.String()) {
			b.WriteString("  " + l)
		}
	}
	fmt.Fprintf(&b, "%s, compare-and-swap tries=%d\n", r.Requests, r.CASTries)
	return b.String()
}

// recordLines is a record's count of lines in words, and of those that do
// not parse when there are: "2 lines (1 line that does not parse)".
func recordLines(n, bad int) string {
	s := english.Count(n, "line", "lines")
	if bad > 0 {
		s += " (" + linesThatDo(bad) + " not parse)"
	}
	return s
}

// linesThatDo is "1 line that does" or "N lines that do", for "… not parse".
func linesThatDo(n int) string {
	return english.Count(n, "line that does", "lines that do")
}

func dropVerb(dry bool) string {
	if dry {
		return "to drop"
	}
	return "dropped"
}

// String prints the report of a check for a terminal.
func (r CheckReport) String() string {
	var b strings.Builder
	folded := "no"
	if r.Folded {
		folded = "yes"
	}
	fmt.Fprintf(&b, "store: %s (%s layout), folded: %s\n", r.Store, r.Layout, folded)
	fmt.Fprintf(&b, "live lists: %d, %s%s\n", len(r.LiveLists), english.Count(r.ListEntries, "entry", "entries"), listSuffix(r.LiveLists))
	fmt.Fprintf(&b, "journal: %s, %d unfolded; retired record: %s\n", recordLines(r.JournalLines, r.JournalBadLines), r.JournalUnfolded, recordLines(r.RetiredLines, r.RetiredBadLines))
	fmt.Fprintf(&b, "per-object entries: %d\n", r.Entries)
	if r.Unnamed > 0 || r.EmptySignatures > 0 {
		fmt.Fprintf(&b, "named by no list or journal line: %d (%d may be acknowledged entries readers miss); 0-byte signatures: %d\n", r.Unnamed, r.UnnamedLost, r.EmptySignatures)
	}
	writeProblems(&b, "problems", r.Problems)
	writeProblems(&b, "notes", r.Notes)
	if r.OK() {
		b.WriteString("OK: no problems\n")
	} else {
		fmt.Fprintf(&b, "FAILED: %s\n", english.Count(len(r.Problems), "problem", "problems"))
	}
	b.WriteString(r.Requests.String() + "\n")
	return b.String()
}

// writeProblems prints check findings: per finding its code and message,
// its keys (the first few, then a count), its details and its fix.
func writeProblems(b *strings.Builder, title string, ps []Problem) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintf(b, "%s (%d):\n", title, len(ps))
	for _, p := range ps {
		b.WriteString("  - ")
		p.write(b, "    ")
	}
}

// quoted is each line quoted, so that a blank or odd line shows, and
// clipped to 120 bytes: a line of megabytes (a record's garbage) is named,
// not printed (the report's JSON and the --drop-malformed file keep it
// whole).
func quoted(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = quoteText(l, 120)
	}
	return out
}

func writeKinds(b *strings.Builder, what string, m map[string]int) {
	fmt.Fprintf(b, "%s:", what)
	total := 0
	for _, k := range format.Kinds {
		fmt.Fprintf(b, " %s=%d", k, m[k.String()])
		total += m[k.String()]
	}
	fmt.Fprintf(b, " (total %d)\n", total)
}

func writeItems(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "%s (%d):\n", title, len(items))
	for _, it := range items {
		fmt.Fprintf(b, "  - %s\n", it)
	}
}

func listSuffix(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return ": " + strings.Join(names, ", ")
}
