package sim

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
)

var nopWarn = func(string) {}

// drawWrites draws 1–n distinct entries, a third of them keys that exist
// already (a signature put again is a re-sign: same key, new bytes).
func (s *sim) drawWrites(n int) []index.Write {
	var ws []index.Write
	seen := map[string]bool{}
	for range 1 + s.rng.IntN(n) {
		var e format.Entry
		if k := s.existingKey(); k != "" && s.rng.IntN(3) == 0 {
			e, _ = format.ParseKey(k)
		} else {
			e, _ = s.randomKey()
		}
		if seen[e.Key()] {
			continue
		}
		seen[e.Key()] = true
		ws = append(ws, index.Write{Entry: e, Data: s.sigData(e.Kind)})
	}
	return ws
}

func writeKeys(ws []index.Write) []string {
	keys := make([]string, len(ws))
	for i, w := range ws {
		keys[i] = w.Entry.Key()
	}
	return keys
}

// opPut writes through the long-lived handle (index.PutBatch: keys, then
// one journal update through the group commit).
func (s *sim) opPut() error {
	ws := s.drawWrites(3)
	s.logf("#%d put (handle) %v", s.op, writeKeys(ws))
	return s.putThroughHandle(ws)
}

// putThroughHandle writes ws through the long-lived handle and tells the
// model what landed.
func (s *sim) putThroughHandle(ws []index.Write) error {
	keys := writeKeys(ws)
	for _, k := range keys {
		s.attempted[k]++
		s.ownEver[k] = true
	}
	for _, w := range ws {
		s.pend(w.Entry.Key(), w.Data)
	}
	err := s.h.PutBatch(s.ctx, ws)
	if err == nil {
		for _, w := range ws {
			if s.bs.own != nil {
				s.bs.own[w.Entry.Key()] = true
			}
			s.m.written(w.Entry.Key(), w.Data, true)
			s.hs.sure[w.Entry.Key()] = true
		}
		return nil
	}
	for _, k := range keys {
		s.hs.maybe[k] = true
	}
	return errors.Join(err, s.deriveKeys(keys))
}

// opPutAppend is a second writer of this implementation that does not use
// an index: store.Put of each key, then journal.Append of them all.
func (s *sim) opPutAppend() error {
	ws := s.drawWrites(3)
	keys := writeKeys(ws)
	s.logf("#%d put+append %v", s.op, keys)
	for _, w := range ws {
		s.pend(w.Entry.Key(), w.Data)
		if err := s.st.Put(s.ctx, w.Entry.Key(), w.Data); err != nil {
			return errors.Join(err, s.deriveKeys(keys)) // the writer stops: no journal line
		}
	}
	for _, k := range keys {
		s.attempted[k]++
	}
	if _, err := journal.Append(s.ctx, s.st, keys); err != nil {
		return errors.Join(err, s.deriveKeys(keys))
	}
	for _, w := range ws {
		s.m.written(w.Entry.Key(), w.Data, true)
	}
	return nil
}

// opOlderPut is a writer that predates the journal: the key only.
func (s *sim) opOlderPut() error {
	ws := s.drawWrites(2)
	keys := writeKeys(ws)
	s.logf("#%d older-put %v", s.op, keys)
	for _, w := range ws {
		s.pend(w.Entry.Key(), w.Data)
		if err := s.st.Put(s.ctx, w.Entry.Key(), w.Data); err != nil {
			return errors.Join(err, s.deriveKeys(keys))
		}
		s.m.written(w.Entry.Key(), w.Data, false)
	}
	return nil
}

// deriveKeys learns from the store what a failed write left: whether each
// key landed (and its bytes), and whether a journal line names it.
func (s *sim) deriveKeys(keys []string) error {
	jr, err := s.readJournal()
	if err != nil {
		return err
	}
	for _, k := range keys {
		data, err := s.inner.ReadAll(s.ctx, k)
		if err != nil {
			continue // did not land (a key never vanishes by a write: the entry-key check says if it did)
		}
		e, _ := format.ParseKey(k)
		if e.Kind != format.KindSig {
			data = nil
		}
		s.m.written(k, data, jr[k] != nil)
	}
	return nil
}

