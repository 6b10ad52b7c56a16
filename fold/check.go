package fold

import (
	"context"
	"errors"
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
	Folded          bool     `json:"folded"`
	LiveLists       []string `json:"live_lists"`
	ListEntries     int      `json:"list_entries"` // distinct keys across the live lists
	Entries         int      `json:"entries"`      // per-object keys listed
	JournalLines    int      `json:"journal_lines"`
	JournalUnfolded int      `json:"journal_unfolded"`
	RetiredLines    int      `json:"retired_lines"`
	// EmptySignatures counts the 0-byte signature keys (each a problem).
	EmptySignatures int `json:"empty_signatures"`
	// Unnamed counts the per-object keys of a folded store that no live
	// list or journal line names; UnnamedLost those of them that are
	// problems (something acknowledged may be missing: see Check).
	Unnamed     int          `json:"unnamed"`
	UnnamedLost int          `json:"unnamed_lost"`
	Problems    []string     `json:"problems"`
	Notes       []string     `json:"notes"`
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
//     fold, are noted.
//
// Requests: one LIST per page of the pack prefix (the snapshot), one GET of
// the journal and of the retired record, one LIST per page of every entry
// prefix (split by <hh> for large kinds), one GET per live list, HEADs of
// the keys a report names, one more LIST per page of the pack prefix and
// GET of the journal (checkdamage.go: the times, the journal's last byte),
// one GET per partial list written within the hour before the journal's
// last update, one GET per retired list on a folded store with unnamed
// keys, and a HEAD or GET per retired key.
//
// Check returns an error only when it could not read what it checks.
func Check(ctx context.Context, st *store.Store, opts CheckOptions) (rep CheckReport, err error) {
	start := st.Counts()
	defer func() { rep.Requests = st.Counts().Sub(start) }()
	prog := &progress{fn: opts.Progress}
	w := &warner{fn: opts.Warn}
	max := opts.MaxItems
	if max <= 0 {
		max = 50
	}
	rep.Store, rep.Layout = st.URL(), st.Layout().String()
	problem := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		rep.Problems = append(rep.Problems, msg)
		w.warn("%s", msg)
	}
	note := func(format string, args ...any) { rep.Notes = append(rep.Notes, fmt.Sprintf(format, args...)) }

	sn, err := readSnapshot(ctx, st)
	if err != nil {
		return rep, fmt.Errorf("check: %w", err)
	}
	rep.Folded = sn.Folded()
	rep.JournalLines, rep.JournalUnfolded, rep.RetiredLines = len(sn.Journal), sn.UnfoldedLines(), len(sn.Retired)
	for _, b := range sn.JournalBad.Messages() {
		problem("journal %s %s", format.JournalKey, b)
	}
	for _, b := range sn.RetiredBad.Messages() {
		problem("retired record %s %s", format.RetiredKey, b)
	}
	for _, k := range sn.Irregular {
		problem("pack key %s: not a regular file (readers and folds skip it)", k)
	}
	if st.Layout() == store.LayoutDirectory && (len(sn.Lists) > 0 || len(sn.Journal) > 0) {
		note("directory layout, yet the store holds a journal or entry lists: readers of this layout ignore them")
	}

	sc, err := listEntriesTimed(ctx, st, prog, true)
	if err != nil {
		return rep, fmt.Errorf("check: %w", err)
	}
	rep.Entries = len(sc.keys)
	capped(&rep.Problems, max, sc.malformed, func(k string) string {
		return fmt.Sprintf("malformed entry key %q under an entry prefix (readers and folds skip it)", k)
	})

	// The live lists, streamed (checklists.go).
	live := sn.LiveLists()
	for _, l := range live {
		rep.LiveLists = append(rep.LiveLists, l.Name) // sorted, as sn.Lists is
	}
	found, err := checkLists(ctx, st, live, sc.keys, max)
	if err != nil {
		return rep, fmt.Errorf("check: read lists: %w", err)
	}

	// Keys the journal or a live list names but the listing did not show:
	// the examples a report would name are looked up first.
	jkeys := make([]string, len(sn.Journal))
	for i, l := range sn.Journal {
		jkeys[i] = l.Key
	}
	jkeys = sortedUnique(jkeys)
	dmg, err := checkDamage(ctx, st, sn, sc, jkeys, max, &rep)
	if err != nil {
		return rep, fmt.Errorf("check: %w", err)
	}
	dmg.listsRead(live, found)
	_, missing := mergeKeys(sc.keys, jkeys)
	examples := slices.Clone(missing[:min(len(missing), max)])
	for _, f := range found {
		if f.named != nil {
			examples = append(examples, f.missingEx...)
		}
	}
	gone, err := confirmMissing(ctx, st, sortedUnique(examples), max, problem)
	if err != nil {
		return rep, fmt.Errorf("check: %w", err)
	}
	named := checkListFindings(&rep, live, found, len(sc.keys), max, gone)
	if !slices.ContainsFunc(missing[:min(len(missing), max)], func(k string) bool { return !gone(k) }) {
		capped(&rep.Problems, max, missing, func(k string) string {
			return fmt.Sprintf("journal names %s, which does not exist", k)
		})
	}

	// Per-object keys that neither names.
	var waiting []string
	var waitingAt []int64 // each waiting key's modification time
	forEachWaiting(sc.keys, named, jkeys, func(i int) {
		if dmg.named(sc.keys[i]) {
			return // its line came after the snapshot
		}
		waiting = append(waiting, sc.keys[i])
		waitingAt = append(waitingAt, sc.times[i])
	})
	switch {
	case st.Layout() == store.LayoutDirectory:
		note("directory layout: lookups list the per-object prefixes; %d entries", len(sc.keys))
	case !rep.Folded:
		note("store is not folded (no live complete list): readers list the per-object prefixes; browsing it costs a LIST for every directory listed and every object looked up; run `oxyfs fold` to fold it")
		if len(waiting) > 0 {
			note("%d per-object keys are in no list or journal line yet; the first complete fold picks them up", len(waiting))
		}
	default:
		dropped, err := heldByRetired(ctx, st, sn, waiting)
		if err != nil {
			return rep, fmt.Errorf("check: %w", err)
		}
		var older []string
		var gaps, lost []string
		for i, k := range waiting {
			if l, ok := dropped[k]; ok {
				gaps = append(gaps, fmt.Sprintf("%s exists, but no live list or journal line names it although %s, retired, held it: a fold left it out (a listing that missed it?); readers of the folded store do not show it until a complete fold lists it (`oxyfs fold`)", k, l))
			} else if why := dmg.unnamedCause(waitingAt[i]); why != "" {
				lost = append(lost, fmt.Sprintf("%s exists, but no live list or journal line names it: %s; readers of the folded store miss it until a complete fold lists it (`oxyfs fold`)", k, why))
			} else {
				older = append(older, k)
			}
		}
		rep.Unnamed, rep.UnnamedLost = len(waiting), len(gaps)+len(lost)
		capped(&rep.Problems, max, gaps, func(s string) string { return s })
		capped(&rep.Problems, max, lost, func(s string) string { return s })
		capped(&rep.Notes, max, older, func(k string) string {
			return fmt.Sprintf("%s is waiting for a fold: no live list or journal line names it (an older writer's key?); readers of the folded store miss it until the next complete fold", k)
		})
	}

	dmg.reportLost(&rep)
	checkLayoutNotes(ctx, st, sn, note)
	if err := checkRetired(ctx, st, sn, max, prog, &rep.Notes); err != nil {
		return rep, fmt.Errorf("check: %w", err)
	}
	return rep, nil
}

