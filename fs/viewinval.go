package fs

import (
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// Invalidate with view ids (viewids.go). No directory of a view id keeps
// what the kernel read of it (dirNode.listed), so what changed is computed
// from the views themselves:
//
//   - the leaves the kernel holds (viewleaves.go) are checked as
//     invalidation.dir checks an entry node: a name gone or of a stale
//     version is dropped, a signature whose size the index no longer knows
//     has its attributes dropped;
//   - on a folded store, the keys of the view before the publishes the
//     index tells (index.Change.Prev, kept by the index only until told)
//     and of the current one are compared (index.DiffKeys over
//     ViewMark.Keys, a merge of the two sorted sets in memory: O(entries)
//     once per refresh that changed the set; none when the view stayed, as
//     after an own write, whose CREATE the kernel resets its listing for;
//     an Invalidate called by hand, which knows no earlier view, drops
//     every <hh> name as below when the generation moved): each object
//     directory, <hh> and kind whose keys changed has its listing dropped
//     (InodeNotify of every view id it may hold), each name removed is
//     dropped (with link ids, its by-signer link's too: linkids.go), and
//     an object or <hh> directory left empty has its name dropped in its
//     parent;
//   - on a store that is not folded (a view holds no keys), every <hh>
//     name of every kind is dropped (EntryNotify: 6 × 256 notices, each of
//     a name the kernel may not hold, which it ignores) and every kind's
//     listing: the kernel looks up again what it uses, as it did before
//     view ids for every name under a kind.
//
// The kernel ignores a notice of an id it does not hold.

// leaves checks the leaves the kernel holds.
func (w *invalidation) leaves() {
	m := w.m
	if !w.folded {
		return // viewDirs drops every name under the kinds
	}
	for key, kid := range m.leaves.Children() {
		if op, ok := kid.Operations().(*entryNode); ok {
			w.leaf(key, op, func() { kid.NotifyContent(0, 0) })
		}
	}
	if m.leafs != nil {
		// The kept nodes of leaf ids (leafstate.go). A leaf id of a name
		// gone is dropped with the view's keys (viewDirs); one of a version
		// that moved, when it moved (sigChanged).
		for _, op := range m.leafs.kept() {
			w.leaf(op.path, op, func() { op.notifyContent(0, 0) })
		}
	}
}

// leaf checks one leaf the kernel holds, op at key: its name dropped if
// gone or stale, its attributes (notifyContent) if its size is no longer
// known.
func (w *invalidation) leaf(key string, op *entryNode, notifyContent func()) {
	m := w.m
	n, err := m.ix.StatHeld(w.ctx, key)
	if err != nil {
		if isNotExist(err) && !m.virt.has(key) && m.pending.get(key) == nil {
			if dir, name := m.leafDirOf(key); dir.held() {
				dir.notifyEntry(name)
				w.names++
			}
		}
		return
	}
	switch {
	case op.stale():
		if dir, name := m.leafDirOf(key); dir.held() {
			dir.notifyEntry(name)
			w.names++
		}
	case op.e.Kind == format.KindSig && n.Size < 0 && m.pending.writing(key) == nil:
		notifyContent()
		w.sizes++
	}
}

// viewDirs drops what the kernel holds of the view ids' directories that
// changed since the view old (the one before the publishes the index tells).
func (w *invalidation) viewDirs(old index.ViewMark) {
	m := w.m
	now, err := m.ix.Mark(w.ctx)
	if err == nil && old.Same(now) {
		return
	}
	if err != nil || !w.folded || !old.Folded() || !now.Folded() {
		w.allViewDirs()
		return
	}
	var lastObj, lastHH, lastKind string
	var emptied []string // object directories that lost a key
	keys, nowKeys := old.Keys(), now.Keys()
	defer keys.Close()
	defer nowKeys.Close()
	err = index.DiffKeys(keys, nowKeys, false, func(op index.DiffOp, key []byte) error {
		e, err := index.ParseEntryPath(string(key)) // a key is its entry's path
		if err != nil || len(e.Object) < 2 {
			return nil // never: the set holds keys
		}
		kind, hh := e.Kind.String(), e.Kind.String()+"/"+e.Object[:2]
		obj := hh + "/" + e.Object[2:]
		if obj != lastObj {
			lastObj = obj
			w.viewDir(obj).notifyContent()
			w.listings++
			if op == index.DiffRemoved {
				emptied = append(emptied, obj)
			}
		}
		if hh != lastHH {
			lastHH = hh
			w.viewDir(hh).notifyContent()
			w.listings++
		}
		if kind != lastKind {
			lastKind = kind
			w.viewDir(kind).notifyContent()
			w.listings++
		}
		if op == index.DiffRemoved {
			w.viewDir(obj).notifyEntry(e.Value)
			w.names++
			if m.leafs != nil && e.Kind == format.KindSig && m.dropLinkName(e) {
				w.names++ // its by-signer link, which a link id may name (linkids.go)
			}
		}
		return nil
	})
	if err != nil {
		m.logf("oxyfs: invalidate: comparing the views: %v (dropping every directory's names)", err)
		w.allViewDirs()
		return
	}
	for _, obj := range emptied {
		for p := obj; ; {
			if ok, _ := m.exists(w.ctx, p); ok {
				break
			}
			dir, name := index.SplitPath(p)
			if _, ok := index.ParsePath(dir); dir == "" || !ok {
				break
			}
			w.viewDir(dir).notifyEntry(name)
			w.names++
			p = dir
		}
	}
}

// viewDir is the kernelDir of the view directory p.
func (w *invalidation) viewDir(p string) kernelDir {
	at, _ := index.ParsePath(p)
	return w.m.viewDir(w.ctx, p, at)
}

// allViewDirs drops every <hh> name of every kind and every kind's listing
// (and with link ids, every signer's name in by-signer/: dropLinkNames).
func (w *invalidation) allViewDirs() {
	if w.m.leafs != nil {
		w.m.dropLinkNames()
	}
	for _, k := range format.Kinds {
		kd := w.viewDir(k.String())
		kd.notifyContent()
		w.listings++
		for b := 0; b < 256; b++ {
			kd.notifyEntry(hexByte(byte(b)))
		}
		w.names += 256
	}
}