// deriveCoverage sets, for keys the model holds, whether a folded reader
// finds them: named by a journal line or by a live list.
func (s *sim) deriveCoverage(keys []string) error {
	jr, err := s.readJournal()
	if err != nil {
		return err
	}
	inLists, err := s.liveListKeys()
	if err != nil {
		return err
	}
	for _, k := range keys {
		if en := s.m.e[k]; en != nil {
			en.covered = jr[k] != nil || inLists[k]
		}
	}
	return nil
}

// deriveFold learns what a failed fold or collection left: whether the store
// is folded now, and which lagging keys a live list now holds.
func (s *sim) deriveFold() error {
	sn, err := s.clean.ReadSnapshot(s.ctx)
	if err != nil {
		return err
	}
	s.m.folded = s.m.folded || sn.Folded()
	lag := s.m.lag()
	if err := s.deriveCoverage(lag); err != nil {
		return err
	}
	for _, k := range lag {
		if en := s.m.e[k]; en != nil && en.covered {
			if s.quietList == nil {
				s.quietList = map[string]bool{}
			}
			s.quietList[k] = true
		}
	}
	return nil
}

// opPartial folds the journal's unfolded lines into a partial list.
func (s *sim) opPartial() error {
	res, err := journal.Partial(s.ctx, s.st)
	s.logf("#%d partial → list %q marked %d deferred %q", s.op, res.List, res.Marked, res.Deferred)
	return err
}

// opAppendBulk appends lines for every key until more than
// format.PartialFoldThreshold are unfolded, so that Append folds them into a
// partial list itself.
func (s *sim) opAppendBulk() error {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range s.m.e {
			if !yield(k) {
				return
			}
		}
	})
	if len(keys) == 0 || s.rng.IntN(3) != 0 { // a third of the draws: it costs ~40 appends
		s.logf("#%d append-bulk: skipped", s.op)
		return nil
	}
	sn, err := s.clean.ReadSnapshot(s.ctx)
	if err != nil {
		return err
	}
	unfolded, calls := sn.UnfoldedLines(), 0
	if unfolded > format.PartialFoldThreshold {
		// Past the threshold already: the last partial fold computed the
		// list of a retired partial list and waits for a collection to
		// delete it (checked when it happened). Nothing to append here; a
		// loop of no appends must not count the keys as journaled (found
		// by the final 1e6 run, seed 3126 mem op 1090).
		s.logf("#%d append-bulk: skipped, %d unfolded lines already", s.op, unfolded)
		return nil
	}
	var last journal.AppendResult
	for unfolded <= format.PartialFoldThreshold {
		res, err := journal.Append(s.ctx, s.st, keys)
		calls++
		for _, k := range keys {
			s.attempted[k]++
		}
		if err != nil {
			return err
		}
		last = res
		unfolded += len(keys)
	}
	for _, k := range keys {
		s.m.e[k].covered = true // a journal line names it now
	}
	s.logf("#%d append-bulk %d keys × %d appends → partial %q marked %d", s.op, len(keys), calls, last.PartialList, last.PartialLines)
	after, err := s.clean.ReadSnapshot(s.ctx)
	if err != nil {
		return err
	}
	if n := after.UnfoldedLines(); n > format.PartialFoldThreshold {
		if _, retired := after.RetiredSet()[last.PartialList]; !retired {
			s.violate("partial-threshold", "%d unfolded lines after an append past %d (partial list %q)", n, format.PartialFoldThreshold, last.PartialList)
		}
	}
	return nil
}

