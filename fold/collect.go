package fold

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/oxyfs/oxyfs/store"
)

// ForgetObject names an object a repository collection deleted: a
// collection then deletes its entry keys and their journal lines too, so the
// next complete list leaves them out (spec §13.7 "Folding").
type ForgetObject struct {
	Object string       `json:"object"` // object id: lowercase hex, as in the keys
	Kinds  []store.Kind `json:"kinds"`  // the kinds of entry to forget; nil: every kind
}

// ParseForgetObject parses "OBJECT" (every kind) or "KIND[,KIND...]:OBJECT",
// such as "sig:abcd01" or "seal,receipt:abcd01".
func ParseForgetObject(s string) (ForgetObject, error) {
	var f ForgetObject
	kinds, obj, ok := strings.Cut(s, ":")
	if !ok {
		kinds, obj = "", s
	}
	if ok {
		for _, k := range strings.Split(kinds, ",") {
			kind, found := store.ParseKind(k)
			if !found {
				return f, fmt.Errorf("forget %q: unknown kind %q", s, k)
			}
			f.Kinds = append(f.Kinds, kind)
		}
	}
	f.Object = obj
	if err := f.validate(); err != nil {
		return ForgetObject{}, err
	}
	return f, nil
}

func (f ForgetObject) validate() error {
	if err := store.ValidateObject(f.Object); err != nil {
		return fmt.Errorf("forget %s: %w", f, err)
	}
	for _, k := range f.Kinds {
		if int(k) >= store.NumKinds {
			return fmt.Errorf("forget %s: unknown kind %d", f, k)
		}
	}
	return nil
}

// kinds returns the kinds to forget.
func (f ForgetObject) kinds() []store.Kind {
	if len(f.Kinds) == 0 {
		return store.Kinds[:]
	}
	return f.Kinds
}

// String formats f as ParseForgetObject reads it.
func (f ForgetObject) String() string {
	if len(f.Kinds) == 0 {
		return f.Object
	}
	names := make([]string, len(f.Kinds))
	for i, k := range f.Kinds {
		names[i] = k.String()
	}
	return strings.Join(names, ",") + ":" + f.Object
}

// CollectOptions configure Collect.
type CollectOptions struct {
	// DryRun plans the collection, reports every key it would delete and
	// every line it would drop, and changes nothing.
	DryRun bool
	// ForgetObjects are objects a repository collection deleted.
	ForgetObjects []ForgetObject
	// Apply really deletes the ForgetObjects' entries and journal lines;
	// without it they are only reported.
	Apply bool
	// Progress and Warn are as in Options, with the phases "forget" and
	// "delete" added; the fold at the end is passed both.
	Progress func(done, total int64, phase string)
	Warn     func(string)
}

// ForgetReport says what forgetting objects did (or would do).
type ForgetReport struct {
	Applied bool     `json:"applied"` // deleted; otherwise only reported
	Keys    []string `json:"keys"`    // their entry keys and older one-list keys
	Lines   int      `json:"lines"`   // journal lines naming their entries (dropped if applied)
	Deleted int      `json:"deleted"` // of Keys, how many a HEAD found gone after their DELETE
	Failed  []string `json:"failed"`  // of Keys, those a HEAD still found after their DELETE
}

// CollectReport says what a collection did (or, in a dry run, would do).
type CollectReport struct {
	DryRun              bool         `json:"dry_run"`
	Now                 int64        `json:"now"`      // the store clock the plan used, wall ms
	Deleted             []string     `json:"deleted"`  // retired over an hour ago and deleted (or that would be)
	Missing             []string     `json:"missing"`  // retired over an hour ago and gone already
	Failed              []string     `json:"failed"`   // deleted, yet a HEAD still finds them: their retired lines stay
	Waiting             int          `json:"waiting"`  // retired within the hour: kept
	NextDue             int64        `json:"next_due"` // wall ms after which the next waiting key may go; 0: none
	Refused             []string     `json:"refused"`  // named in the retired record but never deleted (the records, the marker)
	RetiredLinesDropped int          `json:"retired_lines_dropped"`
	JournalLinesDropped int          `json:"journal_lines_dropped"` // folded lines past their hour
	Forget              ForgetReport `json:"forget"`
	Fold                *Report      `json:"fold"`
	Requests            store.Counts `json:"requests"`
	CASTries            int          `json:"cas_tries"`
}

