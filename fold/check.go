package fold

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// CheckOptions configure Check.
type CheckOptions struct {
	// Progress and Warn are as in Options (phases "list", "lists", "retired").
	Progress func(done, total int64, phase string)
	Warn     func(string)
	// MaxItems caps how many keys one finding names before it sums up the
	// rest; 0 means 50.
	MaxItems int
}

// CheckReport is what `oxyfs check` found. Problems are what a fold or a
// reader cannot put right by itself (exit status 1); Notes are states the
// spec allows but an operator may want to know of.
type CheckReport struct {
	Store           string   `json:"store"`
	Layout          string   `json:"layout"`
	Folded          bool     `json:"folded"` // a live complete list, and every live list decodes
	LiveLists       []string `json:"live_lists"`
	ListEntries     int      `json:"list_entries"`      // distinct keys across the live lists
	Entries         int      `json:"entries"`           // per-object keys listed
	JournalLines    int      `json:"journal_lines"`     // every line, the JournalBadLines included
	JournalBadLines int      `json:"journal_bad_lines"` // lines that do not parse
	JournalUnfolded int      `json:"journal_unfolded"`  // unfolded lines of those that parse
	RetiredLines    int      `json:"retired_lines"`     // every line, the RetiredBadLines included
	RetiredBadLines int      `json:"retired_bad_lines"` // lines that do not parse
	// EmptySignatures counts the 0-byte signature keys (each a problem).
	EmptySignatures int `json:"empty_signatures"`
	// Unnamed counts the per-object keys of a folded store that no live
	// list or journal line names; UnnamedLost those of them that are
	// problems (something acknowledged may be missing: see Check).
	Unnamed     int          `json:"unnamed"`
	UnnamedLost int          `json:"unnamed_lost"`
	Problems    []Problem    `json:"problems"` // each fails the check (Severity SeverityProblem)
	Notes       []Problem    `json:"notes"`    // Severity SeverityNote
	Requests    store.Counts `json:"requests"`
}

// OK reports whether the check found no problem.
func (r CheckReport) OK() bool { return len(r.Problems) == 0 }

// Check checks a store against spec §13.7, reading only:
//
//   - the journal and the retired record parse (each bad line is a problem);
//   - every live list decodes, is sorted, its id matches its content
//     (format.VerifyEntryList), and holds only entry keys;
//   - every key a live list or the journal names exists: of those the
//     listing did not show, the ones a report names (MaxItems per list and
//     for the journal) are looked up (HEAD) first; one a HEAD finds proves
//     the listing wrong, which is reported instead (confirmMissing);
//   - every per-object key is an entry key, and is named by a live list or
//     the journal; on a folded store one that is not is a problem if a
//     retired list that still exists held it (a fold left out a key that
//     exists: the gap a listing that lied leaves, see leftOut), if it was
//     written before the newest complete list (by more than
//     store.ClockMargin: that fold's listing missed it), if the journal is
//     proven to have lost lines (below), or if the journal was rewritten
//     more than store.ClockMargin after the key was written (its line was
//     lost, or its put failed after the key, or an older writer wrote it);
//     else it is noted as waiting for a fold (an older writer's key, or one
//     whose writer is adding its line: checkdamage.go); none of these time
//     rules applies while a live list does not decode (readers then list
//     the prefixes), and a key the journal names when read again after the
//     listing is named;
//   - no signature key is 0 bytes, the journal is not cut in the middle of
//     a line, and it names every existing key of each partial list written
//     within the hour before its last update (checkdamage.go);
//   - retired keys that are gone already, and older one-list keys still to
//     fold, are noted; older lists beside the marker that hold entries no
//     per-object key holds are a problem (checklegacy.go);
//   - two live complete lists that disagree are named with what each lacks.
//
// Each finding is a Problem (problem.go): one per cause, with its code, its
// keys (a count and the first MaxItems) and the command that fixes it.
//
// Requests: one LIST per page of the pack prefix (the snapshot), one GET of
// the journal and of the retired record, one LIST per page of every entry
// prefix (split by <hh> for large kinds), one GET per live list, HEADs of
// the keys a report names, one more LIST per page of the pack prefix and
// GET of the journal (checkdamage.go: the times, the journal's last byte),
// one GET per partial list written within the hour before the journal's
// last update, one GET per retired list on a folded store with unnamed
// keys, a HEAD or GET per retired key, and beside the marker one LIST per
// page of each older prefix and a GET per older list that may be newer than
// the marker (checklegacy.go). What two live complete lists disagree on
// comes from the bits already kept per listed key: no request.
//
// Check returns an error only when it could not read what it checks.
func Check(ctx context.Context, st *store.Store, opts CheckOptions) (rep CheckReport, err error) {
	start := st.Counts()
	defer func() { rep.Requests = st.Counts().Sub(start) }()
	max := opts.MaxItems
	if max <= 0 {
		max = 50
	}
	rep.Store, rep.Layout = st.URL(), st.Layout().String()
	rep.Problems, rep.Notes = []Problem{}, []Problem{}
	c := &checking{ctx: ctx, st: st, prog: &progress{fn: opts.Progress}, rep: &rep,
		f: &findings{rep: &rep, w: &warner{fn: opts.Warn}, max: max, url: st.URL()}}
	for _, step := range []func() error{
		c.snapshot, c.records, c.listing, c.lists, c.named, c.unnamed, c.foldedForReaders, c.lost, c.layout, c.retired,
	} {
		if err := step(); err != nil {
			return rep, fmt.Errorf("check: %w", err)
		}
	}
	return rep, nil
}

