package sim

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// handleState is what the model says the long-lived handle may show
// between refreshes: the view it was held to at its last refresh (snap),
// plus its own writes since — those that returned success (sure: shown at
// once) and those that failed (maybe: shown or not).
type handleState struct {
	snap, sure, maybe map[string]bool
	existed           map[string]bool // every key E held since (a prefix-mode handle's lazy listings may show any)
	// want: right after a refresh or an open, exactly the keys the handle
	// must show (handleWant: the model's, with the two allowed
	// differences). The byte check reads these, no others.
	want map[string]bool
}

// jcount is one key's journal lines: unfolded, and folded per folded-at.
type jcount struct {
	unfolded int
	folded   map[int64]int
}

// observed is what the checks read of the store after an operation.
type observed struct {
	now     int64
	journal map[string]*jcount
	retired map[string]int64 // key -> latest retired-at
	lists   map[string]bool  // entry lists that exist
}

// readJournal reads the journal through the clean store.
func (s *sim) readJournal() (map[string]*jcount, error) {
	data, _, err := s.clean.ReadRecord(s.ctx, format.JournalKey)
	if err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	lines, bad := format.ParseJournal(data)
	if bad.Count > 0 {
		return nil, fmt.Errorf("journal has %d lines that do not parse: %w", bad.Count, bad.First[0])
	}
	out := map[string]*jcount{}
	for _, l := range lines {
		c := out[l.Key]
		if c == nil {
			c = &jcount{folded: map[int64]int{}}
			out[l.Key] = c
		}
		if l.FoldedAt == 0 {
			c.unfolded++
		} else {
			c.folded[l.FoldedAt]++
		}
	}
	return out, nil
}

