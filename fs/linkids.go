package fs

import (
	"context"
	"reflect"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// Link ids (with leaf ids only: Options.LeafIDs). A by-signer symlink,
// by-signer/<signer>/<hh><rest>, gets no go-fuse node (a linkNode with
// go-fuse's tables and its target: ~43 MB of a 100,000-entry mount's heap
// after du, design §7): the kernel holds it by a node id
// computed from the signature it points to (leafids.go, the layout), and
// viewFS answers every request on it itself (LOOKUP, GETATTR, READLINK,
// ACCESS, xattrs, FORGET, and the errno the bridge gives a linkNode for
// the rest), as linkNode and the bridge answer: the same target, mode,
// size, times, inode number, and the same operations counted.
//
// The id is the signature's leaf id (its key, its name's bits among the
// signature's object directory, leafIDs.idOf) with the kind, the leaf bit
// and the version cleared: a link does not change with its signature's
// version. It leads back to the link when it leads back to the signature
// (leafIDs.entry); a LOOKUP gives one only when it does, and otherwise
// (two objects share the key, two signers of the object share the bits
// under every seed, an own write the view's set does not hold yet) the
// bridge answers with a linkNode as without leaf ids. A request on an id
// that no longer leads back (the signature gone, a second object come to
// share its key, a signer come to share its bits) is ESTALE: the kernel
// looks the name up again.
//
// The LOOKUP of a link comes on its signer's directory, a go-fuse node
// (dirNode): viewFS tells which bridge node ids are signers' directories
// from linkDirs, filled as the bridge makes them (newDirIn), emptied as it
// drops them (dirNode.OnForget) and at every FORGET of their ids. The kernel's
// names of links are dropped as before: a signer's directory the kernel
// holds is still a dirNode, whose listing Invalidate checks; a removed
// signature's link name is dropped with the views' keys (viewDirs), and
// every signer's directory's names when the keys cannot be compared.
type linkDirs struct {
	mu   sync.Mutex              // protects m; a leaf
	dirs map[uint64]linkDirEntry // bridge node id -> the signer's directory; guarded by mu
}

// linkDirEntry is a signer's directory the bridge gave a node id.
type linkDirEntry struct {
	in     *gofs.Inode
	signer string
}

// isLinkID reports whether a node id is a link id (leafids.go's layout).
func isLinkID(id uint64) bool {
	return id&(viewBit|viewObjBit|7<<viewShift|linkZeroBits) == viewBit
}

// linkID is the link id of the signature's leaf id id.
func linkID(id uint64) uint64 { return viewBit | id&linkKeyHashBits }

// linkLeafID is the leaf id (version 0) of the signature a link id names.
func linkLeafID(id uint64) uint64 {
	return viewBit | leafBit | uint64(format.KindSig)<<leafKindShift | id&linkKeyHashBits
}

// bridgeNodeID is the node id go-fuse's bridge gave in (Inode.nodeId,
// which go-fuse does not export; set when the node is made), or 0 if it
// cannot be read (a go-fuse that changed: TestLinkDirsKnowTheBridgesIDs).
func bridgeNodeID(in *gofs.Inode) uint64 {
	f := reflect.ValueOf(in).Elem().FieldByName("nodeId")
	if !f.IsValid() || f.Kind() != reflect.Uint64 {
		return 0
	}
	return f.Uint()
}

// made records in, the node of the signer's directory by-signer/<signer>
// (newDirIn; every node the bridge gives it is made or found there).
func (d *linkDirs) made(in *gofs.Inode, signer string) {
	id := bridgeNodeID(in)
	if id == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dirs == nil {
		d.dirs = make(map[uint64]linkDirEntry)
	}
	d.dirs[id] = linkDirEntry{in: in, signer: signer}
}

// signer is the signer whose directory the bridge node id is, if it is
// one the kernel holds under that id.
func (d *linkDirs) signer(id uint64) (string, bool) {
	d.mu.Lock()
	e, ok := d.dirs[id]
	d.mu.Unlock()
	if !ok || bridgeNodeID(e.in) != id {
		return "", false
	}
	return e.signer, true
}

// dropped drops in, a signer's directory go-fuse dropped (dirNode.OnForget).
func (d *linkDirs) dropped(in *gofs.Inode) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id := bridgeNodeID(in); id != 0 && d.dirs[id].in == in {
		delete(d.dirs, id)
	}
}

// forgot drops id at a FORGET of it (any: the bridge may hand the id to
// another node once it forgot this one; a signer's directory the kernel
// still holds is made known again by its next LOOKUP, its links meanwhile
// getting linkNodes).
func (d *linkDirs) forgot(id uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.dirs, id)
}

