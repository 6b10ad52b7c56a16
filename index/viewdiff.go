package index

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"sync"

	"github.com/oxyfs/oxyfs/store/format"
)

// What changed between two views, for a watcher (oxyfs watch).
//
// A view is immutable, so one held (a ViewMark) is a state of the store
// the watcher can compare a later one with: the entries added and removed
// are the difference of the two sets (DiffKeys over ViewMark.Keys), at no
// request. A quiet refresh keeps the same view (Same), so a watcher's quiet
// poll costs what the refresh cost. Which signatures were replaced (their
// key written again: a re-sign) no set shows, as the key stays: the journal
// does, and a refresh already compares its lines with the view before's
// (journalmarks.go, R1). With WatchRefreshes on, each refresh also keeps
// what that comparison found (refreshLog), for TakeRefreshChanges.

// ViewMark is the view an index held at one moment.
type ViewMark struct{ v *view }

// Mark returns the current view, loading the index first if need be.
func (ix *Index) Mark(ctx context.Context) (ViewMark, error) {
	v, err := ix.current(ctx)
	if err != nil {
		return ViewMark{}, err
	}
	return ViewMark{v}, nil
}

// Same reports whether m and o are one view: nothing the tree shows
// changed between them (a refresh that found both records unchanged).
func (m ViewMark) Same(o ViewMark) bool { return m.v != nil && m.v == o.v }

// Mode is the view's mode (ModeFolded, ModePrefixListing, ModeDirectory).
func (m ViewMark) Mode() string {
	if m.v == nil {
		return ""
	}
	return m.v.mode
}

// Legacy reports whether the view reads the older one-list keys (sigs/…):
// no marker pack-legacy-folded.
func (m ViewMark) Legacy() bool { return m.v != nil && m.v.legacy }

// Folded reports whether the view holds its entries (ModeFolded): only
// then does Keys stream them. A view of the prefix modes holds none; its
// entries are what listing the per-object prefixes shows.
func (m ViewMark) Folded() bool { return m.v != nil && m.v.mode == ModeFolded }

// Keys streams the keys of a folded view's set (every live list ∪ every
// journal line), of the kinds asked (all if none), in key order, from the
// set in memory: no request, no allocation per key. Own writes are not
// included (a watcher writes none). Of a view that is not folded, it
// streams nothing.
func (m ViewMark) Keys(kinds ...format.Kind) KeyStream {
	s := &setKeys{}
	if !m.Folded() {
		return s
	}
	s.set = m.v.base
	for _, k := range format.Kinds {
		if len(kinds) == 0 || slices.Contains(kinds, k) {
			s.kinds = append(s.kinds, k)
		}
	}
	// In the order of their keys: by prefix.
	slices.SortFunc(s.kinds, func(a, b format.Kind) int {
		return strings.Compare(a.Prefix(), b.Prefix())
	})
	return s
}

// setKeys streams a set's keys: kind by kind, object by object, entry by
// entry (a kindSet is sorted by object then value, which is key order).
type setKeys struct {
	set   *entrySet
	kinds []format.Kind
	k     int // index into kinds
	i, j  int // object and entry within kinds[k]
	buf   []byte
	obj   int // the object buf's prefix is of (-1: none yet)
	pre   int // the length of the object's prefix in buf
	init  bool
}

func (s *setKeys) Next() ([]byte, bool) {
	if !s.init {
		s.init, s.obj = true, -1
	}
	for s.set != nil && s.k < len(s.kinds) {
		ks := &s.set.kinds[s.kinds[s.k]]
		if s.i >= ks.nObj() {
			s.k, s.i, s.j, s.obj = s.k+1, 0, 0, -1
			continue
		}
		if s.j < int(ks.first[s.i]) {
			s.j = int(ks.first[s.i])
		}
		if s.j >= int(ks.first[s.i+1]) {
			s.i++
			continue
		}
		if s.obj != s.i {
			ob := ks.obj(s.i)
			s.buf = append(s.buf[:0], s.kinds[s.k].Prefix()...)
			s.buf = hex.AppendEncode(s.buf, ob[:1])
			s.buf = append(s.buf, '/')
			s.buf = hex.AppendEncode(s.buf, ob[1:])
			s.buf = append(s.buf, '/')
			s.obj, s.pre = s.i, len(s.buf)
		}
		s.buf = s.set.vt.appendTo(s.buf[:s.pre], ks.vals[s.j])
		s.j++
		return s.buf, true
	}
	return nil, false
}

func (s *setKeys) Err() error { return nil }
func (s *setKeys) Close()     { s.set = nil }

// maxRefreshLog bounds the keys a refresh log holds between two takes;
// past it the log says every signature may have been replaced.
const maxRefreshLog = 1 << 16

// refreshLog keeps, while a watcher asks for it, the signature keys the
// refreshes since its last take showed replaced. Locks itself.
type refreshLog struct {
	mu     sync.Mutex          // protects the following
	on     bool                // WatchRefreshes was called
	sure   map[string]struct{} // a new line: written again
	unsure map[string]struct{} // a line gone: perhaps forgotten and put again
	all    bool                // a refresh could not tell
}

