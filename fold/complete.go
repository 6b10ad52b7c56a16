package fold

import (
	"context"
	"errors"
	"fmt"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"slices"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
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
	// DropMalformed first removes the journal's and the retired record's
	// lines that do not parse (oxyfs fold --drop-malformed FILE), giving
	// them to SaveDropped before each compare-and-swap write (dropbad.go);
	// with DryRun it only reports them.
	DropMalformed bool
	SaveDropped   SaveLines
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
	// EmptySignatures are the signature keys listed 0 bytes long: a write
	// that failed left them (a signature is never empty). They exist, so
	// the list holds them; they are reported, as check does (sig-empty).
	EmptySignatures []string     `json:"empty_signatures"`
	JournalOnly     []string     `json:"journal_only"` // journal keys the listing did not show (kept in)
	Legacy          LegacyReport `json:"legacy"`
	List            ListReport   `json:"list"`
	Retired         []string     `json:"retired"`  // lists retired (or that would be)
	Marked          int          `json:"marked"`   // journal lines marked folded (or that would be)
	Dropped         int          `json:"dropped"`  // folded lines past their hour the marking update dropped
	LeftOut         int          `json:"left_out"` // entries of the live lists the new set leaves out (their keys are gone)
	// ListMalformed are the keys the live lists hold that are not entry
	// keys: malformed (not gone), never looked up, left out.
	ListMalformed []string     `json:"list_malformed"`
	Deferred      string       `json:"deferred,omitempty"` // the set's list is retired: see revive.go
	Unfolded      bool         `json:"unfolded,omitempty"` // deferred, and the lists read were retired: the store is not folded
	Requests      store.Counts `json:"requests"`           // sent through st during the fold (by anyone)
	CASTries      int          `json:"cas_tries"`
	// DroppedMalformed is what Options.DropMalformed removed (nil without it).
	DroppedMalformed *DroppedLines `json:"dropped_malformed,omitempty"`
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
//     line is folded and past its hour. Then every live list is read, and
//     each entry it holds that the set leaves out is looked up (HEAD): if
//     its key exists, the listing was wrong and the fold stops with
//     ErrIncompleteListing, having written nothing (leftOut). A
//     collection's forgotten keys are not looked up.
//  5. If a live complete list holds exactly that set, nothing is written
//     (its content is checked, and a corrupt one rewritten). Otherwise the
//     list pack-<id>.entries is written create-only.
//  6. Every other live list the snapshot showed is retired in one
//     compare-and-swap update of pack-retired; never the list of step 5.
//  7. The journal lines read in step 1 are marked folded at now, in one
//     compare-and-swap update; lines added meanwhile stay unfolded, lines
//     folded already keep their time (journal.Mark).
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
	afterScan func() // after the journal keys are looked up (step 4), before the live lists are read
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

// folding is one complete fold as it goes: what its steps read and what
// they settled on, each field set by the step named.
type folding struct {
	*run
	h       hooks   // zero for Complete
	rep     *Report // filled in as the steps go
	sn      *store.Snapshot
	planned []string // 2: in a dry run, the older entries a fold would copy
	listed  []string // 3: the entry keys listed, less h.drop's
	set     []string // 4: the new complete set, sorted
	name    string   // 4: its list's name
	data    []byte   // 4: its list's bytes
	others  []string // 4: the live lists but name, retired in step 6
	// 4: whether the snapshot showed name live or retired.
	oursLive, oursRetired bool
}

func complete(ctx context.Context, st *store.Store, opts Options, h *hooks) (Report, error) {
	rep := Report{DryRun: opts.DryRun}
	r, err := begin(ctx, st, opts.DryRun, opts.Warn, opts.Progress)
	if err == nil && opts.DropMalformed {
		var d DroppedLines
		d, err = dropMalformed(ctx, st, opts.DryRun, opts.SaveDropped, r.w)
		rep.DroppedMalformed = &d
		rep.CASTries += d.CASTries
	}
	if err == nil {
		f := &folding{run: r, rep: &rep}
		if h != nil {
			f.h = *h
		}
		err = f.steps()
	}
	rep.Requests = r.requests()
	if err != nil {
		return rep, fmt.Errorf("fold: %w", err)
	}
	return rep, nil
}

// steps runs Complete's steps in order, until one fails or ends the fold
// (deferred, a dry run, nothing to mark).
func (f *folding) steps() error {
	for _, step := range []func() (done bool, err error){
		f.snapshot, f.legacy, f.listing, f.newSet, f.writeList, f.retireRead, f.markRead,
	} {
		if done, err := step(); done || err != nil {
			return err
		}
	}
	return nil
}

// snapshot is step 1: the journal and the live lists.
func (f *folding) snapshot() (bool, error) {
	sn, err := readSnapshot(f.ctx, f.st)
	if err != nil {
		return false, err
	}
	f.sn, f.rep.WasFolded = sn, sn.Folded()
	if f.h.plan != nil {
		f.h.plan(sn)
	}
	rep := f.rep
	rep.JournalLines, rep.JournalUnfolded = len(sn.Journal), sn.UnfoldedLines()
	rep.JournalBad, rep.RetiredBad = sn.JournalBad.Messages(), sn.RetiredBad.Messages()
	if f.dry && rep.DroppedMalformed != nil {
		// The real run moves them out first: they are said "to move out".
		rep.JournalBad, rep.RetiredBad = nil, nil
	}
	for _, b := range rep.JournalBad {
		f.w.warn("journal %s: %s (kept as is, not folded)", format.JournalKey, b)
	}
	for _, b := range rep.RetiredBad {
		f.w.warn("retired record %s: %s (kept as is)", format.RetiredKey, b)
	}
	for _, k := range sn.Irregular {
		f.w.warn("pack key %s: not a regular file (left alone)", k)
	}
	return false, nil
}

// legacy is step 2: the older one-list keys, unless the marker is there.
func (f *folding) legacy() (bool, error) {
	if f.sn.Marker {
		f.rep.Legacy.Skipped = true
		return false, nil
	}
	var err error
	f.planned, err = foldLegacy(f.ctx, f.st, f.dry, f.h.drop, &f.rep.Legacy, f.w, f.prog)
	return false, err
}

// listing is step 3: every entry prefix.
func (f *folding) listing() (bool, error) {
	sc, err := listEntries(f.ctx, f.st, f.prog)
	if err != nil {
		return false, err
	}
	f.rep.Listed, f.rep.Malformed = sc.listedReport(), sc.malformed
	for _, k := range sc.malformed {
		f.w.warn("malformed entry key %s: left out of the list", termsafe.DoubleQuote(k))
	}
	f.rep.EmptySignatures = sc.emptySigs
	for _, k := range sc.emptySigs {
		f.w.warn("signature key %s is 0 bytes (a write that failed?): listed as it is; readers get an empty signature until it is signed again (oxyfs put --force)", k)
	}
	f.listed = sc.keys
	if f.h.drop != nil {
		f.listed = slices.DeleteFunc(slices.Clone(f.listed), f.h.drop)
	}
	if f.dry && len(f.planned) > 0 {
		var copies []string
		f.listed, copies = mergeKeys(f.listed, f.planned)
		f.rep.Legacy.Copied, f.rep.Legacy.Kept = len(copies), len(f.planned)-len(copies)
	}
	return false, nil
}

// newSet is step 4: the new complete set and its list, and the guards that
// nothing leaves it while its key exists.
func (f *folding) newSet() (bool, error) {
	jkeys := make([]string, len(f.sn.Journal))
	for i, l := range f.sn.Journal {
		jkeys[i] = l.Key
	}
	set, journalOnly := mergeKeys(f.listed, sortedUnique(jkeys))
	f.rep.JournalOnly = journalOnly
	// A journal key the listing did not show is looked up: one that exists
	// means the listing was cut (a first fold has no live list for leftOut
	// to read, and would otherwise trust the cut page).
	if err := journalOnlyGone(f.ctx, f.st, journalOnly, f.h.gone); err != nil {
		return false, err
	}
	for _, k := range journalOnly {
		f.w.warn("journal names %s, which the listing did not show and a HEAD did not find: kept in the list", k)
	}
	if f.h.afterScan != nil {
		f.h.afterScan()
	}

	id, data, err := format.EncodeEntryListSorted(set)
	if err != nil {
		return false, err
	}
	f.set, f.data, f.name = set, data, format.EntryListName(id, true)
	f.rep.List = ListReport{Name: f.name, Entries: len(set), Bytes: len(data)}
	for _, l := range f.sn.Lists {
		if l.Name == f.name {
			f.oursLive, f.oursRetired = !l.Retired, l.Retired
		}
	}
	for _, l := range f.sn.LiveLists() {
		if l.Name != f.name {
			f.others = append(f.others, l.Name)
		}
	}

	// Nothing a live list holds leaves while its key exists.
	f.rep.LeftOut, f.rep.ListMalformed, err = leftOut(f.ctx, f.st, f.sn, f.name, set, f.h.gone, f.w)
	return false, err
}

// writeList is step 5: the list written, found live already (and checked),
// or revived; a dry run ends here, and so does a fold whose list is retired
// past reviving (tooLate) or retired since the snapshot (deferred).
func (f *folding) writeList() (bool, error) {
	rep := f.rep
	reviving := false
	if f.oursRetired {
		at, _ := retiredAt(f.sn, f.name)
		if !revivable(at, f.st.Clock().NowMs()) {
			return true, f.tooLate(f.dry)
		}
		reviving, rep.List.Revived = true, true
	}
	rep.Retired, rep.Marked = f.others, rep.JournalUnfolded
	rep.List.Unchanged = f.oursLive
	if f.dry {
		if rep.JournalUnfolded > 0 {
			rep.Dropped = countExpired(f.sn.Journal, f.st.Clock().NowMs())
		}
		return true, nil
	}
	rep.Marked = 0
	f.prog.report(0, 1, "write")
	if reviving {
		tries, err := revive(f.ctx, f.st, f.name, f.data, f.others, rep, f.w)
		rep.CASTries += tries
		if errors.Is(err, errReviveTooLate) {
			rep.List.Revived = false
			return true, f.tooLate(false)
		}
		if err != nil {
			rep.Retired = nil
			return true, err
		}
		f.others = nil // retired by revive
	}
	live := f.oursLive
	if live {
		err := checkLive(f.ctx, f.st, f.name, f.data, rep, f.w)
		if errors.Is(err, store.ErrNotFound) {
			// Deleted since the snapshot: not live after all; write it.
			live, rep.List.Unchanged = false, false
		} else if err != nil {
			return true, err
		}
	}
	if !live && !reviving {
		existed, err := journal.EnsureList(f.ctx, f.st, f.name, f.data)
		if errors.Is(err, journal.ErrListRetired) {
			f.deferred()
			return true, nil
		}
		if err != nil {
			return true, err
		}
		rep.List.Written, rep.List.Existed = !existed, existed
	}
	f.prog.report(1, 1, "write")
	return false, nil
}

// retireRead is step 6: every other live list the snapshot showed retired.
func (f *folding) retireRead() (bool, error) {
	if len(f.others) == 0 {
		return false, nil
	}
	rep := f.rep
	f.prog.report(0, int64(len(f.others)), "retire")
	tries, err := retire(f.ctx, f.st, f.others, f.name, 0)
	rep.CASTries += tries
	if errors.Is(err, journal.ErrListRetired) {
		f.deferred()
		return true, nil
	}
	if err != nil {
		rep.Retired = nil
		return true, err
	}
	f.prog.report(int64(len(f.others)), int64(len(f.others)), "retire")
	return false, nil
}

// markRead is step 7: the journal lines read in step 1 marked folded.
func (f *folding) markRead() (bool, error) {
	rep := f.rep
	if rep.JournalUnfolded == 0 {
		return true, nil
	}
	f.prog.report(0, int64(rep.JournalUnfolded), "mark")
	marked, dropped, tries, err := journal.Mark(f.ctx, f.st, f.sn.Journal)
	rep.CASTries += tries
	if err != nil {
		return true, err
	}
	rep.Marked, rep.Dropped = marked, dropped
	f.prog.report(int64(rep.JournalUnfolded), int64(rep.JournalUnfolded), "mark")
	return true, nil
}

// tooLate ends a fold whose list was retired longer than reviveWindow ago
// (see revive.go): it defers, and if the lists it read hold entries whose
// keys are gone (rep.LeftOut), it retires them all the same, leaving the
// store not folded, so that no reader shows those entries.
func (f *folding) tooLate(dry bool) error {
	f.deferred()
	rep := f.rep
	if rep.LeftOut == 0 || len(f.others) == 0 {
		return nil
	}
	rep.Retired, rep.Unfolded = f.others, true
	f.w.warn("the lists read hold %d entries whose keys are gone: retiring them leaves the store not folded "+
		"(readers list the per-object prefixes) until a fold after the next collection", rep.LeftOut)
	if dry {
		return nil
	}
	// After every line the lists read were folded with: the cross-check
	// of a collection in the same millisecond then sees this retirement
	// as the later step it is, not a list the pack listing hid.
	tries, err := retire(f.ctx, f.st, f.others, "", newestFolded(f.sn.Journal))
	rep.CASTries += tries
	if err != nil {
		rep.Retired, rep.Unfolded = nil, false
		return err
	}
	return nil
}

// newestFolded is the newest folded-at of lines (0: none folded).
func newestFolded(lines []format.JournalLine) int64 {
	var at int64
	for _, l := range lines {
		at = max(at, l.FoldedAt)
	}
	return at
}

// countExpired counts the folded lines past their hour at now, which the
// journal update that marks lines drops.
func countExpired(lines []format.JournalLine, now int64) int {
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
func (f *folding) deferred() {
	rep := f.rep
	rep.Retired, rep.Marked, rep.Dropped = nil, 0, 0
	rep.Deferred = fmt.Sprintf("%s holds the same entries as a list retired earlier; "+
		"it is left alone until a collection has deleted that list (an hour after it was retired), "+
		"so nothing was retired or marked", rep.List.Name)
	f.w.warn("fold deferred: %s", rep.Deferred)
}

// checkLive reads the live list a fold found already holding its set, and
// rewrites it if its content does not match its name. A list is named by its
// content, so the rewrite puts back the very bytes every reader expects.
func checkLive(ctx context.Context, st *store.Store, name string, data []byte, rep *Report, w *warner) error {
	got, err := st.Get(ctx, name)
	if err != nil {
		return fmt.Errorf("read live list %s: %w", name, err)
	}
	if verr := format.VerifyEntryList(name, got); verr != nil {
		w.warn("live list %s is corrupt (%v): rewriting it", name, verr)
		if err := st.Put(ctx, name, data); err != nil {
			return fmt.Errorf("repair list %s: %w", name, err)
		}
		rep.List.Repaired = true
	}
	return nil
}