// len is how many signers' directories are known.
func (d *linkDirs) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.dirs)
}

// linkLookup answers a LOOKUP of name in the bridge's node parent with a
// link id when parent is a signer's directory and the link has one; ok is
// false otherwise: the bridge answers (a linkNode, or the error).
func (r *viewFS) linkLookup(ctx context.Context, parent uint64, name string, out *fuse.EntryOut) (fuse.Status, bool) {
	m := r.m
	signer, ok := m.links.signer(parent)
	if !ok {
		return 0, false
	}
	at, ok := (index.Path{Level: index.LevelSigner, Kind: format.KindSig, Value: signer}).Child(name)
	if !ok || at.Level != index.LevelLink {
		return 0, false
	}
	p := index.JoinPath(index.JoinPath(index.BySigner, signer), name)
	rc := m.reqCtx(ctx)
	defer rc.end()
	n, err := m.ix.Stat(rc, p)
	if err != nil || n.Type != index.NodeSymlink {
		return 0, false
	}
	e := format.Entry{Kind: format.KindSig, Object: name, Value: signer}
	id, ok := m.leafs.idOf(rc, e.Key(), e, 0)
	if !ok {
		return 0, false
	}
	defer m.ops.start(opLookup)()
	m.linkAttr(&out.Attr, n.Target)
	m.entryOut(out, true)
	out.Mode = syscall.S_IFLNK | out.Mode&0o7777
	out.NodeId, out.Generation, out.Ino = linkID(id), 0, n.Ino
	return fuse.OK, true
}

// link is the link a link id names: its path and target; ok is false when
// the id leads back to none.
func (r *viewFS) link(ctx context.Context, id uint64) (p, target string, ino uint64, ok bool) {
	le, ok := r.m.leafs.entry(ctx, linkLeafID(id))
	if !ok {
		return "", "", 0, false
	}
	p = index.JoinPath(index.JoinPath(index.BySigner, le.e.Value), le.e.Object)
	n, err := r.m.ix.Stat(ctx, p)
	if err != nil || n.Type != index.NodeSymlink {
		return "", "", 0, false
	}
	return p, n.Target, n.Ino, true
}

// linkGetAttr is linkNode.Getattr, with what the bridge adds.
func (r *viewFS) linkGetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	m := r.m
	defer m.ops.start(opGetattr)()
	_, target, ino, ok := r.link(viewCtx(cancel, &in.InHeader), in.NodeId)
	if !ok {
		return fuse.Status(syscall.ESTALE)
	}
	m.linkAttr(&out.Attr, target)
	out.SetTimeout(m.attrTTL)
	out.Ino = ino
	out.Mode = syscall.S_IFLNK | out.Mode&0o7777
	return fuse.OK
}

// linkReadlink is linkNode.Readlink.
func (r *viewFS) linkReadlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	defer r.m.ops.start(opReadlink)()
	_, target, _, ok := r.link(viewCtx(cancel, h), h.NodeId)
	if !ok {
		return nil, fuse.Status(syscall.ESTALE)
	}
	return []byte(target), fuse.OK
}

// linkAccess is the bridge's default for a linkNode: the mode bits of its
// Getattr.
func (r *viewFS) linkAccess(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	var out fuse.AttrOut
	if st := r.linkGetAttr(cancel, &fuse.GetAttrIn{InHeader: in.InHeader}, &out); !st.Ok() {
		return st
	}
	if !hasAccess(in.Caller.Uid, in.Caller.Gid, out.Uid, out.Gid, out.Mode, in.Mask) {
		return fuse.EACCES
	}
	return fuse.OK
}

// linkGetXAttr is base.Getxattr (a linkNode's): no attribute.
func (r *viewFS) linkGetXAttr(attr string) (uint32, fuse.Status) {
	defer r.m.ops.start(opGetxattr)()
	return 0, fuse.Status(noXattr(attr))
}

// dropLinkNames drops every name the kernel holds in a signer's directory
// (every link id's: viewDirs could not compare the views' keys). The
// directories stay; their names are looked up again.
func (m *Server) dropLinkNames() {
	signers := m.root.EmbeddedInode().GetChild(index.BySigner)
	if signers == nil {
		return
	}
	for name := range signers.Children() {
		signers.NotifyEntry(name)
	}
}

// dropLinkName drops the kernel's name of the link of the removed
// signature e, if it holds its signer's directory.
func (m *Server) dropLinkName(e format.Entry) bool {
	signers := m.root.EmbeddedInode().GetChild(index.BySigner)
	if signers == nil {
		return false
	}
	dir := signers.GetChild(e.Value)
	if dir == nil {
		return false
	}
	dir.NotifyEntry(e.Object)
	return true
}
