package fold

import (
	"context"
	"fmt"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"slices"
	"strings"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// ForgetObject names an object a repository collection deleted: a
// collection then deletes its entry keys and their journal lines too, so the
// next complete list leaves them out (spec §13.7 "Folding").
type ForgetObject struct {
	Object string        `json:"object"` // object id: lowercase hex, as in the keys
	Kinds  []format.Kind `json:"kinds"`  // the kinds of entry to forget; nil: every kind
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
			kind, found := format.ParseKind(k)
			if !found {
				return f, fmt.Errorf("forget %s: unknown kind %s", termsafe.DoubleQuote(s), termsafe.DoubleQuote(k))
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
	if err := format.ValidateObject(f.Object); err != nil {
		return fmt.Errorf("forget %s: %w", f, err)
	}
	for _, k := range f.Kinds {
		if int(k) >= format.NumKinds {
			return fmt.Errorf("forget %s: unknown kind %d", f, k)
		}
	}
	return nil
}

// kinds returns the kinds to forget.
func (f ForgetObject) kinds() []format.Kind {
	if len(f.Kinds) == 0 {
		return format.Kinds[:]
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
	// Records are the forget records written before anything was
	// forgotten (format.ForgottenRecord, one per
	// format.MaxForgottenObjects): what readers are told to read again.
	Records []string `json:"records,omitempty"`
	// RecordsPlanned is, in a dry run with Apply, how many forget records
	// the collection would write first.
	RecordsPlanned int `json:"records_planned,omitempty"`
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
// once), the keys retired more than format.GracePeriod ago, and the keys of
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
//  0. With Apply, the forget record (format.ForgottenRecord): one
//     compare-and-swap update of the retired record adds its line, then
//     one PUT writes it. Readers that see it read the forgotten objects'
//     signatures again: a key forgotten and put again may otherwise leave
//     the journal and the lists as they saw them. Retired, it is deleted
//     an hour later like any retired key. A failure ends the run before
//     anything is forgotten.
//  1. One compare-and-swap update of the journal drops the folded lines past
//     their hour and, with Apply, every line naming a forgotten object.
//     A failure ends the run before anything is deleted.
//  2. Every key retired more than format.GracePeriod ago is deleted. Never
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
//  6. With Apply, a closing forget record, as step 0 (dated later, so
//     named otherwise): a reader that refreshed between step 0 and step 5
//     read the forgotten signatures again while they were still there; the
//     closing record is new to it, so its next refresh reads them again,
//     put again or not.
//
// Run one collection at a time per store, as oxy gc runs. Folds and writers
// may run beside it.
func Collect(ctx context.Context, st *store.Store, opts CollectOptions) (CollectReport, error) {
	rep := CollectReport{DryRun: opts.DryRun}
	r, err := begin(ctx, st, opts.DryRun, opts.Warn, opts.Progress)
	if err == nil {
		c := &collection{run: r, opts: opts, rep: &rep}
		err = c.steps()
	}
	rep.Requests = r.requests()
	if err != nil {
		return rep, fmt.Errorf("collect: %w", err)
	}
	return rep, nil
}

// collection is one Collect as it goes: its plan, and what its steps found.
type collection struct {
	*run
	opts     CollectOptions
	rep      *CollectReport // filled in as the steps go
	forget   *forgetPlan
	sn       *store.Snapshot
	due      []string        // keys retired more than format.GracePeriod ago, sorted
	apply    bool            // Apply, with objects to forget
	gone     map[string]bool // 2: the due keys a HEAD found gone
	delErr   error           // 2: a failed deletion, returned after step 3
	markedAt int64           // 0, 6: when the last forget record was dated
}

// steps runs Collect's plan, then its dry run or its steps 1 to 5, until
// one fails or ends it.
func (c *collection) steps() error {
	for _, step := range []func() (done bool, err error){
		c.plan, c.dryRun, c.markForgotten, c.dropJournal, c.deleteDue, c.dropRetiredLines, c.fold, c.deleteForgotten, c.markForgotten,
	} {
		if done, err := step(); done || err != nil {
			return err
		}
	}
	return nil
}

// plan reads only: the cross-checked snapshot, the keys due, the keys of
// the objects to forget, and the journal lines step 1 drops.
func (c *collection) plan() (bool, error) {
	for _, f := range c.opts.ForgetObjects {
		if err := f.validate(); err != nil {
			return false, err
		}
	}
	rep := c.rep
	c.forget = newForgetPlan(c.opts.ForgetObjects)
	sn, cc, err := crossCheckedSnapshot(c.ctx, c.st, c.forget, c.w)
	if err != nil {
		return false, err
	}
	c.sn, rep.Now = sn, cc.now
	c.due = planRetired(sn, rep.Now, rep, c.w)
	if err := c.forget.plan(c.ctx, c.st, cc.named); err != nil {
		return false, err
	}
	rep.Forget.Applied = c.opts.Apply && !c.dry
	rep.Forget.Keys = c.forget.keys
	for _, l := range sn.Journal {
		switch {
		case l.Expired(rep.Now):
			rep.JournalLinesDropped++
		case c.forget.names(l.Key):
			rep.Forget.Lines++
		}
	}
	c.apply = c.opts.Apply && len(c.forget.objects) > 0
	return false, nil
}

// dryRun ends a dry run: it names only what is there (DESIGN §6: exactly
// what would be deleted; the forgotten keys were found by the plan already)
// and plans the fold on the store the collection would leave (dryRunPlan).
func (c *collection) dryRun() (bool, error) {
	if !c.dry {
		return false, nil
	}
	rep := c.rep
	there, gone, err := existing(c.ctx, c.st, c.due)
	if err != nil {
		return true, fmt.Errorf("look up retired keys: %w", err)
	}
	rep.Deleted, rep.Missing = there, gone
	isDue := make(map[string]bool, len(c.due))
	for _, k := range c.due {
		isDue[k] = true
	}
	for _, r := range c.sn.Retired {
		if isDue[r.Key] && format.RetiredOverAnHourAgo(r.RetiredAt, rep.Now) {
			rep.RetiredLinesDropped++
		}
	}
	if c.apply {
		names, _, err := c.forgetRecords(rep.Now)
		if err != nil {
			return true, err
		}
		rep.Forget.RecordsPlanned = 2 * len(names) // step 0 and step 6
	}
	fr, err := complete(c.ctx, c.st, Options{DryRun: true, Progress: c.opts.Progress, Warn: c.opts.Warn},
		dryRunPlan(rep.Now, c.due, c.forget, c.opts.Apply))
	rep.Fold = &fr
	return true, err
}

// markForgotten is step 0: with Apply, the forget record retired, then
// written. The line comes first, so no record is ever left that no
// collection deletes; a reader that finds the line before the record (or
// the record's PUT failed) cannot tell what was forgotten and trusts no
// cached signature (index/forgotten.go), which costs it reads, never bytes.
func (c *collection) markForgotten() (bool, error) {
	if !c.apply {
		return false, nil
	}
	// Its hour runs from now, not from the plan's start: readers heed it
	// for that hour after the lines and keys go, which is after now. The
	// closing record (step 6) is dated after the first, so its name is
	// another.
	at := max(c.st.Clock().NowMs(), c.rep.Now, c.markedAt+1)
	c.markedAt = at
	names, texts, err := c.forgetRecords(at)
	if err != nil {
		return true, err
	}
	res, err := c.st.UpdateRecord(c.ctx, format.RetiredKey, func(old []byte, _ bool) ([]byte, error) {
		rec := format.ParseRetiredRecord(old)
		for _, name := range names {
			rec.Add(format.RetiredLine{RetiredAt: at, Key: name})
		}
		return rec.Text(), nil
	})
	c.rep.CASTries += res.Tries
	if err != nil {
		return true, fmt.Errorf("forget: retire the forget record %s: %w", names[0], err)
	}
	for i, name := range names {
		if err := c.st.Put(c.ctx, name, texts[i]); err != nil {
			return true, fmt.Errorf("forget: write the forget record %s: %w", name, err)
		}
	}
	c.rep.Forget.Records = append(c.rep.Forget.Records, names...)
	return false, nil
}

// forgetRecords encodes the forget records of the objects to forget at
// at, one per format.MaxForgottenObjects of them.
func (c *collection) forgetRecords(at int64) (names []string, texts [][]byte, err error) {
	var objs []format.ForgottenObject
	for obj, kinds := range c.forget.objects {
		for k, on := range kinds {
			if on {
				objs = append(objs, format.ForgottenObject{Kind: format.Kind(k), Object: obj})
			}
		}
	}
	for len(objs) > 0 {
		n := min(len(objs), format.MaxForgottenObjects)
		name, text, err := format.ForgottenRecord{At: at, Objects: objs[:n]}.Encode()
		if err != nil {
			return nil, nil, fmt.Errorf("forget: %w", err)
		}
		names, texts, objs = append(names, name), append(texts, text), objs[n:]
	}
	return names, texts, nil
}

// dropJournal is step 1: the journal lines folded past their hour and, with
// Apply, the forgotten objects' dropped.
func (c *collection) dropJournal() (bool, error) {
	tries, expiredN, forgotN, err := dropJournalLines(c.ctx, c.st, c.forget, c.apply)
	c.rep.CASTries += tries
	c.rep.JournalLinesDropped = expiredN
	if c.apply {
		c.rep.Forget.Lines = forgotN
	}
	return false, err
}

// deleteDue is step 2: what was retired over an hour ago deleted. A key a
// HEAD still finds after its DELETE keeps its retired line; a failure is
// returned after step 3 has dropped the lines of the keys gone.
func (c *collection) deleteDue() (bool, error) {
	del, err := deleteKeys(c.ctx, c.st, c.due, c.prog, "delete")
	c.rep.Deleted, c.rep.Missing, c.rep.Failed = del.gone, del.missing, del.kept
	c.gone = make(map[string]bool, len(del.gone)+len(del.missing))
	for _, k := range del.gone {
		c.gone[k] = true
	}
	for _, k := range del.missing {
		c.gone[k] = true
	}
	c.delErr = err
	return false, nil
}

// dropRetiredLines is step 3: the retired lines of the keys step 2 found
// gone dropped, and no other.
func (c *collection) dropRetiredLines() (bool, error) {
	rep := c.rep
	if len(c.gone) > 0 {
		res, err := c.st.UpdateRecord(c.ctx, format.RetiredKey, func(old []byte, _ bool) ([]byte, error) {
			rec := format.ParseRetiredRecord(old)
			n := len(rec.Lines)
			rec.Lines = slices.DeleteFunc(rec.Lines, func(l format.RecordLine[format.RetiredLine]) bool {
				return !l.Bad() && c.gone[l.Line.Key] && format.RetiredOverAnHourAgo(l.Line.RetiredAt, rep.Now)
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
			return true, fmt.Errorf("drop retired lines: %w", err)
		}
	}
	return false, c.delErr
}

// fold is step 4: a complete fold, leaving the forgotten objects' entries
// out.
func (c *collection) fold() (bool, error) {
	var h *hooks
	if c.apply {
		h = &hooks{drop: c.forget.names, gone: c.forget.names}
	}
	fr, err := complete(c.ctx, c.st, Options{Progress: c.opts.Progress, Warn: c.opts.Warn}, h)
	c.rep.Fold = &fr
	return false, err
}

// deleteForgotten is step 5: with Apply, the forgotten objects' keys
// deleted, once no live list names them.
func (c *collection) deleteForgotten() (bool, error) {
	if !c.apply {
		return true, nil
	}
	del, err := deleteKeys(c.ctx, c.st, c.forget.keys, c.prog, "forget")
	c.rep.Forget.Deleted = len(del.gone) + len(del.missing)
	c.rep.Forget.Failed = del.kept
	if err != nil {
		return true, fmt.Errorf("forget: %w", err)
	}
	return false, nil // step 6: the closing forget record
}

// dryRunPlan makes a collection's dry run plan its fold on the store the
// collection would leave, not on the store as it is: the journal without the
// lines step 1 drops (folded past their hour at now, and with apply the
// forgotten objects'), the pack listing without the keys step 2 deletes
// (due) and the retired record without their lines (step 3), and with apply
// the listing of entries without the forgotten objects' keys (step 5
// deletes them after the fold, which leaves them out).
func dryRunPlan(now int64, due []string, forget *forgetPlan, apply bool) *hooks {
	isDue := make(map[string]bool, len(due))
	for _, k := range due {
		isDue[k] = true
	}
	h := &hooks{plan: func(sn *store.Snapshot) {
		sn.Journal = slices.DeleteFunc(slices.Clone(sn.Journal), func(l format.JournalLine) bool {
			return l.Expired(now) || apply && forget.names(l.Key)
		})
		sn.Retired = slices.DeleteFunc(slices.Clone(sn.Retired), func(r format.RetiredLine) bool {
			return isDue[r.Key] && format.RetiredOverAnHourAgo(r.RetiredAt, now)
		})
		sn.Lists = slices.DeleteFunc(slices.Clone(sn.Lists), func(l store.ListInfo) bool { return isDue[l.Name] })
	}}
	if apply {
		h.drop, h.gone = forget.names, forget.names
	}
	return h
}

// retirable reports whether a key is of a kind the retired record holds
// (spec §13.4, §13.7): packs and their companions, entry lists, loose objects
// and raw chunks. The records, the marker, entry keys, the older one-list
// keys, operations and anything else are never deleted by a collection,
// whatever a (corrupt or hostile) retired record says.
func retirable(key string) bool {
	switch {
	case key == format.JournalKey || key == format.RetiredKey || key == format.LegacyFoldedMarker:
		return false
	case strings.HasPrefix(key, format.PackPrefix):
		return !strings.Contains(key, "/")
	case strings.HasPrefix(key, "loose/"), strings.HasPrefix(key, "nocompress/"):
		return !strings.Contains(key, "..")
	}
	return false
}

// planRetired returns the keys retired more than format.GracePeriod before
// now, sorted. A key retired twice counts from its latest retirement. A list
// the retired record names is never live (live means listed and not
// retired), and Complete never writes a list under a retired name, so no
// live list is ever planned for deletion. The records and the marker are
// refused outright, should a retired line name them.
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
		case format.RetiredOverAnHourAgo(at, now):
			due = append(due, key)
		default:
			rep.Waiting++
			if next := format.RetiredDueAt(at); rep.NextDue == 0 || next < rep.NextDue {
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
	res, err := st.UpdateRecord(ctx, format.JournalKey, func(old []byte, _ bool) ([]byte, error) {
		now := st.Clock().NowMs()
		rec := format.ParseJournalRecord(old)
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