// foldDone updates the model after a complete fold that returned.
func (s *sim) foldDone(rep *fold.Report, err error) error {
	if err != nil || rep == nil {
		return errors.Join(err, s.deriveFold())
	}
	switch {
	case rep.Deferred == "":
		s.m.completeFold()
		s.failedForget = false
		s.quietList = nil
	case rep.Unfolded:
		// The fold's list was retired too long ago to revive and the lists
		// it read held keys that are gone: it retired them, and readers
		// list the prefixes until a later fold (fold/revive.go).
		s.m.folded = false
		s.lastDeferred = s.op
	default:
		s.lastDeferred = s.op
	}
	return nil
}

func foldSummary(r *fold.Report) string {
	if r == nil {
		return "no fold"
	}
	d := ""
	switch {
	case r.Unfolded:
		d = " DEFERRED, left unfolded"
	case r.Deferred != "":
		d = " DEFERRED"
	case r.List.Revived:
		d = " revived"
	}
	return fmt.Sprintf("list %s (%d entries, unchanged %v) retired %v marked %d%s", short(r.List.Name), r.List.Entries, r.List.Unchanged, shortAll(r.Retired), r.Marked, d)
}

func short(name string) string {
	if len(name) > 17 {
		return name[:13] + "…" + name[len(name)-8:]
	}
	return name
}

func shortAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = short(n)
	}
	return out
}

// opFold is a complete fold (oxyfs fold).
func (s *sim) opFold() error {
	rep, err := fold.Complete(s.ctx, s.st, fold.Options{Warn: nopWarn})
	s.logf("#%d fold → %s", s.op, foldSummary(&rep))
	if err != nil {
		return s.foldDone(nil, err)
	}
	return s.foldDone(&rep, nil)
}

// opFoldDry is a dry run, then the real fold at once: the plan must be what
// the fold then does.
func (s *sim) opFoldDry() error {
	dry, err := fold.Complete(s.ctx, s.st, fold.Options{DryRun: true, Warn: nopWarn})
	if err != nil {
		return err
	}
	rep, err := fold.Complete(s.ctx, s.st, fold.Options{Warn: nopWarn})
	s.logf("#%d fold --dry-run → %s; fold → %s", s.op, foldSummary(&dry), foldSummary(&rep))
	if err != nil {
		return s.foldDone(nil, err)
	}
	if d := comparePlans(&dry, &rep); d != "" {
		s.violate("fold-dry-run", "the dry run planned what the fold did not do: %s", d)
	}
	return s.foldDone(&rep, nil)
}

