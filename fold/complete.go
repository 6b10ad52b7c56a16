package fold

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/oxyfs/oxyfs/store"
)

// Options configure Complete.
type Options struct {
	// DryRun reports what the fold would write, retire and mark, and writes
	// nothing (no older entry, marker, list, retired line or mark).
	DryRun bool
	// Progress, if set, is called as work gets done: done out of total
	// (total 0: not known yet) in a phase, one of "legacy", "list",
	// "write", "retire", "mark". Calls never overlap.
	Progress func(done, total int64, phase string)
	// Warn, if set, is told of everything skipped or odd: malformed keys and
	// lines, journal keys with no object, a corrupt list repaired, a fold
	// deferred. Calls never overlap.
	Warn func(string)
}

// ListReport describes the complete list a fold settled on.
type ListReport struct {
	Name      string `json:"name"`
	Entries   int    `json:"entries"`
	Bytes     int    `json:"bytes"`     // compressed
	Written   bool   `json:"written"`   // this fold wrote it
	Unchanged bool   `json:"unchanged"` // it was live already: nothing written
	Existed   bool   `json:"existed"`   // a fold beside this one wrote it first
	Repaired  bool   `json:"repaired"`  // it was live but corrupt, and was rewritten
	Revived   bool   `json:"revived"`   // it was retired within the hour, and is live again (revive.go)
}

// Report says what a complete fold did (or, in a dry run, would do).
type Report struct {
	DryRun          bool           `json:"dry_run"`
	WasFolded       bool           `json:"was_folded"`       // a complete list was live before
	JournalLines    int            `json:"journal_lines"`    // lines read (folded ones included)
	JournalUnfolded int            `json:"journal_unfolded"` // of which unfolded
	JournalBad      []string       `json:"journal_bad"`      // journal lines that do not parse (kept, not folded)
	RetiredBad      []string       `json:"retired_bad"`      // retired record lines that do not parse (kept)
	Listed          map[string]int `json:"listed"`           // entry keys listed, per kind
	Malformed       []string       `json:"malformed"`        // listed keys that are not entry keys (left out)
	JournalOnly     []string       `json:"journal_only"`     // journal keys the listing did not show (kept in)
	Legacy          LegacyReport   `json:"legacy"`
	List            ListReport     `json:"list"`
	Retired         []string       `json:"retired"`            // lists retired (or that would be)
	Marked          int            `json:"marked"`             // journal lines marked folded (or that would be)
	Dropped         int            `json:"dropped"`            // folded lines past their hour the marking update dropped
	LeftOut         int            `json:"left_out"`           // entries of the live lists the new set leaves out (their keys are gone)
	Deferred        string         `json:"deferred,omitempty"` // the set's list is retired: see revive.go
	Unfolded        bool           `json:"unfolded,omitempty"` // deferred, and the lists read were retired: the store is not folded
	Requests        store.Counts   `json:"requests"`           // sent through st during the fold (by anyone)
	CASTries        int            `json:"cas_tries"`
}

