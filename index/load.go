package index

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// listFetchParallel bounds the live lists fetched at once (within
// listBytesInFlight: listload.go).
const listFetchParallel = 8

// buildView is the build step (refresh.go): the view the records read
// show (spec §13.7 "Reading"): for a bucket, when the store is folded, one
// GET per live list prev does not hold; for a directory only the marker's
// answer. A run whose records were unchanged and trusted keeps prev. It
// then sets when the records were read, and the look's time for the trust
// window.
func (ix *Index) buildView(r *refreshRun) error {
	v, err := ix.viewOf(r)
	if err != nil {
		return err
	}
	r.v, r.read = v, readTicks{begun: r.begun, done: ix.chain.now()}
	if v != r.prev {
		v.read = r.read
	}
	// The view published next shows the records as read at start, or
	// (v == prev) they were found unchanged then: the trust window's look.
	ix.lookedAt.Store(r.looked())
	if v != r.prev {
		v.openReq = ix.st.Counts().Sub(r.before)
	}
	return nil
}

// viewOf builds the view of r's records. A live list found gone (a
// collection deleted it after the pack listing) makes it read the
// snapshot once more.
func (ix *Index) viewOf(r *refreshRun) (*view, error) {
	ctx, prev, sn := r.ctx, r.prev, r.sn
	if ix.st.Layout() == store.LayoutDirectory {
		v := &view{mode: ModeDirectory, legacy: !r.marker, base: emptySet, journal: noJournal}
		v.pc = newPrefixCache(ix, v.legacy)
		return v, nil
	}
	if sn == nil {
		return prev, nil
	}
	ix.retireCached(sn)
	reread := false
	for {
		v := snapshotView(sn, prev, ix.keepJournal)
		if !sn.Folded() {
			return ix.prefixView(v, sn, prev), nil
		}
		if u := uncertainLists(sn); u != "" {
			// Fail closed: which lists are live is not known, so none is
			// trusted; the per-object keys are (spec §13.7 "Reading").
			ix.warnOnce("retired-uncertain:"+u, u)
			return ix.prefixView(v, sn, prev), nil
		}
		base, jv, mals, err := ix.foldedBase(ctx, sn, prev)
		var nf *listGoneError
		switch {
		case err == nil:
			v.mode, v.base, v.journal = ModeFolded, base, jv
			ix.reportMalformed(v, sn, mals)
			return v, nil
		case ctx.Err() != nil:
			return nil, fmt.Errorf("open index: %w", ctx.Err())
		case errors.Is(err, store.ErrUnavailable):
			// The store did not answer: that says nothing about the list.
			// Fail this open (a refresh keeps serving its previous view)
			// rather than fall back to LISTs against a store that is down.
			return nil, fmt.Errorf("open index: %w", err)
		case errors.As(err, &nf) && !reread:
			// A collection deleted a list between our LIST and GET: the
			// store has moved on, so read its layout once more.
			reread = true
			if sn, err = ix.st.ReadSnapshot(ctx); err != nil {
				return nil, fmt.Errorf("open index: %w", err)
			}
			continue
		default:
			ix.warnOnce("list:"+err.Error(), fmt.Sprintf("%v; falling back to prefix listing for this open (lookups will send LIST requests)", err))
			return ix.prefixView(v, sn, prev), nil
		}
	}
}

// retireCached removes the list cache's copies of the lists sn shows
// retired: a retired list is not read again (listcache.go).
func (ix *Index) retireCached(sn *store.Snapshot) {
	if ix.lcache == nil {
		return
	}
	var names []string
	for _, l := range sn.Lists {
		if l.Retired {
			names = append(names, l.Name)
		}
	}
	ix.lcache.retire(ix.lcacheStore, names)
}

// snapshotView fills what every bucket view reports from a snapshot. It
// keeps the journal's text for JournalText when it is at most
// keep long (an unchanged journal: when prev kept it).
func snapshotView(sn *store.Snapshot, prev *view, keep int) *view {
	v := &view{rec: records(sn), modTime: sn.ModTime}
	if sameJournal(sn, prev) {
		v.journalText = prev.journalText
	} else {
		v.journalText = len(sn.JournalText) <= keep
	}
	if !v.journalText {
		v.rec.JournalText = ""
	}
	for _, l := range sn.Lists {
		if l.Retired {
			v.retired = append(v.retired, l)
		} else {
			v.live = append(v.live, l)
			v.listNames = append(v.listNames, l.Name)
		}
	}
	return v
}

