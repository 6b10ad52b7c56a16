package fold

import (
	"fmt"
	"strings"
)

// Problem is one finding of Check (issue 42): what broke, which keys, and
// the command that repairs it, as `restic check` and `git fsck` users
// expect. Severity SeverityProblem findings fail the check (exit status 1);
// SeverityNote ones are states the spec allows that an operator may want to
// know of. One finding names all the keys of one cause: a truncated list
// is one problem, however many keys it hid, with their count and the first
// CheckOptions.MaxItems of them. docs/operations.md lists every code.
type Problem struct {
	Code     string   `json:"code"`     // stable, one of Codes
	Severity string   `json:"severity"` // SeverityProblem or SeverityNote
	Keys     []string `json:"keys"`     // the keys it concerns: the first MaxItems of Count
	Count    int      `json:"count"`    // how many keys it concerns in all
	Message  string   `json:"message"`  // what it means, one line
	// Details are further lines: the lines of a record that do not parse,
	// the keys that follow from the cause (the first MaxItems, then a count).
	Details []string `json:"details,omitempty"`
	Fix     string   `json:"fix"` // what to run (a command, or what to wait for); "" when nothing needs doing
}

// The severities of a Problem.
const (
	SeverityProblem = "problem"
	SeverityNote    = "note"
)

// The codes of Check's findings. docs/operations.md ("When check fails")
// says what each means and what to run.
const (
	CodeJournalMalformedLine = "journal-malformed-line"
	CodeJournalCut           = "journal-cut"
	CodeJournalLostLines     = "journal-lost-lines"
	CodeRetiredMalformedLine = "retired-malformed-line"
	CodePackKeyIrregular     = "pack-key-irregular"
	CodeEntryKeyMalformed    = "entry-key-malformed"
	CodeListCorrupt          = "list-corrupt"
	CodeListIDMismatch       = "list-id-mismatch"
	CodeListVanished         = "list-vanished"
	CodeListKeyMalformed     = "list-key-malformed"
	CodeListsDisagree        = "lists-disagree"
	CodeEntryMissingKey      = "entry-missing-key"
	CodeListingIncomplete    = "listing-incomplete"
	CodeEntryLeftOut         = "entry-left-out"
	CodeEntryUnlisted        = "entry-unlisted"
	CodeSigEmpty             = "sig-empty"
	CodeLegacyListHidden     = "legacy-list-hidden"

	CodeEntryWaitingFold     = "entry-waiting-fold"
	CodeStoreNotFolded       = "store-not-folded"
	CodeDirectoryLayout      = "directory-layout"
	CodeListsSideBySide      = "lists-side-by-side"
	CodePartialListsLive     = "partial-lists-live"
	CodeJournalOverThreshold = "journal-over-threshold"
	CodeLegacyListsUnfolded  = "legacy-lists-unfolded"
	CodeRetiredKeyGone       = "retired-key-gone"
	CodeForgetRecordGone     = "forget-record-gone"
	CodeForgetRecordBad      = "forget-record-malformed"
	CodeRetiredDue           = "retired-due"
)

// Codes are every code a Problem may carry.
var Codes = []string{
	CodeJournalMalformedLine, CodeJournalCut, CodeJournalLostLines, CodeRetiredMalformedLine,
	CodePackKeyIrregular, CodeEntryKeyMalformed, CodeListCorrupt, CodeListIDMismatch,
	CodeListVanished, CodeListKeyMalformed, CodeListsDisagree, CodeEntryMissingKey,
	CodeListingIncomplete, CodeEntryLeftOut, CodeEntryUnlisted, CodeSigEmpty, CodeLegacyListHidden,
	CodeEntryWaitingFold, CodeStoreNotFolded, CodeDirectoryLayout, CodeListsSideBySide,
	CodePartialListsLive, CodeJournalOverThreshold, CodeLegacyListsUnfolded, CodeRetiredKeyGone,
	CodeForgetRecordGone, CodeForgetRecordBad, CodeRetiredDue,
}

// textKeys is how many keys the text form of a Problem prints.
const textKeys = 5

// String prints a Problem as its text form: its code and message, its keys
// (the first few, then a count), its details, and its fix.
func (p Problem) String() string {
	var b strings.Builder
	p.write(&b, "")
	return strings.TrimSuffix(b.String(), "\n")
}

// write prints p as String does, each line after the first indented.
func (p Problem) write(b *strings.Builder, indent string) {
	fmt.Fprintf(b, "%s: %s\n", p.Code, p.Message)
	if p.Count > 0 {
		shown := p.Keys[:min(len(p.Keys), textKeys)]
		fmt.Fprintf(b, "%s  keys (%d): %s%s\n", indent, p.Count, strings.Join(shown, ", "), more(p.Count-len(shown)))
	}
	for _, d := range p.Details {
		fmt.Fprintf(b, "%s  %s\n", indent, d)
	}
	if p.Fix != "" {
		fmt.Fprintf(b, "%s  fix: %s\n", indent, p.Fix)
	}
}

// findings gathers a check's problems and notes.
type findings struct {
	rep *CheckReport
	w   *warner
	max int
	url string // the store's URL, as the fixes name it
}

// add puts p into the report: a problem is warned of too.
func (f *findings) add(p Problem) {
	if p.Keys == nil {
		p.Keys = []string{} // JSON: always an array
	}
	if p.Severity == SeverityNote {
		f.rep.Notes = append(f.rep.Notes, p)
		return
	}
	p.Severity = SeverityProblem
	f.rep.Problems = append(f.rep.Problems, p)
	if p.Count > 0 {
		f.w.warn("%s: %s (%s)", p.Code, p.Message, strings.Join(p.Keys, ", ")+more(p.Count-len(p.Keys)))
	} else {
		f.w.warn("%s: %s", p.Code, p.Message)
	}
}

// keyed returns p concerning keys: Count is len(keys), Keys its first max.
func (f *findings) keyed(p Problem, keys []string) Problem {
	p.Count = len(keys)
	p.Keys = keys[:min(len(keys), f.max)]
	return p
}

// cmd is an oxyfs command line on this store: "oxyfs fold --x file:///s".
func (f *findings) cmd(name string, flags ...string) string {
	return strings.Join(append(append([]string{"oxyfs", name}, flags...), ShellArg(f.url)), " ")
}

// ShellArg is s as one word of a POSIX shell command line: as it is when
// it holds only characters no shell reads specially, else in single
// quotes. A store URL's query (s3://b?endpoint=…&region=…&prefix=repo/)
// pasted bare would be cut at its first "&", and the fix would run on
// another store (the bucket's root, without prefix=).
func ShellArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// foldFix is the fix of what a complete fold puts right.
func (f *findings) foldFix() string { return f.cmd("fold") }

// dropMalformedFix is the fix of lines of a record that do not parse.
func (f *findings) dropMalformedFix() string {
	return f.cmd("fold", "--drop-malformed", "bad-lines.txt") + " (moves them out of the record by compare-and-swap, saving them to bad-lines.txt; --dry-run first shows which)"
}

// sample is "k1, k2, k3 and N more": the first max of keys.
func sample(keys []string, max int) string {
	shown := keys[:min(len(keys), max)]
	return strings.Join(shown, ", ") + more(len(keys)-len(shown))
}