// Complete folds the store completely (spec §13.7 "Folding"), in this order:
//
//  1. One snapshot: the journal (lines and version) and the pack listing, so
//     the live lists. The journal is read before any entry prefix is listed.
//  2. Without the marker pack-legacy-folded: copy every older one-list key
//     into per-object entries, create-only, then write the marker (foldLegacy).
//  3. List every entry prefix. Malformed keys are reported and left out.
//  4. The new complete set is the journal's keys (folded lines included)
//     together with the listed keys. A journal key the listing did not show
//     is looked up (HEAD): if it exists, the listing was wrong (a cut or
//     empty page) and the fold stops with ErrIncompleteListing, having
//     written nothing; if not, it is kept (the journal is what a writer
//     claimed) and reported in JournalOnly. It drops out by itself once its
//     line is folded and past its hour. Then every live list is read,
//     and each entry it holds that the set leaves out is looked up (HEAD): if its key exists, the listing was wrong and
//     the fold stops with ErrIncompleteListing, having written nothing
//     (leftOut). A collection's forgotten keys are not looked up.
//  5. If a live complete list holds exactly that set, nothing is written
//     (its content is checked, and a corrupt one rewritten). Otherwise the
//     list pack-<id>.entries is written create-only.
//  6. Every other live list the snapshot showed is retired in one
//     compare-and-swap update of pack-retired; never the list of step 5.
//  7. The journal lines read in step 1 are marked folded at now, in one
//     compare-and-swap update; lines added meanwhile stay unfolded, lines
//     folded already keep their time (markRead).
//
// A crash or error between any two steps leaves every entry findable: the
// list is written before anything is retired, and retired before lines are
// marked. See the package documentation.
//
// Should the set's list name be one the retired record holds (the same set
// was folded before, and retired since), a list retired within reviveWindow
// is revived in step 6 (its retired line dropped in the same update that
// retires the others); one retired longer ago is left alone (Deferred), and
// if the lists read hold entries whose keys are gone they are retired all
// the same, leaving the store not folded (Unfolded). See revive.go.
func Complete(ctx context.Context, st *store.Store, opts Options) (Report, error) {
	return complete(ctx, st, opts, nil)
}

// hooks let a collection and tests act between the steps of a fold.
type hooks struct {
	afterScan func() // after step 4, before the list is written
	// A collection's dry run plans its fold on what the collection would
	// leave: plan drops from the snapshot the journal lines and retired
	// keys it would drop. drop names the entry keys a collection deletes
	// after its fold (forgotten objects'): left out of the listing and of
	// the older lists' copies.
	plan func(sn *store.Snapshot)
	drop func(key string) bool
	// gone reports the entry keys a collection deleted (or would delete),
	// which leftOut need not look up.
	gone func(key string) bool
}