// checkLayoutNotes notes the states of the lists, the journal and the older
// lists that the spec allows but that a fold would change.
func checkLayoutNotes(ctx context.Context, st *store.Store, sn *store.Snapshot, note func(string, ...any)) {
	complete, partial := 0, 0
	for _, l := range sn.LiveLists() {
		if l.Complete {
			complete++
		} else {
			partial++
		}
	}
	if complete > 1 {
		note("%d live complete lists (folds ran side by side); the next complete fold retires all but one", complete)
	}
	if partial > 0 {
		note("%d live partial lists; the next complete fold retires them", partial)
	}
	if n := sn.UnfoldedLines(); n > format.PartialFoldThreshold {
		note("%d unfolded journal lines, more than %d: the next writer folds them into a partial list", n, format.PartialFoldThreshold)
	}
	if sn.Marker || st.Layout() == store.LayoutDirectory {
		return
	}
	older := 0
	for _, ll := range format.LegacyLists() {
		page, _, err := st.ListPage(ctx, ll.Prefix, "", nil, 0)
		if err != nil {
			note("could not list older lists under %s: %v", ll.Prefix, err)
			continue
		}
		older += len(page)
	}
	if older > 0 {
		note("no %s marker and older one-list keys present (at least %d): the first complete fold copies them into per-object entries", format.LegacyFoldedMarker, older)
	}
}