// checking is one check as it goes: what its steps read and found, each
// field set by the step named. Its steps run one after another; only
// their look-ups run in parallel, and gather into locals.
type checking struct {
	ctx  context.Context
	st   *store.Store
	prog *progress
	f    *findings
	rep  *CheckReport
	sn   *store.Snapshot // snapshot: the journal, the retired record, the pack listing
	sc   *scan           // listing: the entry prefixes, with each key's time
	// lists: the live lists (sorted, as sn.Lists is), and what each holds.
	live  []store.ListInfo
	found []listFindings
	jkeys []string // named: the journal's keys, sorted, unique
	dmg   damage   // named: what a write that failed left, and the lists' state
	// named: the listed keys a readable live list names, and where the
	// problems of the live lists start in rep.Problems.
	namedBits  keyBits
	unreadable int
}

// snapshot reads the journal, the retired record and the pack listing (so
// the live lists), and fills in what the report says of them.
func (c *checking) snapshot() error {
	sn, err := readSnapshot(c.ctx, c.st)
	if err != nil {
		return err
	}
	c.sn = sn
	c.rep.Folded = sn.Folded()
	c.rep.JournalLines, c.rep.JournalBadLines = len(sn.Journal)+sn.JournalBad.Count, sn.JournalBad.Count
	c.rep.RetiredLines, c.rep.RetiredBadLines = len(sn.Retired)+sn.RetiredBad.Count, sn.RetiredBad.Count
	c.rep.JournalUnfolded = sn.UnfoldedLines()
	return nil
}

// records reports the snapshot's lines that do not parse, the pack keys
// that are no regular file, and lists or a journal in a store read in the
// directory layout.
func (c *checking) records() error {
	sn, f := c.sn, c.f
	if sn.JournalBad.Count > 0 {
		f.add(Problem{Code: CodeJournalMalformedLine, Keys: []string{format.JournalKey}, Count: 1, Details: sn.JournalBad.Messages(),
			Message: fmt.Sprintf("journal %s has %s not parse: readers and folds skip them (the entries they meant to name are found by a fold's listing), and every rewrite keeps them", format.JournalKey, linesThatDo(sn.JournalBad.Count)),
			Fix:     f.dropMalformedFix()})
	}
	if sn.RetiredBad.Count > 0 {
		f.add(Problem{Code: CodeRetiredMalformedLine, Keys: []string{format.RetiredKey}, Count: 1, Details: sn.RetiredBad.Messages(),
			Message: fmt.Sprintf("retired record %s has %s not parse: a collection never deletes what they meant to retire, a reader does not trust a live list one names (it lists prefixes instead), and every rewrite keeps them", format.RetiredKey, linesThatDo(sn.RetiredBad.Count)),
			Fix:     f.dropMalformedFix()})
	}
	if len(sn.Irregular) > 0 {
		// sn.Irregular holds each as shown, "pack-x (symbolic link, not
		// followed)": the keys are the keys, what each is a detail.
		keys := make([]string, len(sn.Irregular))
		for i, shown := range sn.Irregular {
			keys[i] = shown
			if j := strings.LastIndex(shown, " ("); j > 0 {
				keys[i] = shown[:j]
			}
		}
		p := f.keyed(Problem{Code: CodePackKeyIrregular,
			Message: "pack keys that are not regular files (a directory, a link, a device): readers and folds skip them",
			Fix:     "move them out of the store's directory (they are no pack, list or record of a store)"}, keys)
		p.Details = sn.Irregular[:len(p.Keys)]
		f.add(p)
	}
	if c.st.Layout() == store.LayoutDirectory && (len(sn.Lists) > 0 || len(sn.Journal) > 0) {
		f.add(Problem{Code: CodeDirectoryLayout, Severity: SeverityNote,
			Message: "directory layout, yet the store holds a journal or entry lists: readers of this layout ignore them",
			Fix:     "pass --layout bucket if the store is kept in the bucket layout"})
	}
	return nil
}