// comparePlans compares a dry run's plan with what the real run did.
func comparePlans(dry, real *fold.Report) string {
	switch {
	case dry == nil || real == nil:
		if dry != real {
			return fmt.Sprintf("fold planned %v, done %v", dry != nil, real != nil)
		}
		return ""
	case dry.List.Name != real.List.Name || dry.List.Entries != real.List.Entries:
		return fmt.Sprintf("list %s (%d entries) planned, %s (%d) written", dry.List.Name, dry.List.Entries, real.List.Name, real.List.Entries)
	case dry.List.Unchanged != real.List.Unchanged:
		return fmt.Sprintf("list unchanged planned %v, done %v", dry.List.Unchanged, real.List.Unchanged)
	case !slices.Equal(sortedCopy(dry.Retired), sortedCopy(real.Retired)):
		return fmt.Sprintf("retired planned %v, done %v", dry.Retired, real.Retired)
	case dry.Marked != real.Marked:
		return fmt.Sprintf("marked planned %d, done %d", dry.Marked, real.Marked)
	case (dry.Deferred == "") != (real.Deferred == ""):
		return fmt.Sprintf("deferred planned %q, done %q", dry.Deferred, real.Deferred)
	case dry.Unfolded != real.Unfolded || dry.List.Revived != real.List.Revived:
		return fmt.Sprintf("unfolded/revived planned %v/%v, done %v/%v", dry.Unfolded, dry.List.Revived, real.Unfolded, real.List.Revived)
	case dry.LeftOut != real.LeftOut || dry.Dropped != real.Dropped:
		return fmt.Sprintf("left out/dropped planned %d/%d, done %d/%d", dry.LeftOut, dry.Dropped, real.LeftOut, real.Dropped)
	case dry.Legacy.Marker != real.Legacy.Marker:
		return fmt.Sprintf("marker planned %v, done %v", dry.Legacy.Marker, real.Legacy.Marker)
	}
	return ""
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

func gcSummary(r *fold.CollectReport) string {
	return fmt.Sprintf("deleted %v missing %v waiting %d, retired lines -%d, journal lines -%d, forget keys %v lines %d; fold: %s",
		shortAll(r.Deleted), shortAll(r.Missing), r.Waiting, r.RetiredLinesDropped, r.JournalLinesDropped, r.Forget.Keys, r.Forget.Lines, foldSummary(r.Fold))
}

// opGC is a collection (oxyfs gc).
func (s *sim) opGC() error {
	rep, err := fold.Collect(s.ctx, s.st, fold.CollectOptions{Warn: nopWarn})
	s.logf("#%d gc → %s", s.op, gcSummary(&rep))
	if err != nil {
		return s.foldDone(nil, err)
	}
	return s.foldDone(rep.Fold, nil)
}

// drawForget picks an object (one with entries, mostly) and maybe some kinds.
func (s *sim) drawForget() fold.ForgetObject {
	obj := objects[s.rng.IntN(len(objects))]
	if k := s.existingKey(); k != "" && s.rng.IntN(4) != 0 {
		e, _ := format.ParseKey(k)
		obj = e.Object
	}
	f := fold.ForgetObject{Object: obj}
	if s.rng.IntN(3) == 0 {
		f.Kinds = []format.Kind{format.KindSig}
		if s.rng.IntN(2) == 0 {
			f.Kinds = append(f.Kinds, format.Kinds[1+s.rng.IntN(format.NumKinds-1)])
		}
	}
	return f
}

// opGCDry is a collection's dry run, then the collection at once (a third
// of the time forgetting an object): the plan must be what it then does.
func (s *sim) opGCDry() error {
	opts := fold.CollectOptions{Warn: nopWarn}
	if s.rng.IntN(3) == 0 {
		opts.ForgetObjects, opts.Apply = []fold.ForgetObject{s.drawForget()}, true
	}
	opts.DryRun = true
	dry, err := fold.Collect(s.ctx, s.st, opts)
	if err != nil {
		return err
	}
	opts.DryRun = false
	s.noteForget(opts.ForgetObjects)
	rep, err := fold.Collect(s.ctx, s.st, opts)
	s.logf("#%d gc --dry-run %v → %s; gc → %s", s.op, opts.ForgetObjects, gcSummary(&dry), gcSummary(&rep))
	if err != nil {
		return s.forgetDone(opts.ForgetObjects, nil, err)
	}
	if d := compareCollect(&dry, &rep); d != "" {
		s.violate("gc-dry-run", "the dry run planned what the collection did not do: %s", d)
	}
	return s.forgetDone(opts.ForgetObjects, &rep, nil)
}

func compareCollect(dry, real *fold.CollectReport) string {
	// The dry run names what it would delete and what is gone already
	// (DESIGN §6), as the collection then reports them.
	planned := sortedCopy(append(slices.Clone(dry.Deleted), dry.Missing...))
	done := sortedCopy(append(slices.Clone(real.Deleted), real.Missing...))
	switch {
	case !slices.Equal(planned, done):
		return fmt.Sprintf("deletions planned %v, done %v", planned, done)
	case dry.RetiredLinesDropped != real.RetiredLinesDropped:
		return fmt.Sprintf("retired lines to drop %d, dropped %d", dry.RetiredLinesDropped, real.RetiredLinesDropped)
	case dry.JournalLinesDropped != real.JournalLinesDropped:
		return fmt.Sprintf("journal lines to drop %d, dropped %d", dry.JournalLinesDropped, real.JournalLinesDropped)
	case !slices.Equal(dry.Forget.Keys, real.Forget.Keys) || dry.Forget.Lines != real.Forget.Lines:
		return fmt.Sprintf("forget planned %v (%d lines), done %v (%d lines)", dry.Forget.Keys, dry.Forget.Lines, real.Forget.Keys, real.Forget.Lines)
	}
	if d := comparePlans(dry.Fold, real.Fold); d != "" {
		return "fold: " + d
	}
	return ""
}

// opGCForget is a collection that forgets an object a repository
// collection deleted (gc --forget-objects --apply).
func (s *sim) opGCForget() error {
	f := s.drawForget()
	s.noteForget([]fold.ForgetObject{f})
	rep, err := fold.Collect(s.ctx, s.st, fold.CollectOptions{ForgetObjects: []fold.ForgetObject{f}, Apply: true, Warn: nopWarn})
	s.logf("#%d gc --forget-objects %s --apply → %s", s.op, f, gcSummary(&rep))
	if err != nil {
		return s.forgetDone([]fold.ForgetObject{f}, nil, err)
	}
	return s.forgetDone([]fold.ForgetObject{f}, &rep, nil)
}

func (s *sim) noteForget(fs []fold.ForgetObject) {
	for _, f := range fs {
		s.forgetting[f.Object] = f.Kinds
		for k := range s.m.e {
			if forgets(k, f.Object, f.Kinds) {
				s.forgotten[k] = true
			}
		}
	}
}

// forgetDone updates the model after a collection that forgot objects.
func (s *sim) forgetDone(fs []fold.ForgetObject, rep *fold.CollectReport, err error) error {
	if err == nil && rep != nil {
		for _, f := range fs {
			s.m.forget(f.Object, f.Kinds)
		}
		s.forgotOK = len(fs) > 0
		if rep.Fold == nil {
			return nil
		}
		return s.foldDone(rep.Fold, nil)
	}
	s.failedForget = s.failedForget || len(fs) > 0
	// Failed: learn which keys are gone, and whether the others are still
	// found by a folded reader (their lines may be dropped already).
	var left []string
	for _, f := range fs {
		for k := range s.m.e {
			if !forgets(k, f.Object, f.Kinds) {
				continue
			}
			if ok, xerr := s.inner.Exists(s.ctx, k); xerr == nil && !ok {
				delete(s.m.e, k)
			} else {
				left = append(left, k)
			}
		}
	}
	if s.bs.hist != nil && len(left) > 0 {
		// The collection's first step may have dropped the lines of keys it
		// then failed to delete: a write of one that the handle has not
		// seen is told by no line any more, as an older writer's is.
		lines, jerr := s.readJournal()
		if jerr != nil {
			return errors.Join(err, jerr)
		}
		for _, k := range left {
			if lines[k] == nil {
				s.bs.pinned[k] = true
			}
		}
	}
	return errors.Join(err, s.deriveCoverage(left), s.deriveFold())
}

// opClock moves the clock every store handle shares.
func (s *sim) opClock() error {
	d := clockSteps[s.rng.IntN(len(clockSteps))]
	s.clk.Advance(d)
	s.logf("#%d clock +%v (now +%v)", s.op, d, msDur(s.clk.NowMs()-t0))
	return nil
}

// opRefresh refreshes the long-lived handle; the check after it holds its
// view to exactly the model's.
func (s *sim) opRefresh() error {
	err := s.h.Refresh(s.ctx)
	s.logf("#%d refresh (handle)", s.op)
	if err == nil {
		s.exactHandle = "handle-refresh"
	}
	return err
}

// opReopen closes the long-lived handle and opens a new one (whose mode is
// then the store's); the check after it holds its view to the model's.
func (s *sim) opReopen() error {
	s.logf("#%d reopen handle", s.op)
	if err := s.openHandle(); err != nil {
		return err
	}
	s.exactHandle = "handle-open"
	return nil
}