// prefixView is the view of a bucket that is not folded (or whose lists
// could not be read): lookups list per-object prefixes and read the older
// lists until the marker (spec §13.7 "Reading": "a lookup lists the
// per-object prefix as before"). The journal's lines are not entries here:
// every journaled key was written before its line, so a listing shows it,
// and a line whose key is gone (a collection forgot the object) would show
// an entry whose bytes cannot be read. The journal's entries get a set of
// their own, for the next refresh (journalmarks.go).
func (ix *Index) prefixView(v *view, sn *store.Snapshot, prev *view) *view {
	v.mode, v.legacy = ModePrefixListing, !sn.Marker
	v.base = emptySet
	if sameJournal(sn, prev) && prev.journal.own {
		v.journal = prev.journal
	} else {
		b := newBuilder()
		v.journal = ownJournal(b, journalOf(b, sn, prev), sn.JournalVersion)
	}
	ix.reportMalformed(v, sn, nil)
	v.pc = newPrefixCache(ix, v.legacy)
	return v
}

// sameJournal reports whether sn's journal is prev's: unchanged, so
// store.ReadSnapshotSince handed back prev's records, which hold no lines.
func sameJournal(sn *store.Snapshot, prev *view) bool {
	return prev != nil && prev.rec != nil && sn.Journal == nil && sn.JournalVersion == prev.journal.version
}

// journalOf returns the journal's entries as sn has them, in b's value
// table: from its lines, or, when it is prev's, from prev's marks.
func journalOf(b *builder, sn *store.Snapshot, prev *view) *jents {
	if sameJournal(sn, prev) {
		return b.journalFrom(prev.journal)
	}
	return b.journalEntries(sn.Journal)
}

// listGoneError is a live list whose GET found nothing.
type listGoneError struct{ name string }

func (e *listGoneError) Error() string {
	return fmt.Sprintf("read entry list %q: gone (deleted after the pack listing)", e.name)
}