// checkRetired notes retired keys that are gone already, forget records
// that do not parse (readers trust no cached signature while one is
// named), and how many keys are due for deletion.
func checkRetired(ctx context.Context, st *store.Store, sn *store.Snapshot, max int, prog *progress, notes *[]string) error {
	listed := make(map[string]bool, len(sn.Lists))
	for _, l := range sn.Lists {
		listed[l.Name] = true
	}
	now := st.Clock().NowMs()
	latest := sn.RetiredSet()
	keys := make([]string, 0, len(latest))
	due := 0
	for k := range latest {
		keys = append(keys, k)
	}
	for _, r := range sn.Retired {
		if format.RetiredOverAnHourAgo(r.RetiredAt, now) {
			due++
		}
	}
	slices.Sort(keys)
	gone := make([]bool, len(keys))
	bad := make([]string, len(keys)) // why a forget record does not parse
	err := forEach(ctx, len(keys), func(ctx context.Context, i int) error {
		if _, _, isList := format.ParseEntryListName(keys[i]); isList {
			gone[i] = !listed[keys[i]]
			return nil
		}
		defer prog.report(int64(i+1), int64(len(keys)), "retired")
		if format.IsForgottenName(keys[i]) {
			// A forget record is read whole (at most 16 MiB): readers
			// that cannot parse it trust no cached signature.
			data, err := st.Get(ctx, keys[i])
			switch {
			case errors.Is(err, store.ErrNotFound):
				gone[i] = true
			case errors.Is(err, store.ErrTooLarge):
				bad[i] = err.Error()
			case err != nil:
				return err
			default:
				if _, err := format.ParseForgottenRecord(keys[i], data); err != nil {
					bad[i] = err.Error()
				}
			}
			return nil
		}
		ok, err := st.Exists(ctx, keys[i])
		gone[i] = !ok
		return err
	})
	if err != nil {
		return fmt.Errorf("retired keys: %w", err)
	}
	var missing []string
	for i, k := range keys {
		if gone[i] {
			missing = append(missing, k)
		}
	}
	capped(notes, max, missing, func(k string) string {
		if format.IsForgottenName(k) && !format.RetiredOverAnHourAgo(latest[k], now) {
			return fmt.Sprintf("forget record %s, retired within the hour, is gone (its collection failed before writing it?): until a collection drops its line after its hour, readers trust no cached signature", k)
		}
		return fmt.Sprintf("retired key %s is gone already; the next collection drops its line", k)
	})
	var unparsed []string
	for i := range keys {
		if bad[i] != "" {
			unparsed = append(unparsed, bad[i])
		}
	}
	capped(notes, max, unparsed, func(why string) string {
		return why + "; readers trust no cached signature while it is named (within its hour), and a collection deletes it after"
	})
	if due > 0 {
		*notes = append(*notes, fmt.Sprintf("%d retired lines are over %v old: the next collection deletes their keys", due, format.GracePeriod))
	}
	return nil
}

// heldByRetired returns, of keys (sorted), those a retired list that still
// exists holds, each with the list's name: entries a folded store held and a
// fold then left out although their key exists — a gap, where an older
// writer's key that no list ever held is only waiting. Each retired list is
// streamed once; one that is gone is skipped, one that does not decode is
// skipped (check reports corrupt lists elsewhere), a failed read is an error.
func heldByRetired(ctx context.Context, st *store.Store, sn *store.Snapshot, keys []string) (map[string]string, error) {
	out := map[string]string{}
	if len(keys) == 0 {
		return out, nil
	}
	for _, l := range sn.Lists {
		if !l.Retired {
			continue
		}
		data, err := st.Get(ctx, l.Name)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read retired list %s: %w", l.Name, err)
		}
		j := 0
		// A retired list that does not decode proves nothing: its keys read
		// so far count, the rest are only waiting.
		_, _ = format.DecodeEntryList(data, func(key []byte) error {
			for j < len(keys) && keys[j] < string(key) {
				j++
			}
			if j < len(keys) && keys[j] == string(key) {
				if _, ok := out[keys[j]]; !ok {
					out[keys[j]] = l.Name
				}
			}
			return nil
		})
	}
	return out, nil
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
func confirmMissing(ctx context.Context, st *store.Store, keys []string, max int, problem func(string, ...any)) (func(string) bool, error) {
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
		shown := there[:min(len(there), max)]
		problem("the listing of the entry prefixes did not show %s%s, which a HEAD found: the server's listing is wrong (an empty or cut page?); keys a list or the journal names are reported missing only once a HEAD found them gone (%d not looked up)",
			strings.Join(shown, ", "), more(len(there)-len(shown)), left)
	}
	gone := make(map[string]bool, len(keys))
	for i, k := range keys {
		if state[i] == isGone {
			gone[k] = true
		}
	}
	return func(k string) bool { return gone[k] }, nil
}