// Collect is `oxyfs gc`: it collects what folds replaced, then folds.
//
// It plans first, reading only, and takes no single answer's word (adr-0055
// D6): the snapshot (journal, retired record, pack listing), cross-checked
// (checkPackListing: a list the retired record or the journal's folded lines
// show to be there that the listing lacks stops it; the live lists are read
// once), the keys retired more than store.GracePeriod ago, and the keys of
// every object to forget from two sources that must agree (forgetPlan.plan:
// one LIST of the object's prefix per kind, each key checked to be the
// object's and confirmed by a HEAD, one HEAD of its older one-list key per
// kind; and the journal's and live lists' keys of the object, a HEAD for
// each the listing lacks). Any failed listing or read, or answers that
// contradict each other, end it there, before anything is changed. A dry
// run ends there too, and reports exactly what would be deleted: the keys a
// HEAD finds (the retired keys gone already are reported apart). Then, in
// this order:
//
//  1. One compare-and-swap update of the journal drops the folded lines past
//     their hour and, with Apply, every line naming a forgotten object.
//     A failure ends the run before anything is deleted.
//  2. Every key retired more than store.GracePeriod ago is deleted. Never
//     one retired later, never the journal, the retired record or the
//     marker (such names are reported in Refused), never a live list (a
//     list the retired record names is not live).
//     Every DELETE is followed by a HEAD: a key still there is a failed
//     deletion (Failed, ErrDeleteFailed), whatever the DELETE answered.
//  3. One compare-and-swap update of the retired record drops the lines of
//     the keys a HEAD found gone, and no other.
//  4. A complete fold (Complete), which leaves the forgotten objects'
//     entries out of its list and of the older lists' copies.
//  5. With Apply, the forgotten objects' keys are deleted — only now, once
//     no live list names them: a fold that failed leaves them in place and
//     still listed, never a list naming keys that are gone. Each deletion
//     is confirmed by a HEAD (ForgetReport.Deleted counts only those). A
//     key this step fails to delete is in no list, as an older writer's
//     key would be, until the collection is run again.
//
// Run one collection at a time per store, as oxy gc runs. Folds and writers
// may run beside it.
func Collect(ctx context.Context, st *store.Store, opts CollectOptions) (rep CollectReport, err error) {
	start := st.Counts()
	rep.DryRun = opts.DryRun
	defer func() { rep.Requests = st.Counts().Sub(start) }()
	w := &warner{fn: opts.Warn}
	prog := &progress{fn: opts.Progress}
	if err := checkLayout(st); err != nil {
		return rep, fmt.Errorf("collect: %w", err)
	}
	if st.ReadOnly() && !opts.DryRun {
		return rep, fmt.Errorf("collect: %w", store.ErrReadOnly)
	}
	if err := checkClock(ctx, st, "collect", opts.DryRun); err != nil {
		return rep, err
	}
	for _, f := range opts.ForgetObjects {
		if err := f.validate(); err != nil {
			return rep, fmt.Errorf("collect: %w", err)
		}
	}

	// Plan.
	forget := newForgetPlan(opts.ForgetObjects)
	sn, cc, err := crossCheckedSnapshot(ctx, st, forget, w)
	if err != nil {
		return rep, fmt.Errorf("collect: %w", err)
	}
	rep.Now = cc.now
	due := planRetired(sn, rep.Now, &rep, w)
	if err := forget.plan(ctx, st, cc.named); err != nil {
		return rep, fmt.Errorf("collect: %w", err)
	}
	rep.Forget.Applied = opts.Apply && !opts.DryRun
	rep.Forget.Keys = forget.keys
	for _, l := range sn.Journal {
		switch {
		case l.Expired(rep.Now):
			rep.JournalLinesDropped++
		case forget.names(l.Key):
			rep.Forget.Lines++
		}
	}
	if opts.DryRun {
		// Name only what is there (DESIGN §6: exactly what would be
		// deleted); the forgotten keys were found by the plan already.
		there, gone, err := existing(ctx, st, due)
		if err != nil {
			return rep, fmt.Errorf("collect: look up retired keys: %w", err)
		}
		rep.Deleted, rep.Missing = there, gone
		isDue := make(map[string]bool, len(due))
		for _, k := range due {
			isDue[k] = true
		}
		for _, r := range sn.Retired {
			if isDue[r.Key] && store.RetiredOverAnHourAgo(r.RetiredAt, rep.Now) {
				rep.RetiredLinesDropped++
			}
		}
		fr, err := complete(ctx, st, Options{DryRun: true, Progress: opts.Progress, Warn: opts.Warn},
			dryRunPlan(rep.Now, due, forget, opts.Apply))
		rep.Fold = &fr
		if err != nil {
			return rep, fmt.Errorf("collect: %w", err)
		}
		return rep, nil
	}

	// 1. The journal.
	apply := opts.Apply && len(forget.objects) > 0
	tries, expiredN, forgotN, err := dropJournalLines(ctx, st, forget, apply)
	rep.CASTries += tries
	rep.JournalLinesDropped = expiredN
	if apply {
		rep.Forget.Lines = forgotN
	}
	if err != nil {
		return rep, fmt.Errorf("collect: %w", err)
	}

	// 2. What was retired over an hour ago.
	// A key a HEAD still finds after its DELETE keeps its retired line.
	del, delErr := deleteKeys(ctx, st, due, prog, "delete")
	rep.Deleted, rep.Missing, rep.Failed = del.gone, del.missing, del.kept
	gone := make(map[string]bool, len(del.gone)+len(del.missing))
	for _, k := range del.gone {
		gone[k] = true
	}
	for _, k := range del.missing {
		gone[k] = true
	}

	// 3. Their retired lines.
	if len(gone) > 0 {
		res, err := st.UpdateRecord(ctx, store.RetiredKey, func(old []byte, _ bool) ([]byte, error) {
			rec := store.ParseRetiredRecord(old)
			n := len(rec.Lines)
			rec.Lines = slices.DeleteFunc(rec.Lines, func(l store.RecordLine[store.RetiredLine]) bool {
				return !l.Bad() && gone[l.Line.Key] && store.RetiredOverAnHourAgo(l.Line.RetiredAt, rep.Now)
			})
			rep.RetiredLinesDropped = n - len(rec.Lines)
			if rep.RetiredLinesDropped == 0 {
				return nil, store.ErrNoChange
			}
			return rec.Text(), nil
		})
		rep.CASTries += res.Tries
		if !res.Wrote {
			rep.RetiredLinesDropped = 0
		}
		if err != nil {
			return rep, fmt.Errorf("collect: drop retired lines: %w", err)
		}
	}
	if delErr != nil {
		return rep, fmt.Errorf("collect: %w", delErr)
	}

	// 4. The fold, leaving the forgotten objects' entries out.
	var h *hooks
	if apply {
		h = &hooks{drop: forget.names, gone: forget.names}
	}
	fr, err := complete(ctx, st, Options{Progress: opts.Progress, Warn: opts.Warn}, h)
	rep.Fold = &fr
	if err != nil {
		return rep, fmt.Errorf("collect: %w", err)
	}

	// 5. The forgotten objects' keys, once no live list names them.
	if apply {
		del, err := deleteKeys(ctx, st, forget.keys, prog, "forget")
		rep.Forget.Deleted = len(del.gone) + len(del.missing)
		rep.Forget.Failed = del.kept
		if err != nil {
			return rep, fmt.Errorf("collect: forget: %w", err)
		}
	}
	return rep, nil
}