func complete(ctx context.Context, st *store.Store, opts Options, h *hooks) (rep Report, err error) {
	start := st.Counts()
	rep.DryRun = opts.DryRun
	defer func() { rep.Requests = st.Counts().Sub(start) }()
	w := &warner{fn: opts.Warn}
	prog := &progress{fn: opts.Progress}
	if err := checkLayout(st); err != nil {
		return rep, fmt.Errorf("fold: %w", err)
	}
	if st.ReadOnly() && !opts.DryRun {
		return rep, fmt.Errorf("fold: %w", store.ErrReadOnly)
	}
	if err := checkClock(ctx, st, "fold", opts.DryRun); err != nil {
		return rep, err
	}

	// 1. The journal and the live lists.
	sn, err := readSnapshot(ctx, st)
	if err != nil {
		return rep, fmt.Errorf("fold: %w", err)
	}
	rep.WasFolded = sn.Folded()
	var gone, drop func(string) bool
	if h != nil {
		gone, drop = h.gone, h.drop
	}
	if h != nil && h.plan != nil {
		h.plan(sn)
	}
	read := sn.Journal
	rep.JournalLines, rep.JournalUnfolded = len(read), sn.UnfoldedLines()
	rep.JournalBad, rep.RetiredBad = sn.JournalBad.Messages(), sn.RetiredBad.Messages()
	for _, b := range rep.JournalBad {
		w.warn("journal %s: %s (kept as is, not folded)", store.JournalKey, b)
	}
	for _, b := range rep.RetiredBad {
		w.warn("retired record %s: %s (kept as is)", store.RetiredKey, b)
	}
	for _, k := range sn.Irregular {
		w.warn("pack key %s: not a regular file (left alone)", k)
	}

	// 2. The older one-list keys.
	var planned []string
	if sn.Marker {
		rep.Legacy.Skipped = true
	} else if planned, err = foldLegacy(ctx, st, opts.DryRun, drop, &rep.Legacy, w, prog); err != nil {
		return rep, fmt.Errorf("fold: %w", err)
	}

	// 3. Every entry prefix.
	sc, err := listEntries(ctx, st, prog)
	if err != nil {
		return rep, fmt.Errorf("fold: %w", err)
	}
	rep.Listed, rep.Malformed = sc.listedReport(), sc.malformed
	for _, k := range sc.malformed {
		w.warn("malformed entry key %q: left out of the list", k)
	}
	listed := sc.keys
	if drop != nil {
		listed = slices.DeleteFunc(slices.Clone(listed), drop)
	}
	if opts.DryRun && len(planned) > 0 {
		var copies []string
		listed, copies = mergeKeys(listed, planned)
		rep.Legacy.Copied, rep.Legacy.Kept = len(copies), len(planned)-len(copies)
	}

	// 4. The new complete set.
	jkeys := make([]string, len(read))
	for i, l := range read {
		jkeys[i] = l.Key
	}
	set, journalOnly := mergeKeys(listed, sortedUnique(jkeys))
	rep.JournalOnly = journalOnly
	// 4a. A journal key the listing did not show is looked up: one that
	// exists means the listing was cut (a first fold has no live list for
	// leftOut to read, and would otherwise trust the cut page).
	if err := journalOnlyGone(ctx, st, journalOnly, gone); err != nil {
		return rep, fmt.Errorf("fold: %w", err)
	}
	for _, k := range journalOnly {
		w.warn("journal names %s, which the listing did not show and a HEAD did not find: kept in the list", k)
	}
	if h != nil && h.afterScan != nil {
		h.afterScan()
	}

	// 5. The list.
	id, data, err := store.EncodeEntryListSorted(set)
	if err != nil {
		return rep, fmt.Errorf("fold: %w", err)
	}
	name := store.EntryListName(id, true)
	rep.List = ListReport{Name: name, Entries: len(set), Bytes: len(data)}
	oursLive, oursRetired := false, false
	for _, l := range sn.Lists {
		if l.Name == name {
			oursLive, oursRetired = !l.Retired, l.Retired
		}
	}
	var others []string
	for _, l := range sn.LiveLists() {
		if l.Name != name {
			others = append(others, l.Name)
		}
	}

	// 4b. Nothing a live list holds leaves while its key exists.
	if rep.LeftOut, err = leftOut(ctx, st, sn, name, set, gone, w); err != nil {
		return rep, fmt.Errorf("fold: %w", err)
	}

	reviving := false
	if oursRetired {
		at, _ := retiredAt(sn, name)
		if !revivable(at, st.Clock().NowMs()) {
			return tooLate(ctx, st, rep, others, opts.DryRun, w)
		}
		reviving, rep.List.Revived = true, true
	}
	rep.Retired, rep.Marked = others, rep.JournalUnfolded
	rep.List.Unchanged = oursLive
	if opts.DryRun {
		if rep.JournalUnfolded > 0 {
			rep.Dropped = countExpired(read, st.Clock().NowMs())
		}
		return rep, nil
	}
	rep.Marked = 0
	prog.report(0, 1, "write")
	if reviving {
		tries, err := revive(ctx, st, name, data, others, &rep, w)
		rep.CASTries += tries
		if errors.Is(err, errReviveTooLate) {
			rep.List.Revived = false
			return tooLate(ctx, st, rep, others, false, w)
		}
		if err != nil {
			rep.Retired = nil
			return rep, fmt.Errorf("fold: %w", err)
		}
		others = nil // retired by revive
	}
	if oursLive {
		err := checkLive(ctx, st, name, data, &rep, w)
		if errors.Is(err, store.ErrNotFound) {
			// Deleted since the snapshot: not live after all; write it.
			oursLive, rep.List.Unchanged = false, false
		} else if err != nil {
			return rep, fmt.Errorf("fold: %w", err)
		}
	}
	if !oursLive && !reviving {
		existed, err := ensureList(ctx, st, name, data)
		if errors.Is(err, errListRetired) {
			return deferred(rep, w), nil
		}
		if err != nil {
			return rep, fmt.Errorf("fold: %w", err)
		}
		rep.List.Written, rep.List.Existed = !existed, existed
	}
	prog.report(1, 1, "write")

	// 6. Retire what it read.
	if len(others) > 0 {
		prog.report(0, int64(len(others)), "retire")
		tries, err := retire(ctx, st, others, name)
		rep.CASTries += tries
		if errors.Is(err, errListRetired) {
			return deferred(rep, w), nil
		}
		if err != nil {
			rep.Retired = nil
			return rep, fmt.Errorf("fold: %w", err)
		}
		prog.report(int64(len(others)), int64(len(others)), "retire")
	}

	// 7. Mark the lines it read.
	if rep.JournalUnfolded == 0 {
		return rep, nil
	}
	prog.report(0, int64(rep.JournalUnfolded), "mark")
	marked, dropped, tries, err := markJournal(ctx, st, read)
	rep.CASTries += tries
	if err != nil {
		return rep, fmt.Errorf("fold: %w", err)
	}
	rep.Marked, rep.Dropped = marked, dropped
	prog.report(int64(rep.JournalUnfolded), int64(rep.JournalUnfolded), "mark")
	return rep, nil
}