// RefreshChanges is what the refreshes since the last take showed of the
// signatures replaced.
type RefreshChanges struct {
	// Replaced are signatures with a new journal line: written again.
	Replaced []string
	// Unsure are signatures one of whose lines is gone, or whose object
	// a forget record new to the refresh names: a line past its hour
	// (nothing changed), or a collection that forgot the object, which a
	// writer may have put again since. Only the key's own time (its
	// Last-Modified) tells the two apart.
	Unsure []string
	// All says a refresh could not tell which signatures were replaced:
	// a view of the prefix modes (no set, nothing to compare the journal
	// with), a change of mode, or a refresh whose last look at the
	// records was older than its window (journalmarks.go R1), or more
	// keys than the log holds. Every signature may have been.
	All bool
}

// WatchRefreshes makes every refresh from now on keep what it showed of
// the signatures replaced, until TakeRefreshChanges takes it.
func (ix *Index) WatchRefreshes() {
	ix.changes.mu.Lock()
	ix.changes.on = true
	ix.changes.mu.Unlock()
}

// TakeRefreshChanges returns what the refreshes since the last take (or
// since WatchRefreshes) showed, and forgets it.
func (ix *Index) TakeRefreshChanges() RefreshChanges {
	l := &ix.changes
	l.mu.Lock()
	defer l.mu.Unlock()
	c := RefreshChanges{All: l.all}
	for k := range l.sure {
		c.Replaced = append(c.Replaced, k)
	}
	for k := range l.unsure {
		if _, ok := l.sure[k]; !ok {
			c.Unsure = append(c.Unsure, k)
		}
	}
	slices.Sort(c.Replaced)
	slices.Sort(c.Unsure)
	l.sure, l.unsure, l.all = nil, nil, false
	return c
}

// noteRefresh records what a refresh from prev to v showed of the
// signatures replaced, when a watcher asks; it runs under loadMu, before
// the signature cache takes the lines the comparison needs
// (sigCache.invalidateRefresh). It sends no request.
func (ix *Index) noteRefresh(prev, v *view, outlived bool) {
	l := &ix.changes
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.on || prev == nil || prev == v {
		return
	}
	if outlived || v.mode != ModeFolded || prev.mode != ModeFolded {
		l.all = true
		return
	}
	sure, unsure := v.journal.replacedSplit(prev.journal, v.journal.lineAt)
	gone, _ := v.journal.gone(prev.journal, v.journal.read)
	if l.sure == nil {
		l.sure, l.unsure = map[string]struct{}{}, map[string]struct{}{}
	}
	for _, k := range sure {
		l.sure[k] = struct{}{}
	}
	for _, k := range append(unsure, gone...) {
		l.unsure[k] = struct{}{}
	}
	if len(l.sure)+len(l.unsure) > maxRefreshLog {
		l.all, l.sure, l.unsure = true, nil, nil
	}
}

// noteForgotten records, when a watcher asks, the signatures of the
// objects a forget record new to this refresh names (forgotten.go): a
// collection forgot them, and a writer may have put them again since, in
// a way no journal line tells (journalView.gone's blind spot). all: a
// record that could not be read; every signature may have been.
func (ix *Index) noteForgotten(keys []string, all bool) {
	l := &ix.changes
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.on {
		return
	}
	if all {
		l.all = true
		return
	}
	if l.unsure == nil {
		l.sure, l.unsure = map[string]struct{}{}, map[string]struct{}{}
	}
	for _, k := range keys {
		l.unsure[k] = struct{}{}
	}
	if len(l.sure)+len(l.unsure) > maxRefreshLog {
		l.all, l.sure, l.unsure = true, nil, nil
	}
}

// replacedSplit is replaced, split: the keys with a line prev did not
// have (sure), and those with fewer lines than prev had (unsure: a line
// past its hour, or forgotten and put again).
func (jv *journalView) replacedSplit(prev *journalView, lines []lineAt) (sure, unsure []string) {
	if prev == nil {
		prev = noJournal
	}
	if jv == prev || jv.version == prev.version {
		return nil, nil
	}
	ks := &jv.set.kinds[format.KindSig]
	jv.each(format.KindSig, func(i, j int) {
		signer := jv.set.vt.str(ks.vals[j])
		p := prev.countOf(ks.obj(i), signer)
		c := jv.count(j)
		newer := c.newerThan(p)
		if !newer && lines != nil {
			at, _ := slices.BinarySearchFunc(lines, uint32(j), func(l lineAt, j uint32) int { return cmpU32(l.j, j) })
			fresh := 0
			for ; at < len(lines) && lines[at].j == uint32(j); at++ {
				if t := lines[at].at; t == 0 || t > prev.foldedMax {
					fresh++
				}
			}
			newer = fresh > int(p.unfolded)
		}
		key := func() string {
			return format.Entry{Kind: format.KindSig, Object: hexString(ks.obj(i)), Value: signer}.Key()
		}
		switch {
		case newer:
			sure = append(sure, key())
		case c.lines < p.lines && p.lines < jcountMax:
			unsure = append(unsure, key())
		}
	})
	return sure, unsure
}
