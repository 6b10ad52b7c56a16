package fs

import (
	"context"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// Invalidate tells the kernel what a refresh changed. The mount calls it
// for every view its index publishes (indexChanged: index.Subscribe), so
// no caller needs to; calling it again finds nothing more to drop. If the
// index's generation did not move, it only checks the listing of
// .oxy/lists/.
//
// The mount caches no failed lookup, so a new name needs no notice but in
// the listings the kernel keeps (FOPEN_CACHE_DIR). What the kernel holds is
// walked (the nodes go-fuse keeps are exactly those the kernel holds), all
// in memory on a folded store:
//
//   - a directory whose listing differs from the one the kernel read has
//     its listing dropped (NotifyContent);
//   - a name the index no longer has is dropped (NotifyEntry, which drops
//     the subtree of a directory);
//   - a signature node of a version that is no longer the signature's (a
//     writer replaced it) has its name dropped (NotifyEntry): the next use
//     looks it up and gets the new version's node (versions.go); one whose
//     size the index no longer knows has its attributes dropped
//     (NotifyContent), so the next stat reads it.
//
// On a store that is not folded, checking a name would list its prefix, so
// every cached name under the kind and by-signer directories is dropped
// instead and looked up again when used, and every listing is dropped.
func (m *Server) Invalidate() { m.invalidate(index.ViewMark{}) }

// invalidate is Invalidate after a publish over the view prev (the
// index's ChangePublished; zero when not known: with view ids, every
// directory's names are then dropped if the generation moved).
func (m *Server) invalidate(prev index.ViewMark) {
	m.invalMu.Lock()
	defer m.invalMu.Unlock()
	m.invalidateLists()
	gen := m.ix.Generation()
	if gen == m.seenGen.Load() {
		return
	}
	m.seenGen.Store(gen)
	w := invalidation{m: m, ctx: context.Background(), folded: m.ix.Status().Folded}
	w.dir(m.root.EmbeddedInode(), m.root)
	if m.views != nil {
		w.leaves()
		w.viewDirs(prev)
	}
	if m.Debug() {
		m.logf("oxyfs: invalidate (generation %d): %d listings, %d names, %d sizes", gen, w.listings, w.names, w.sizes)
	}
}

// invalidateLists drops the kernel's listing of .oxy/lists/ when the live
// lists changed, which a refresh can do without changing the tree (a fold
// that lists what the journal held): the kernel keeps every listing it read
// (see noOpendir), this one too.
func (m *Server) invalidateLists() {
	oxy := m.root.EmbeddedInode().GetChild(oxyName)
	if oxy == nil {
		return
	}
	in := oxy.GetChild(oxyListsName)
	if in == nil {
		return
	}
	d, ok := in.Operations().(*oxyDir)
	if !ok {
		return
	}
	if h := d.listed.Load(); h != 0 {
		if listHash(d.listsListing()) != h {
			d.listed.Store(0)
			in.NotifyContent(0, 0)
		}
	}
}

type invalidation struct {
	m                      *Server
	ctx                    context.Context
	folded                 bool
	listings, names, sizes int
}

// dir checks one directory the kernel holds, and what it holds under it.
func (w *invalidation) dir(in *gofs.Inode, d *dirNode) {
	m := w.m
	if h := d.listed.Load(); h != 0 {
		list, errno := d.list(w.ctx)
		if errno != 0 || !w.folded || listHash(list) != h {
			d.listed.Store(0)
			in.NotifyContent(0, 0)
			w.listings++
		}
	}
	for name, kid := range in.Children() {
		switch kid.Operations().(type) {
		case *oxyDir, *leafDir:
			continue // not the index's (the leaves: w.leaves)
		}
		p := index.JoinPath(d.path, name)
		kd, isDir := kid.Operations().(*dirNode)
		if !w.folded {
			if d.level == index.LevelKind || d.level == index.LevelSigners {
				in.NotifyEntry(name)
				w.names++
			} else if isDir {
				w.dir(kid, kd)
			}
			continue
		}
		n, err := m.ix.StatHeld(w.ctx, p) // not a user's stat: read-ahead is not told
		if err != nil {
			if isNotExist(err) && !m.virt.has(p) && m.pending.get(p) == nil {
				in.NotifyEntry(name)
				w.names++
			}
			continue
		}
		switch op := kid.Operations().(type) {
		case *dirNode:
			w.dir(kid, op)
		case *entryNode:
			switch {
			case op.stale():
				in.NotifyEntry(name) // a new version: the next use looks it up (versions.go)
				w.names++
			case op.e.Kind == format.KindSig && n.Size < 0 && m.pending.writing(p) == nil:
				kid.NotifyContent(0, 0)
				w.sizes++
			}
		}
	}
}