// liveListKeys reads every live list (complete or partial) and returns the
// union of their keys.
func (s *sim) liveListKeys() (map[string]bool, error) {
	sn, err := s.clean.ReadSnapshot(s.ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, l := range sn.LiveLists() {
		data, err := s.inner.ReadAll(s.ctx, l.Name)
		if err != nil {
			return nil, fmt.Errorf("read list %s: %w", l.Name, err)
		}
		keys, err := format.DecodeEntryListAll(data)
		if err != nil {
			return nil, fmt.Errorf("decode list %s: %w", l.Name, err)
		}
		for _, k := range keys {
			out[k] = true
		}
	}
	return out, nil
}

// observe reads the journal, the retired record and the entry lists that
// exist, without faults and without counting.
func (s *sim) observe() (observed, error) {
	o := observed{now: s.clk.NowMs(), retired: map[string]int64{}, lists: map[string]bool{}}
	var err error
	if o.journal, err = s.readJournal(); err != nil {
		return o, err
	}
	data, _, err := s.clean.ReadRecord(s.ctx, format.RetiredKey)
	if err != nil && !isNotFound(err) {
		return o, fmt.Errorf("read retired record: %w", err)
	}
	rl, _ := format.ParseRetired(data)
	for _, r := range rl {
		if at, ok := o.retired[r.Key]; !ok || r.RetiredAt > at {
			o.retired[r.Key] = r.RetiredAt
		}
	}
	names, err := s.listInner(format.PackPrefix)
	if err != nil {
		return o, err
	}
	for _, n := range names {
		if _, _, ok := format.ParseEntryListName(n); ok {
			o.lists[n] = true
		}
	}
	return o, nil
}

// listInner lists every key under prefix in the bucket itself.
func (s *sim) listInner(prefix string) ([]string, error) {
	var keys []string
	it := s.inner.List(&blobListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(s.ctx)
		if isEOF(err) {
			return keys, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %q: %w", prefix, err)
		}
		keys = append(keys, obj.Key)
	}
}

// walk reads a handle's whole tree through its ReadDir API: every entry
// key under the six kinds, and the signature keys by-signer/ names.
func walk(ctx context.Context, ix *index.Index) (keys, bySigner map[string]bool, err error) {
	keys, bySigner = map[string]bool{}, map[string]bool{}
	for _, kind := range format.Kinds {
		hhs, err := ix.ReadDir(ctx, kind.String())
		if err != nil {
			return nil, nil, fmt.Errorf("readdir %s: %w", kind, err)
		}
		for _, hh := range hhs {
			dir := path.Join(kind.String(), hh.Name)
			rests, err := ix.ReadDir(ctx, dir)
			if err != nil {
				return nil, nil, fmt.Errorf("readdir %s: %w", dir, err)
			}
			for _, rest := range rests {
				odir := path.Join(dir, rest.Name)
				files, err := ix.ReadDir(ctx, odir)
				if err != nil {
					return nil, nil, fmt.Errorf("readdir %s: %w", odir, err)
				}
				for _, f := range files {
					keys[odir+"/"+f.Name] = true
				}
			}
		}
	}
	signers, err := ix.ReadDir(ctx, index.BySigner)
	if err != nil {
		return nil, nil, fmt.Errorf("readdir %s: %w", index.BySigner, err)
	}
	for _, sg := range signers {
		dir := index.JoinPath(index.BySigner, sg.Name)
		links, err := ix.ReadDir(ctx, dir)
		if err != nil {
			return nil, nil, fmt.Errorf("readdir %s: %w", dir, err)
		}
		for _, l := range links {
			if !format.ValidObjectID(l.Name) {
				return nil, nil, fmt.Errorf("%s/%s: not an object id", dir, l.Name)
			}
			bySigner[keyOf(format.KindSig, l.Name, sg.Name)] = true
		}
	}
	return keys, bySigner, nil
}

func sigKeys(keys map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range keys {
		if e, err := format.ParseKey(k); err == nil && e.Kind == format.KindSig {
			out[k] = true
		}
	}
	return out
}

// compareView holds a view to exactly the expected set.
func (s *sim) compareView(kind string, got, want map[string]bool) bool {
	missing, extra := diff(want, got)
	if len(missing)+len(extra) == 0 {
		return true
	}
	s.violateView(kind, missing, extra, fmt.Sprintf("folded=%v: %s", s.m.folded, describeDiff(missing, extra)))
	return false
}

// check runs every check after an operation.
func (s *sim) check() {
	ctx := s.ctx
	t := time.Now()
	full := s.isFullCheck()
	written := s.inj.takeWritten()
	records := full || s.sn == nil // a key outside the six kinds written: the records, lists or journal may have changed
	var entryWritten []string
	for k := range written {
		if isEntryKey(k) {
			entryWritten = append(entryWritten, k)
		} else {
			records = true
		}
	}
	if records {
		sn, err := s.clean.ReadSnapshot(ctx)
		if err != nil {
			s.violate("observe", "snapshot: %v", err)
			return
		}
		s.sn = sn
	}
	sn := s.sn
	// Folded: as the model predicts; after a fault the store says.
	switch {
	case s.opFault == nil && sn.Folded() != s.m.folded:
		s.violate("folded", "store folded=%v, model folded=%v (live lists %v)", sn.Folded(), s.m.folded, sn.LiveLists())
	case s.m.folded && !sn.Folded():
		s.violate("folded", "the store was folded and is not any more (live lists %v)", sn.LiveLists())
	}
	s.m.folded = s.m.folded || sn.Folded()
	s.liveNow = map[string]bool{}
	for _, l := range sn.LiveLists() {
		s.liveNow[l.Name] = true
	}

	// The per-object keys are the truth: exactly the model's.
	if full {
		s.checkEntryKeys()
	} else {
		s.checkEntryKeysOf(entryWritten)
	}
	s.checkTime("store", &t)

	want := s.m.expected()
	// A fresh reader's view is the store's and the clock's: opened after
	// every operation that wrote or moved the clock (in byte mode every
	// one moves it 1 ms), and at the cadence.
	if now := s.clk.NowMs(); full || len(written) > 0 || now != s.freshAt {
		s.freshAt = now
		s.checkFresh(want)
		s.res.FreshChecks++
	} else {
		s.freshDraws()
	}
	s.checkTime("fresh", &t)
	s.checkHandle(want)
	s.checkTime("handle", &t)

	obs := s.obs
	obs.now = s.clk.NowMs()
	if records {
		// The journal and the retired record as the snapshot read them
		// (nothing wrote since); the entry lists listed in the bucket
		// itself when a list may have come or gone.
		lists := full || slices.ContainsFunc(slices.Collect(maps.Keys(written)), func(k string) bool {
			_, _, ok := format.ParseEntryListName(k)
			return ok
		})
		var err error
		if obs, err = s.observeSnapshot(sn, lists); err != nil {
			s.violate("observe", "%v", err)
			return
		}
	}
	s.checkJournal(obs)
	s.checkRetired(obs)
	s.obs = obs
	s.checkTime("store", &t)
	if s.bs.hist != nil {
		began := time.Now()
		s.checkBytes()
		s.res.OpTime["check-bytes"] += time.Since(began)
		s.checkTime("bytes", &t)
	}
	if full {
		s.res.FullChecks++
	}
}

// checkFresh opens a fresh reader on the store and holds its whole tree,
// a few Stats and a signature's bytes to the model.
func (s *sim) checkFresh(want map[string]bool) {
	ix, err := index.Open(s.ctx, s.clean, index.Options{Warn: nopWarn, ReadAhead: -1})
	if err != nil {
		s.violate("fresh-open", "%v", err)
		return
	}
	defer ix.Close()
	got, bySigner, err := walk(s.ctx, ix)
	if err != nil {
		s.violate("walk-error", "fresh reader: %v", err)
		return
	}
	if !s.compareView("fresh-view", got, want) {
		return
	}
	if missing, extra := diff(sigKeys(got), bySigner); len(missing)+len(extra) > 0 {
		s.violate(index.BySigner, "by-signer/ differs from sig/: %s", describeDiff(missing, extra))
	}
	for range 4 {
		_, k := s.randomKey()
		_, err := ix.Stat(s.ctx, k)
		if (err == nil) != want[k] {
			s.violateView("fresh-stat", boolKeys(want[k], k), boolKeys(!want[k], k), fmt.Sprintf("Stat %s: err=%v, model says present=%v", k, err, want[k]))
		}
	}
	if k := s.existingKey(); k != "" && want[k] {
		e, _ := format.ParseKey(k)
		if e.Kind == format.KindSig {
			data, err := ix.ReadSig(s.ctx, e)
			if err != nil || string(data) != string(s.m.e[k].data) {
				s.violate("fresh-sig-bytes", "ReadSig %s = %q, %v; model %q", k, data, err, s.m.e[k].data)
			}
		}
	}
}

func boolKeys(b bool, k string) []string {
	if b {
		return []string{k}
	}
	return nil
}

// checkHandle holds the long-lived handle to the model: exactly right after
// a refresh or an open, within bounds between refreshes.
func (s *sim) checkHandle(want map[string]bool) {
	view, bySigner, err := walk(s.ctx, s.h)
	if err != nil {
		s.hs.want = nil
		s.violate("walk-error", "handle: %v", err)
		return
	}
	if s.exactHandle != "" {
		// Between refreshes a handle in the prefix modes lists lazily: a
		// directory first read after a write shows the store of that
		// moment while by-signer/ shows its one earlier scan, so the two
		// agree only right after a refresh or an open.
		if missing, extra := diff(sigKeys(view), bySigner); len(missing)+len(extra) > 0 {
			s.violate(index.BySigner, "handle: by-signer/ differs from sig/: %s", describeDiff(missing, extra))
		}
		hw := s.handleWant(want, view)
		s.compareView(s.exactHandle, view, hw)
		s.hs = handleState{snap: view, sure: map[string]bool{}, maybe: map[string]bool{}, want: hw}
		return
	}
	lower := union(s.hs.snap, s.hs.sure)
	upper := union(lower, s.hs.maybe)
	if s.hs.existed == nil {
		s.hs.existed = map[string]bool{}
	}
	for k := range s.m.e {
		s.hs.existed[k] = true
	}
	if s.h.Status().Mode != index.ModeFolded {
		upper = union(upper, s.hs.existed) // listings made since show the store as it was then
	}
	missing, _ := diff(lower, view)
	_, extra := diff(upper, view)
	if len(missing)+len(extra) > 0 {
		s.violateView("handle-stale", missing, extra, fmt.Sprintf("between refreshes (mode %s): %s", s.h.Status().Mode, describeDiff(missing, extra)))
	}
}

// checkJournal: no journal line lost. Per key, a folded line stays (with
// its folded-at) until past its hour; an unfolded one stays, unfolded or
// folded now; lines appear only for keys this operation appended, as many
// as it appended (more only after a fault: a lost answer may duplicate a
// line); a successful forgetting removes every line of its keys.
func (s *sim) checkJournal(obs observed) {
	prev, cur := s.obs.journal, obs.journal
	keys := union(setOf(slices.Collect(maps.Keys(prev))), setOf(slices.Collect(maps.Keys(cur))))
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		p, c := prev[k], cur[k]
		if p == nil {
			p = &jcount{folded: map[int64]int{}}
		}
		if c == nil {
			c = &jcount{folded: map[int64]int{}}
		}
		if s.isForgetting(k) {
			// (Byte mode's forget-reput appends a line for a key after
			// forgetting it: those are allowed.)
			if s.forgotOK && (c.unfolded > s.attempted[k] || len(c.folded) > 0) {
				s.violate("journal-forgotten-kept", "%s: forgotten, still has %d unfolded and %v folded lines", k, c.unfolded, c.folded)
			}
			continue
		}
		newlyFolded := 0
		for at, n := range c.folded {
			if d := n - p.folded[at]; d > 0 {
				if at != obs.now {
					s.violate("journal-folded-at", "%s: %d lines folded at %d, not now (%d)", k, d, at, obs.now)
				}
				newlyFolded += d
			}
		}
		for at, n := range p.folded {
			if c.folded[at] < n && obs.now-at <= format.GracePeriod.Milliseconds() {
				s.violate("journal-line-lost", "%s: a line folded at +%v dropped at +%v, within its hour", k, msDur(at-t0), msDur(obs.now-t0))
			}
		}
		added := c.unfolded + newlyFolded - p.unfolded
		switch {
		case added < 0:
			s.violate("journal-line-lost", "%s: %d unfolded lines before, %d unfolded + %d newly folded after", k, p.unfolded, c.unfolded, newlyFolded)
		case s.opFired == 0 && added != s.attempted[k]:
			s.violate("journal-line-count", "%s: %d lines added, %d appended", k, added, s.attempted[k])
		case added > 2*s.attempted[k]:
			s.violate("journal-line-count", "%s: %d lines added, %d appended (a fault fired)", k, added, s.attempted[k])
		}
	}
}