// dryRunPlan makes a collection's dry run plan its fold on the store the
// collection would leave, not on the store as it is: the journal without the
// lines step 1 drops (folded past their hour at now, and with apply the
// forgotten objects'), the retired record and the pack listing without the
// keys steps 3 and 4 delete (due), the listing without the forgotten
// objects' keys step 2 deletes.
func dryRunPlan(now int64, due []string, forget *forgetPlan, apply bool) *hooks {
	isDue := make(map[string]bool, len(due))
	for _, k := range due {
		isDue[k] = true
	}
	h := &hooks{plan: func(sn *store.Snapshot) {
		sn.Journal = slices.DeleteFunc(slices.Clone(sn.Journal), func(l store.JournalLine) bool {
			return l.Expired(now) || apply && forget.names(l.Key)
		})
		sn.Retired = slices.DeleteFunc(slices.Clone(sn.Retired), func(r store.RetiredLine) bool {
			return isDue[r.Key] && store.RetiredOverAnHourAgo(r.RetiredAt, now)
		})
		sn.Lists = slices.DeleteFunc(slices.Clone(sn.Lists), func(l store.ListInfo) bool { return isDue[l.Name] })
	}}
	if apply {
		h.drop, h.gone = forget.names, forget.names
	}
	return h
}

// planRetired returns the keys retired more than store.GracePeriod before
// now, sorted. A key retired twice counts from its latest retirement. A list
// the retired record names is never live (live means listed and not
// retired), and Complete never writes a list under a retired name, so no
// live list is ever planned for deletion. The records and the marker are
// refused outright, should a retired line name them.
// retirable reports whether a key is of a kind the retired record holds
// (spec §13.4, §13.7): packs and their companions, entry lists, loose objects
// and raw chunks. The records, the marker, entry keys, the older one-list
// keys, operations and anything else are never deleted by a collection,
// whatever a (corrupt or hostile) retired record says.
func retirable(key string) bool {
	switch {
	case key == store.JournalKey || key == store.RetiredKey || key == store.LegacyFoldedMarker:
		return false
	case strings.HasPrefix(key, store.PackPrefix):
		return !strings.Contains(key, "/")
	case strings.HasPrefix(key, "loose/"), strings.HasPrefix(key, "nocompress/"):
		return !strings.Contains(key, "..")
	}
	return false
}