// tooLate ends a fold whose list was retired longer than reviveWindow ago
// (see revive.go): it defers, and if the lists it read hold entries whose
// keys are gone (rep.LeftOut), it retires them all the same, leaving the
// store not folded, so that no reader shows those entries.
func tooLate(ctx context.Context, st *store.Store, rep Report, others []string, dry bool, w *warner) (Report, error) {
	rep = deferred(rep, w)
	if rep.LeftOut == 0 || len(others) == 0 {
		return rep, nil
	}
	rep.Retired, rep.Unfolded = others, true
	w.warn("the lists read hold %d entries whose keys are gone: retiring them leaves the store not folded "+
		"(readers list the per-object prefixes) until a fold after the next collection", rep.LeftOut)
	if dry {
		return rep, nil
	}
	tries, err := retire(ctx, st, others, "")
	rep.CASTries += tries
	if err != nil {
		rep.Retired, rep.Unfolded = nil, false
		return rep, fmt.Errorf("fold: %w", err)
	}
	return rep, nil
}

// countExpired counts the folded lines past their hour at now, which the
// journal update that marks lines drops.
func countExpired(lines []store.JournalLine, now int64) int {
	n := 0
	for _, l := range lines {
		if l.Expired(now) {
			n++
		}
	}
	return n
}

// deferred ends a fold whose list name is retired: nothing retired, nothing
// marked.
func deferred(rep Report, w *warner) Report {
	rep.Retired, rep.Marked, rep.Dropped = nil, 0, 0
	rep.Deferred = fmt.Sprintf("%s holds the same entries as a list retired earlier; "+
		"it is left alone until a collection has deleted that list (an hour after it was retired), "+
		"so nothing was retired or marked", rep.List.Name)
	w.warn("fold deferred: %s", rep.Deferred)
	return rep
}

// checkLive reads the live list a fold found already holding its set, and
// rewrites it if its content does not match its name. A list is named by its
// content, so the rewrite puts back the very bytes every reader expects.
func checkLive(ctx context.Context, st *store.Store, name string, data []byte, rep *Report, w *warner) error {
	got, err := st.Get(ctx, name)
	if err != nil {
		return fmt.Errorf("read live list %s: %w", name, err)
	}
	if verr := store.VerifyEntryList(name, got); verr != nil {
		w.warn("live list %s is corrupt (%v): rewriting it", name, verr)
		if err := st.Put(ctx, name, data); err != nil {
			return fmt.Errorf("repair list %s: %w", name, err)
		}
		rep.List.Repaired = true
	}
	return nil
}