// foldedBase builds the set of a folded store: every live list ∪ every
// journal line, folded lines included. Nothing else is read. It returns
// the set and the view's journal (its marks on the set).
//
// On a refresh (prev folded) it reads only what prev does not hold. Lists
// are written once and named by their content, so a name prev read is the
// same entries. When the live names are prev's, no list is read and only
// the journal's part of the set is recomputed: new lines added, and entries
// whose only line left the journal dropped (withJournal). When they are
// prev's plus partial lists (a writer folded its journal lines), only those
// are read and merged in, and the journal's part recomputed likewise.
// Otherwise (a list prev held was retired: a complete fold, a collection)
// the set is built afresh from the live lists; after a complete fold the
// only live list is the one it wrote, which prev did not hold either. A
// journal unchanged since prev has no lines in sn: its entries come from
// prev's marks (journalOf).
func (ix *Index) foldedBase(ctx context.Context, sn *store.Snapshot, prev *view) (*entrySet, *journalView, []malformed, error) {
	live := sn.LiveLists()
	names := make([]string, len(live))
	for i, l := range live {
		names[i] = l.Name
	}
	var carried []malformed // prev's, but the journal's
	if prev != nil && prev.mode == ModeFolded {
		for _, m := range prev.mals {
			if m.where != sourceTheJournal {
				carried = append(carried, m)
			}
		}
		if slices.Equal(prev.listNames, names) {
			if sameJournal(sn, prev) {
				if m := prev.journal.mal; m != nil {
					carried = append(carried, *m)
				}
				return prev.base, prev.journal, carried, nil
			}
			b := newBuilderFrom(prev.base)
			s, jv := b.withJournal(prev.base, nil, journalOf(b, sn, prev), sn.JournalVersion)
			return s, jv, append(carried, b.mal...), nil
		}
		if added, ok := addedPartials(prev.listNames, live); ok {
			s, jv, mal, err := ix.addLists(ctx, prev, added, sn)
			if err != nil {
				return nil, nil, nil, err
			}
			return s, jv, append(carried, mal...), nil
		}
	}
	b := newBuilder()
	// The lists first: the biggest one's value table becomes the set's
	// base as it was decoded or mapped (builder.adopt), not copied; the
	// journal's values are added after it. An attestation id a journal
	// line and a list both name is then held twice, compared by text
	// (builder.internOf); signers and other interned values are found
	// in the map, once.
	runs, err := ix.loadLists(ctx, b, live, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	je := journalOf(b, sn, prev)
	runs = append(runs, je.r)
	ix.lists.learn(b.texts)
	s := b.set(b.mergeRuns(runs))
	return s, markIn(s, je, &b.vt, sn.JournalVersion), b.mal, nil
}

// addedPartials returns the live lists not in held, if held are all still
// live and every other one is partial.
func addedPartials(held []string, live []store.ListInfo) ([]store.ListInfo, bool) {
	var added []store.ListInfo
	found := 0
	for _, l := range live {
		if _, ok := slices.BinarySearch(held, l.Name); ok {
			found++
			continue
		}
		if l.Complete {
			return nil, false
		}
		added = append(added, l)
	}
	return added, found == len(held)
}

// addLists reads lists and merges them into prev's set, whose journal
// part it recomputes from sn's journal (withJournal). The lists are read
// before the journal here, so an attestation id both name is held twice
// (builder.internOf): a few bytes a refresh, compared by text.
func (ix *Index) addLists(ctx context.Context, prev *view, lists []store.ListInfo, sn *store.Snapshot) (*entrySet, *journalView, []malformed, error) {
	b := newBuilderFrom(prev.base)
	runs, err := ix.loadLists(ctx, b, lists, prev.base.entries())
	if err != nil {
		return nil, nil, nil, err
	}
	ix.lists.learn(b.texts)
	s, jv := b.withJournal(prev.base, runs, journalOf(b, sn, prev), sn.JournalVersion)
	return s, jv, b.mal, nil
}

// badRetiredLines is the warning for the retired record's lines that do
// not parse: the record's key, and each example's line number, text and
// the rule it broke.
func badRetiredLines(bad format.BadLines) string {
	lines := "lines that do"
	if bad.Count == 1 {
		lines = "line that does"
	}
	return fmt.Sprintf("retired record %s has %d %s not parse (%s): a live list such a line names is not trusted, and a collection never deletes what it meant to retire; drop them with oxyfs fold --drop-malformed FILE STORE",
		format.RetiredKey, bad.Count, lines, strings.Join(bad.Messages(), "; "))
}

// uncertainLists names, when a line of the retired record that does not
// parse holds the name of a live list, each such list and the line: the
// record may retire it or not, so the live lists are not known. "" when
// there is none.
func uncertainLists(sn *store.Snapshot) string {
	u := sn.UncertainLists()
	if len(u) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(u))
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s (%s)", name, u[name])
	}
	return fmt.Sprintf("retired record %s: lines that do not parse name live entry lists, which they may retire: %s; the lists are not trusted, lookups list prefixes (LIST requests) until the lines are dropped (oxyfs fold --drop-malformed FILE STORE)",
		format.RetiredKey, strings.Join(parts, ", "))
}

// reportMalformed counts the malformed keys an open skipped, and the journal
// lines ParseJournal refused, and warns once per source with a count and the
// first example (a refresh that meets the same ones says nothing new).
func (ix *Index) reportMalformed(v *view, sn *store.Snapshot, mals []malformed) {
	if sn.JournalBad.Count > 0 {
		mals = append(mals, malformed{where: sourceTheJournal, n: sn.JournalBad.Count, first: sn.JournalBad.First[0].Error()})
	}
	if len(sn.Irregular) > 0 {
		mals = append(mals, malformed{where: "the pack listing", n: len(sn.Irregular), first: sn.Irregular[0]})
	}
	if sn.RetiredBad.Count > 0 {
		msg := badRetiredLines(sn.RetiredBad)
		ix.warnOnce("retired-bad:"+msg, msg)
	}
	v.mals = mals
	for _, m := range mals {
		v.malformed += m.n
		ix.warnOnce("malformed:"+m.String(), m.String())
	}
}
