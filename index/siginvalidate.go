package index

import (
	"slices"

	"github.com/oxyfs/oxyfs/store/format"
)

// invalidate forgets a key's bytes and size.
func (c *sigCache) invalidate(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.staleLocked(key)
	c.changedLocked(key)
	c.removeLocked(key)
	c.dropSizeLocked(key)
}

// recheck has the next read of key read its bytes again and compare them
// with the last ones read (sigMeta.recheck): its bytes are dropped, a read
// in flight is not kept, the copy open readers hold is shared no more (a
// new OpenSig reads the key, the held handles keep theirs), and the mount
// is told to look the name up again (its size is asked anew); the version
// does not move.
func (c *sigCache) recheck(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.staleLocked(key)
	c.removeLocked(key)
	delete(c.readers.open, key) // its handles keep it (release checks it is theirs)
	if m, ok := c.sizes[key]; ok {
		m.recheck = true
		c.sizes[key] = m
	}
	c.watch.noteLocked(key)
}

func (c *sigCache) clearAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.reading {
		c.staleLocked(k)
	}
	c.allChangedLocked()
	c.ll.Init()
	clear(c.m)
	c.clearSizesLocked()
	c.bytes = 0
}

// invalidateRefresh drops what a refresh shows may have changed (R1 in
// journalmarks.go): a signature another writer replaced has a new journal
// line (replaced), or one of its fresh lines follows a line of prev gone
// (gone). A directory keeps no journal, and a refresh whose last look is
// older than its window (outlived) cannot tell a line that came and went
// since: the cache starts over. It reports whether a line of prev is gone
// or a list prev held is no longer live: a collection may have forgotten
// signatures the cache holds (Index.dropAbsent).
//
// appends is what this index's own appends to the journal tell
// (ownlines.go): when they alone changed the journal since prev, a key
// whose last change was its own write keeps its version and bytes; a key
// that lacks an own line since prev lost it to a collection and is
// dropped.
func (c *sigCache) invalidateRefresh(prev, v *view, outlived bool, appends ownLines) (absent bool) {
	at, read := v.journal.take()
	if prev == nil {
		return false
	}
	if v.mode == ModeDirectory || outlived {
		c.clearAll()
		return false
	}
	for _, k := range v.journal.replaced(prev.journal, at) {
		if appends.only[k] && c.lastOwn(k) {
			continue // the line of this handle's own write: its bytes are cached
		}
		c.invalidate(k)
	}
	keys, vanished := v.journal.gone(prev.journal, read)
	for _, k := range keys {
		c.invalidate(k)
	}
	lost := v.journal.lacking(prev.journal, at, appends.since)
	for _, k := range lost {
		c.invalidate(k)
	}
	return vanished || len(lost) > 0 || prev.mode != v.mode || !subset(prev.listNames, v.listNames)
}

// subset reports whether every name of a is in b.
func subset(a, b []string) bool {
	for _, n := range a {
		if !slices.Contains(b, n) {
			return false
		}
	}
	return true
}

// dropAbsent drops from the signature cache (bytes and size, as a change)
// every signature a folded view v does not hold and this handle did not
// write since: a collection forgot it. A signature put again later has a
// line the refresh that sees it compares with v, which has none. In the
// prefix modes a refresh drops the listings, so what the store holds is
// not known until a lookup lists it again; the journal's lines (gone)
// are what tells there.
func (ix *Index) dropAbsent(v *view) {
	if v.mode != ModeFolded {
		return
	}
	c := ix.sigs
	c.mu.Lock()
	keys := make([]string, 0, len(c.sizes)+len(c.m))
	for k := range c.sizes {
		keys = append(keys, k)
	}
	for k := range c.m {
		if _, ok := c.sizes[k]; !ok {
			keys = append(keys, k)
		}
	}
	c.mu.Unlock()
	for _, k := range keys {
		e, err := format.ParseKey(k)
		if err != nil {
			continue
		}
		if _, ok := v.base.lookup(e.Kind, e.Object, e.Value); ok || ix.own.has(e) {
			continue
		}
		c.invalidate(k)
	}
}