// listing lists every entry prefix, with each key's modification time, and
// reports the keys under them that are not entry keys.
func (c *checking) listing() error {
	sc, err := listEntriesTimed(c.ctx, c.st, c.prog, true)
	if err != nil {
		return err
	}
	c.sc = sc
	c.rep.Entries = len(sc.keys)
	if len(sc.malformed) > 0 {
		c.f.add(c.f.keyed(Problem{Code: CodeEntryKeyMalformed,
			Message: "keys under an entry prefix that are not entry keys <kind>/<hh>/<rest>/<value> (malformed, not missing): readers and folds skip them",
			Fix:     "if no tool of yours wrote them, delete them (nothing reads them); an entry meant by one is written again under its right key with `oxyfs put`"}, sc.malformed))
	}
	return nil
}

// lists streams the live lists (checklists.go): what each holds against
// the listing, and whether it decodes.
func (c *checking) lists() error {
	c.live = c.sn.LiveLists()
	for _, l := range c.live {
		c.rep.LiveLists = append(c.rep.LiveLists, l.Name) // sorted, as sn.Lists is
	}
	found, err := checkLists(c.ctx, c.st, c.live, c.sc.keys, c.f.max)
	if err != nil {
		return fmt.Errorf("read lists: %w", err)
	}
	c.found = found
	return nil
}

// named reports what a write that failed left (checkdamage.go), and the
// keys the journal or a live list names but the listing did not show: the
// examples a report would name are looked up first (confirmMissing). It
// settles which listed keys a readable live list names.
func (c *checking) named() error {
	f, sc := c.f, c.sc
	jkeys := make([]string, len(c.sn.Journal))
	for i, l := range c.sn.Journal {
		jkeys[i] = l.Key
	}
	c.jkeys = sortedUnique(jkeys)
	dmg, err := checkDamage(c.ctx, c.st, c.sn, sc, c.jkeys, f)
	if err != nil {
		return err
	}
	dmg.listsRead(c.live, c.found)
	c.dmg = dmg
	_, missing := mergeKeys(sc.keys, c.jkeys)
	examples := slices.Clone(missing[:min(len(missing), f.max)])
	for _, fd := range c.found {
		if fd.named != nil {
			examples = append(examples, fd.missingEx...)
		}
	}
	gone, err := confirmMissing(c.ctx, c.st, sortedUnique(examples), f)
	if err != nil {
		return err
	}
	c.unreadable = len(c.rep.Problems) // where the lists' problems start
	c.namedBits = checkListFindings(f, c.live, c.found, sc.keys, c.jkeys, gone)
	if len(missing) > 0 && !slices.ContainsFunc(missing[:min(len(missing), f.max)], func(k string) bool { return !gone(k) }) {
		f.add(f.keyed(Problem{Code: CodeEntryMissingKey,
			Message: fmt.Sprintf("journal %s names keys that do not exist (live lists may name them too): readers show such an entry, and reading it fails (not found)", format.JournalKey),
			Fix:     fmt.Sprintf("%s now, then %s over an hour later: the fold marks their lines, the collection drops them past their hour, and the next complete list leaves the keys out; or write each again with `oxyfs put` if it should exist", f.foldFix(), f.cmd("gc"))}, missing))
	}
	return nil
}