func planRetired(sn *store.Snapshot, now int64, rep *CollectReport, w *warner) []string {
	latest := make(map[string]int64, len(sn.Retired))
	for _, r := range sn.Retired {
		if at, ok := latest[r.Key]; !ok || r.RetiredAt > at {
			latest[r.Key] = r.RetiredAt
		}
	}
	var due []string
	for key, at := range latest {
		switch {
		case !retirable(key):
			rep.Refused = append(rep.Refused, key)
			w.warn("retired record names %s, which a collection never deletes", key)
		case store.RetiredOverAnHourAgo(at, now):
			due = append(due, key)
		default:
			rep.Waiting++
			if next := store.RetiredDueAt(at); rep.NextDue == 0 || next < rep.NextDue {
				rep.NextDue = next
			}
		}
	}
	slices.Sort(rep.Refused)
	slices.Sort(due)
	return due
}

// dropJournalLines drops, in one compare-and-swap update of the journal, the
// folded lines past their hour and, with forget, the lines naming forgotten
// objects.
func dropJournalLines(ctx context.Context, st *store.Store, p *forgetPlan, forget bool) (tries, expiredN, forgotN int, err error) {
	res, err := st.UpdateRecord(ctx, store.JournalKey, func(old []byte, _ bool) ([]byte, error) {
		now := st.Clock().NowMs()
		rec := store.ParseJournalRecord(old)
		kept := rec.Lines[:0]
		expiredN, forgotN = 0, 0
		for _, l := range rec.Lines {
			switch {
			case l.Bad():
				kept = append(kept, l)
			case l.Line.Expired(now):
				expiredN++
			case forget && p.names(l.Line.Key):
				forgotN++
			default:
				kept = append(kept, l)
			}
		}
		if expiredN+forgotN == 0 {
			return nil, store.ErrNoChange
		}
		rec.Lines = kept
		return rec.Text(), nil
	})
	if err != nil || !res.Wrote {
		expiredN, forgotN = 0, 0
	}
	if err != nil {
		return res.Tries, 0, 0, fmt.Errorf("drop journal lines: %w", err)
	}
	return res.Tries, expiredN, forgotN, nil
}