func (s *sim) isForgetting(key string) bool {
	for obj, kinds := range s.forgetting {
		if forgets(key, obj, kinds) {
			return true
		}
	}
	return false
}

// checkRetired: nothing is deleted within its hour. An entry list that
// existed and is gone must have been retired over an hour ago; a retired
// line is dropped only once its key is gone.
func (s *sim) checkRetired(obs observed) {
	grace := format.GracePeriod.Milliseconds()
	for name := range s.obs.lists {
		if obs.lists[name] {
			continue
		}
		at, retired := s.obs.retired[name]
		switch {
		case !retired:
			s.violate("list-deleted-live", "%s deleted but never retired", name)
		case obs.now-at <= grace:
			s.violate("list-deleted-early", "%s deleted at +%v, retired at +%v (within its hour)", name, msDur(obs.now-t0), msDur(at-t0))
		}
	}
	for name, at := range s.obs.retired {
		if _, still := obs.retired[name]; still {
			continue
		}
		// A key may come back after its deletion: a fold whose set is the
		// same writes the same name afresh, as a live list.
		if ok, err := s.inner.Exists(s.ctx, name); err == nil && ok && !s.liveNow[name] {
			s.violate("retired-line-dropped", "retired line of %s (retired at +%v) dropped while the key exists", name, msDur(at-t0))
		}
	}
}

// handleWant is what the long-lived handle must show right after a refresh
// or an open, where it may differ from a fresh reader (want) in exactly two
// ways the design allows:
//   - it fell back to listing prefixes (a live list it could not read:
//     index/load.go): it then shows every key that exists, older writers'
//     included — the truth, as any reader of a store that is not folded;
//   - a failed fold wrote a list and changed neither record (quietList):
//     a refresh within the trust window may not see that list yet, so the
//     lagging keys it alone covers may be shown or not.
func (s *sim) handleWant(want, view map[string]bool) map[string]bool {
	if s.m.folded && s.h.Status().Mode == index.ModePrefixListing {
		all := make(map[string]bool, len(s.m.e))
		for k := range s.m.e {
			all[k] = true
		}
		return all
	}
	if len(s.quietList) == 0 {
		return want
	}
	out := make(map[string]bool, len(want))
	for k := range want {
		if !s.quietList[k] || view[k] {
			out[k] = true
		}
	}
	return out
}