// unnamed reports the per-object keys that neither a live list nor the
// journal names, as the layout and the lists' state say they are: a note
// in the directory layout or on a store not folded, a follow-on of a live
// list that does not decode, else by cause (reportUnnamed).
func (c *checking) unnamed() error {
	f, sc, rep := c.f, c.sc, c.rep
	var waiting []string
	var waitingAt []int64 // each waiting key's modification time
	forEachWaiting(sc.keys, c.namedBits, c.jkeys, func(i int) {
		if c.dmg.named(sc.keys[i]) {
			return // its line came after the snapshot
		}
		waiting = append(waiting, sc.keys[i])
		waitingAt = append(waitingAt, sc.times[i])
	})
	switch {
	case c.st.Layout() == store.LayoutDirectory:
		f.add(Problem{Code: CodeDirectoryLayout, Severity: SeverityNote, Count: 0,
			Message: fmt.Sprintf("directory layout: lookups list the per-object prefixes; %d entries", len(sc.keys))})
	case !rep.Folded:
		p := Problem{Code: CodeStoreNotFolded, Severity: SeverityNote,
			Message: "store is not folded (no live complete list): readers list the per-object prefixes; browsing it costs a LIST for every directory listed and every object looked up",
			Fix:     f.foldFix()}
		if len(waiting) > 0 {
			p.Details = []string{fmt.Sprintf("%d per-object keys are in no list or journal line yet; the first complete fold picks them up", len(waiting))}
		}
		f.add(p)
	case !c.dmg.listsWhole:
		// Follow-on: a live list that does not decode held these keys, most
		// likely. Readers list the prefixes meanwhile, so they miss none.
		rep.Unnamed = len(waiting)
		if len(waiting) > 0 && c.unreadable < len(rep.Problems) {
			p := &rep.Problems[c.unreadable]
			p.Details = append(p.Details, fmt.Sprintf("follow-on: %d per-object keys no readable live list or journal line names (%s), most likely keys the list held; readers list the entry prefixes while a live list does not decode, so they miss none of them, and the fold that replaces the list lists them", len(waiting), sample(waiting, textKeys)))
		}
	default:
		return reportUnnamed(c.ctx, c.st, c.sn, f, c.dmg, waiting, waitingAt)
	}
	return nil
}

// foldedForReaders settles rep.Folded as readers see it: they list the
// per-object prefixes while a live list does not decode, so the store is
// not folded for them (as oxyfs status says).
func (c *checking) foldedForReaders() error {
	if slices.ContainsFunc(c.found, func(fd listFindings) bool { return fd.corrupt != nil }) {
		c.rep.Folded = false
	}
	return nil
}

// lost reports what the partial lists prove lost (checkdamage.go).
func (c *checking) lost() error {
	c.dmg.reportLost(c.f)
	return nil
}

// layout notes the states of the lists, the journal and the older lists
// that a fold would change, and beside the marker reports older lists that
// hold entries no per-object key holds (checklegacy.go).
func (c *checking) layout() error {
	if err := checkLayoutNotes(c.ctx, c.st, c.sn, c.f); err != nil {
		return err
	}
	if c.sn.Marker && c.st.Layout() == store.LayoutBucket {
		return checkLegacyHidden(c.ctx, c.st, c.sc.keys, c.dmg.times.marker, c.f)
	}
	return nil
}

// retired notes the retired keys gone already or due, and forget records
// that do not parse (checkretired.go).
func (c *checking) retired() error {
	return checkRetired(c.ctx, c.st, c.sn, c.prog, c.f)
}

// reportUnnamed reports the per-object keys of a folded store whose lists
// all decode that no live list or journal line names (waiting, with their
// modification times): a gap a fold left when a retired list that still
// exists held one, a problem when time proves its line lost or its key
// missed (unnamedCause), else a note (an older writer's key, or one whose
// writer is adding its line). Each cause is one finding.
func reportUnnamed(ctx context.Context, st *store.Store, sn *store.Snapshot, f *findings, dmg damage, waiting []string, waitingAt []int64) error {
	dropped, err := heldByRetired(ctx, st, sn, waiting)
	if err != nil {
		return err
	}
	var older, gaps []string
	var retiredBy []string
	lost := map[unnamedWhy][]string{}
	for i, k := range waiting {
		if l, ok := dropped[k]; ok {
			gaps = append(gaps, k)
			retiredBy = append(retiredBy, l)
		} else if why := dmg.unnamedCause(waitingAt[i]); why != notLost {
			lost[why] = append(lost[why], k)
		} else {
			older = append(older, k)
		}
	}
	rep := f.rep
	rep.Unnamed, rep.UnnamedLost = len(waiting), len(waiting)-len(older)
	if len(gaps) > 0 {
		f.add(f.keyed(Problem{Code: CodeEntryLeftOut,
			Message: fmt.Sprintf("keys that exist, but no live list or journal line names them although a retired list (%s) held them: a fold left them out (a listing that missed them?); readers of the folded store do not show them", sample(sortedUnique(retiredBy), 3)),
			Fix:     f.foldFix() + " (its listing names them again)"}, gaps))
	}
	for _, why := range []unnamedWhy{lostListingMissed, lostJournalLines, lostJournalRewritten} {
		if keys := lost[why]; len(keys) > 0 {
			f.add(f.keyed(Problem{Code: CodeEntryUnlisted,
				Message: "keys that exist, but no live list or journal line names them: " + why.String() + "; readers of the folded store miss them",
				Fix:     f.foldFix() + " (a complete fold lists every entry prefix)"}, keys))
		}
	}
	if len(older) > 0 {
		f.add(f.keyed(Problem{Code: CodeEntryWaitingFold, Severity: SeverityNote,
			Message: "keys waiting for a fold: no live list or journal line names them (an older writer's keys, or a writer adding its line now); readers of the folded store miss them until the next complete fold",
			Fix:     f.foldFix()}, older))
	}
	return nil
}

