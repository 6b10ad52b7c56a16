package index

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/oxyfs/oxyfs/store/format"
)

// overlay holds this handle's own writes (spec §13.7: a handle "adds what it
// writes itself"), merged into every lookup. A refresh drops the entries the
// new base holds, and every entry that landed before the refresh began
// (mark): its journal line landed before the refresh read the journal, so
// the new view shows it — unless it left the store since (a collection
// forgot its object), and then the handle must not show it either. The
// overlay stays small: its size is the writes since the last refresh.
// Lookups by key are O(1); directory reads sort it lazily.
type overlay struct {
	mu     sync.Mutex                      // protects the following; a leaf: nothing else is locked under it
	m      map[string]ownEntry             // guarded by mu
	seq    uint64                          // the next add's sequence number; guarded by mu
	sorted [format.NumKinds][]format.Entry // by (Object, Value), valid unless dirty; guarded by mu
	dirty  bool                            // guarded by mu
}

// ownEntry is an own write and the sequence number of the add that landed it.
type ownEntry struct {
	format.Entry
	seq uint64
}

func (o *overlay) init() { o.m = make(map[string]ownEntry) }

// add records entries whose key and journal line (on a bucket) landed.
func (o *overlay) add(es []format.Entry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range es {
		o.m[e.Key()] = ownEntry{Entry: e, seq: o.seq}
	}
	o.seq++
	o.dirty = true
}

// mark returns a sequence number: every entry added before the call has a
// smaller one.
func (o *overlay) mark() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seq
}

func (o *overlay) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.m)
}

func (o *overlay) has(e format.Entry) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.m) == 0 {
		return false
	}
	_, ok := o.m[e.Key()]
	return ok
}

// prune drops the entries added before mark, and those base (if not nil)
// holds.
func (o *overlay) prune(base *entrySet, mark uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, e := range o.m {
		if e.seq < mark {
			delete(o.m, k)
		} else if base != nil {
			if _, ok := base.lookup(e.Kind, e.Object, e.Value); ok {
				delete(o.m, k)
			}
		}
	}
	o.dirty = true
}

// countNew counts the overlay's entries of a kind that base does not hold.
func (o *overlay) countNew(kind format.Kind, base *entrySet) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, e := range o.m {
		if e.Kind == kind {
			if _, ok := base.lookup(e.Kind, e.Object, e.Value); !ok {
				n++
			}
		}
	}
	return n
}

func (o *overlay) sortLocked() {
	if !o.dirty {
		return
	}
	for k := range o.sorted {
		o.sorted[k] = o.sorted[k][:0]
	}
	for _, e := range o.m {
		o.sorted[e.Kind] = append(o.sorted[e.Kind], e.Entry)
	}
	for k := range o.sorted {
		slices.SortFunc(o.sorted[k], func(a, b format.Entry) int {
			return cmp.Or(strings.Compare(a.Object, b.Object), strings.Compare(a.Value, b.Value))
		})
	}
	o.dirty = false
}

// withPrefix returns the kind's entries whose object starts with prefix
// ("" for all), sorted by (object, value).
func (o *overlay) withPrefix(kind format.Kind, prefix string) []format.Entry {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.m) == 0 {
		return nil
	}
	o.sortLocked()
	s := o.sorted[kind]
	i := sort.Search(len(s), func(i int) bool { return s[i].Object >= prefix })
	j := i
	for j < len(s) && strings.HasPrefix(s[j].Object, prefix) {
		j++
	}
	return slices.Clone(s[i:j])
}

// object returns an object's entries of the kind, sorted by value.
func (o *overlay) object(kind format.Kind, obj string) []format.Entry {
	es := o.withPrefix(kind, obj)
	return slices.DeleteFunc(es, func(e format.Entry) bool { return e.Object != obj })
}