// checkLayoutNotes notes the states of the lists, the journal and the older
// lists that the spec allows but that a fold would change, and reports older
// one-list keys beside the marker, whose entries readers never see (one
// LIST of each older prefix, a page of at most MaxItems keys, on a store
// without the marker).
func checkLayoutNotes(ctx context.Context, st *store.Store, sn *store.Snapshot, f *findings) error {
	complete, partial := 0, 0
	for _, l := range sn.LiveLists() {
		if l.Complete {
			complete++
		} else {
			partial++
		}
	}
	if complete > 1 {
		f.add(Problem{Code: CodeListsSideBySide, Severity: SeverityNote,
			Message: fmt.Sprintf("%d live complete lists (folds ran side by side): readers read them all; the next complete fold retires all but one", complete),
			Fix:     f.foldFix()})
	}
	if partial > 0 {
		f.add(Problem{Code: CodePartialListsLive, Severity: SeverityNote,
			Message: fmt.Sprintf("%d live partial lists; the next complete fold retires them", partial)})
	}
	if n := sn.UnfoldedLines(); n > format.PartialFoldThreshold {
		f.add(Problem{Code: CodeJournalOverThreshold, Severity: SeverityNote,
			Message: fmt.Sprintf("%d unfolded journal lines, more than %d: the next writer folds them into a partial list", n, format.PartialFoldThreshold)})
	}
	if st.Layout() == store.LayoutDirectory {
		return nil
	}
	if sn.Marker {
		return nil // checkLegacyHidden looks at the older lists beside it
	}
	var older []string
	for _, ll := range format.LegacyLists() {
		page, _, err := st.ListPage(ctx, ll.Prefix, "", nil, f.max)
		if err != nil {
			return fmt.Errorf("list older lists under %s: %w", ll.Prefix, err)
		}
		for _, it := range page {
			if !it.IsDir {
				older = append(older, it.Key)
			}
		}
	}
	if len(older) > 0 {
		f.add(f.keyed(Problem{Code: CodeLegacyListsUnfolded, Severity: SeverityNote,
			Message: fmt.Sprintf("no %s marker and older one-list keys present (at least %d): the first complete fold copies them into per-object entries", format.LegacyFoldedMarker, len(older)),
			Fix:     f.foldFix()}, older))
	}
	return nil
}

// confirmMissing looks up (HEAD, up to workers at once) keys a live list or
// the journal names that the listing did not show (the examples a report
// would name: a bounded number, whatever the list's size), and returns a
// function that reports those a HEAD found gone: only they are reported
// missing. Normally every one is gone. One a HEAD finds means the listing
// of the entry prefixes left it out (an empty or cut page): that is the
// problem reported, once, and the look-ups stop there, since the listing
// can no longer tell which named keys are missing; a key not looked up is
// not reported missing.
func confirmMissing(ctx context.Context, st *store.Store, keys []string, f *findings) (func(string) bool, error) {
	const (
		unchecked = iota
		isGone
		isThere
	)
	state := make([]uint8, len(keys))
	var wrong atomic.Bool
	err := forEach(ctx, len(keys), func(ctx context.Context, i int) error {
		if wrong.Load() {
			return nil
		}
		ok, err := st.Exists(ctx, keys[i])
		if err != nil {
			return fmt.Errorf("look up %s, which the listing did not show: %w", keys[i], err)
		}
		if ok {
			state[i] = isThere
			wrong.Store(true)
		} else {
			state[i] = isGone
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var there []string
	left := 0
	for i, k := range keys {
		switch state[i] {
		case isThere:
			there = append(there, k)
		case unchecked:
			left++
		}
	}
	if len(there) > 0 {
		f.add(f.keyed(Problem{Code: CodeListingIncomplete,
			Message: fmt.Sprintf("the listing of the entry prefixes did not show keys a HEAD found: the server's listing is wrong (an empty or cut page?); keys a list or the journal names are reported missing only once a HEAD found them gone (%d not looked up); fold and gc refuse while the listing leaves out keys that exist", left),
			Fix:     "run " + f.cmd("check") + " again; if it persists, the server's LIST is wrong: have it fixed before running fold or gc"}, there))
	}
	gone := make(map[string]bool, len(keys))
	for i, k := range keys {
		if state[i] == isGone {
			gone[k] = true
		}
	}
	return func(k string) bool { return gone[k] }, nil
}
