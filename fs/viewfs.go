package fs

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
)

// viewFS answers every request on a view id (viewids.go) itself, so that
// go-fuse's bridge, which it wraps (noOpendir around it), never sees one
// and keeps no node for the index tree's directories: a kind's, an <hh>
// and an object's. It also answers the root's LOOKUP of a kind's name
// and the root's READDIR(PLUS), whose directories get view ids. With leaf
// ids (leafids.go) it answers every request on an entry file's leaf id
// too (leaffs.go: its requests on files and handles are there). Every
// other request — the root's others, .oxy/, by-signer/, and every entry
// file's go-fuse node (the leaves, viewleaves.go) — goes to the bridge; a
// LOOKUP of a name in an object directory that gets no leaf id, and a
// CREATE there, go to the leaves' directory, named by the entry's path.
//
// Each request on a view id answers as dirNode and its dirHandle answer for
// the same directory (tree.go, dirhandle.go; their code is shared where it
// can be: listDir, lookupIn, createIn), and counts the same operations
// (Ops). An id that names no directory any more (viewIDs.dir) is ESTALE:
// the kernel looks the name up again.
type viewFS struct {
	fuse.RawFileSystem // noOpendir around the bridge
	m                  *Server
}

// viewPartials are the listings being read of view ids' directories
// (dirNode.partial for them), by id: one is kept from a READDIR(PLUS) that
// did not reach the end to the one that does. A listing the kernel never
// reads to its end stays until maxViewPartials are held, when all are
// dropped (the next request of such a listing makes it again: dirHandle).
type viewPartials struct {
	mu sync.Mutex                          // protects m; a leaf
	m  map[uint64]*atomic.Pointer[listing] // guarded by mu
}

const maxViewPartials = 4096

func (p *viewPartials) slot(id uint64) *atomic.Pointer[listing] {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= maxViewPartials {
		p.m = make(map[uint64]*atomic.Pointer[listing])
	}
	s := p.m[id]
	if s == nil {
		s = new(atomic.Pointer[listing])
		p.m[id] = s
	}
	return s
}

// done drops id's slot once it holds no listing.
func (p *viewPartials) done(id uint64, s *atomic.Pointer[listing]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[id] == s && s.Load() == nil {
		delete(p.m, id)
	}
}

func viewCtx(cancel <-chan struct{}, h *fuse.InHeader) context.Context {
	return &fuse.Context{Caller: h.Caller, Cancel: cancel}
}

// dir is the directory of a view id: ESTALE if it names none.
func (r *viewFS) dir(ctx context.Context, id uint64) (string, index.Path, fuse.Status) {
	p, at, ok := r.m.views.dir(ctx, id)
	if !ok {
		return "", index.Path{}, fuse.Status(syscall.ESTALE)
	}
	return p, at, fuse.OK
}

// dirEntry fills out for the view directory p, at at, with inode number
// ino, and counts the kernel's lookup of its id.
func (r *viewFS) dirEntry(ctx context.Context, p string, at index.Path, ino uint64, out *fuse.EntryOut) fuse.Status {
	id, ok := r.m.views.id(ctx, p, at, true)
	if !ok {
		return fuse.ENOENT
	}
	r.m.dirAttr(&out.Attr)
	r.m.entryOut(out, true)
	out.NodeId, out.Generation, out.Ino = id, 0, ino
	return fuse.OK
}

func (r *viewFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	ctx := viewCtx(cancel, h)
	switch {
	case h.NodeId == 1:
		if at, ok := (index.Path{}).Child(name); !ok || at.Level != index.LevelKind {
			return r.RawFileSystem.Lookup(cancel, h, name, out)
		}
		return r.lookupDir(ctx, "", index.Path{}, name, out)
	case isLeafID(h.NodeId), isLinkID(h.NodeId):
		return fuse.Status(syscall.ENOTDIR)
	case !isViewID(h.NodeId):
		if r.m.leafs != nil { // the one place the link ids' path splits off
			if st, ok := r.linkLookup(ctx, h.NodeId, name, out); ok {
				return st
			}
		}
		return r.RawFileSystem.Lookup(cancel, h, name, out)
	}
	p, at, st := r.dir(ctx, h.NodeId)
	if !st.Ok() {
		return st
	}
	switch name { // as the bridge answers them (no operation counted): NFS export's
	case ".":
		return r.dirEntry(ctx, p, at, index.PathIno(p), out)
	case "..":
		up, _ := index.SplitPath(p)
		if at.Level == index.LevelKind {
			return r.RawFileSystem.Lookup(cancel, &fuse.InHeader{NodeId: 1, Caller: h.Caller}, ".", out)
		}
		upAt, _ := index.ParsePath(up)
		return r.dirEntry(ctx, up, upAt, index.PathIno(up), out)
	}
	if at.Level == index.LevelObject {
		if r.m.leafs != nil {
			if st, ok := r.leafLookup(ctx, p, name, out); ok {
				return st
			}
		}
		leaf := *h
		leaf.NodeId = r.m.leavesID
		return r.RawFileSystem.Lookup(cancel, &leaf, index.JoinPath(p, name), out)
	}
	return r.lookupDir(ctx, p, at, name, out)
}

// lookupDir is a LOOKUP of name in the directory dir (the root, a kind's
// or an <hh>), whose children are directories of view ids (lookupIn).
func (r *viewFS) lookupDir(ctx context.Context, dir string, at index.Path, name string, out *fuse.EntryOut) fuse.Status {
	m := r.m
	defer m.ops.start(opLookup)()
	child, ok := at.Child(name)
	if !ok || !viewDir(child) {
		return fuse.ENOENT
	}
	p := index.JoinPath(dir, name)
	rc := m.reqCtx(ctx)
	defer rc.end()
	n, err := m.ix.Stat(rc, p)
	switch {
	case err == nil && n.Type == index.NodeDir:
		return r.dirEntry(ctx, p, child, n.Ino, out)
	case err == nil:
		return fuse.ENOENT // never: no file stands there
	case !isNotExist(err):
		return fuse.Status(m.errno("lookup", p, err))
	case m.virt.has(p): // Mkdir made it
		return r.dirEntry(ctx, p, child, index.PathIno(p), out)
	}
	return fuse.ENOENT
}

func (r *viewFS) Forget(id, n uint64) {
	if isLeafID(id) {
		r.m.leafs.forget(id)
		return
	}
	if isLinkID(id) {
		return // nothing is kept of it
	}
	if isViewID(id) {
		r.m.views.forget(id, n)
		return
	}
	if r.m.leafs != nil {
		r.m.links.forgot(id) // before the bridge may hand id on
	}
	r.RawFileSystem.Forget(id, n)
}

func (r *viewFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if isLeafID(in.NodeId) {
		return r.leafGetAttr(cancel, in, out)
	}
	if isLinkID(in.NodeId) {
		return r.linkGetAttr(cancel, in, out)
	}
	if !isViewID(in.NodeId) {
		return r.RawFileSystem.GetAttr(cancel, in, out)
	}
	defer r.m.ops.start(opGetattr)()
	p, _, st := r.dir(viewCtx(cancel, &in.InHeader), in.NodeId)
	if !st.Ok() {
		return st
	}
	r.m.dirAttr(&out.Attr)
	out.Ino = index.PathIno(p)
	out.SetTimeout(r.m.attrTTL)
	return fuse.OK
}

// SetAttr on a view id: dirNode.Setattr.
func (r *viewFS) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	if isLeafID(in.NodeId) {
		return r.leafSetAttr(cancel, in, out)
	}
	if isLinkID(in.NodeId) {
		out.Mode = syscall.S_IFLNK | out.Mode&0o7777
		return fuse.ENOTSUP // as the bridge answers a linkNode (no Setattr)
	}
	if !isViewID(in.NodeId) {
		return r.RawFileSystem.SetAttr(cancel, in, out)
	}
	m := r.m
	defer m.ops.start(opSetattr)()
	if m.ro {
		return fuse.EROFS
	}
	if _, ok := in.GetSize(); ok {
		return fuse.Status(syscall.EISDIR)
	}
	if errno := refuseOwnAttrs(in, func() bool { return false }); errno != 0 {
		return fuse.Status(errno)
	}
	p, _, st := r.dir(viewCtx(cancel, &in.InHeader), in.NodeId)
	if !st.Ok() {
		return st
	}
	m.dirAttr(&out.Attr)
	out.Ino = index.PathIno(p)
	out.SetTimeout(m.attrTTL)
	return fuse.OK
}

func (r *viewFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if isLeafID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.Status(syscall.ENOTDIR)
	}
	if in.Fh != 0 || !isViewID(in.NodeId) && in.NodeId != 1 {
		return r.RawFileSystem.ReadDir(cancel, in, out)
	}
	return r.readDir(cancel, in, out, false)
}

func (r *viewFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if isLeafID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.Status(syscall.ENOTDIR)
	}
	if in.Fh != 0 || !isViewID(in.NodeId) && in.NodeId != 1 {
		return r.RawFileSystem.ReadDirPlus(cancel, in, out)
	}
	return r.readDir(cancel, in, out, true)
}

// readDir serves a READDIR(PLUS) of the root or of a view id's directory
// through a dirHandle of its own, as noOpendir does through the bridge's:
// the listing's snapshot is kept between requests (viewPartials), and a
// READDIRPLUS gives directories their view ids (the root's others their
// bridge nodes) and files no node (dirHandle.Lookup).
func (r *viewFS) readDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	m := r.m
	ctx := viewCtx(cancel, &in.InHeader)
	p, at := "", index.Path{}
	if in.NodeId != 1 {
		var st fuse.Status
		if p, at, st = r.dir(ctx, in.NodeId); !st.Ok() {
			return st
		}
	}
	slot := m.partials.slot(in.NodeId)
	defer m.partials.done(in.NodeId, slot)
	h := &dirHandle{m: m, path: p, level: at.Level, slot: slot}
	_ = h.Seekdir(ctx, in.Offset)
	defer h.Releasedir(ctx, 0)
	for first := true; ; first = false {
		e, ok, errno := h.next(ctx)
		if errno != 0 {
			if first {
				return fuse.Status(errno)
			}
			return fuse.OK // the next request reads on from here and meets it
		}
		if !ok {
			return fuse.OK
		}
		if !plus {
			if !out.AddDirEntry(e) {
				h.pos--
				h.served--
				return fuse.OK
			}
			continue
		}
		eo := out.AddDirLookupEntry(e)
		if eo == nil {
			h.pos--
			h.served--
			return fuse.OK
		}
		if e.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			continue // no node: a file's LOOKUP comes when it is stat'd
		}
		cp, child, ok := at.ChildPath(p, e.Name)
		if !ok || !viewDir(child) {
			// The root's by-signer and .oxy: the bridge's nodes.
			if st := r.RawFileSystem.Lookup(cancel, &in.InHeader, e.Name, eo); !st.Ok() {
				*eo = fuse.EntryOut{}
			}
			continue
		}
		func() {
			defer m.ops.start(opLookup)()
			if st := r.dirEntry(ctx, cp, child, e.Ino, eo); !st.Ok() {
				*eo = fuse.EntryOut{}
			}
		}()
	}
}

// Mkdir in a view id's directory: dirNode.Mkdir.
func (r *viewFS) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	if isLeafID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.Status(syscall.ENOTDIR)
	}
	if !isViewID(in.NodeId) {
		return r.RawFileSystem.Mkdir(cancel, in, name, out)
	}
	m := r.m
	ctx := viewCtx(cancel, &in.InHeader)
	defer m.ops.start(opMkdir)()
	if m.ro {
		return fuse.EROFS
	}
	dir, _, st := r.dir(ctx, in.NodeId)
	if !st.Ok() {
		return st
	}
	at, err := makeChildOf(dir, name, true)
	if err != nil {
		return fuse.Status(makeErrno(err))
	}
	p := index.JoinPath(dir, name)
	if ok, errno := m.exists(ctx, p); errno != 0 {
		return fuse.Status(errno)
	} else if ok {
		return fuse.Status(syscall.EEXIST)
	}
	m.virt.add(p)
	return r.dirEntry(ctx, p, at, index.PathIno(p), out)
}

// Create in an object directory: the leaves' directory's Create of the
// entry's path (dirNode.Create there); elsewhere refused as dirNode.Create
// refuses it.
func (r *viewFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if isLeafID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.Status(syscall.ENOTDIR)
	}
	if !isViewID(in.NodeId) {
		return r.RawFileSystem.Create(cancel, in, name, out)
	}
	m := r.m
	dir, at, st := r.dir(viewCtx(cancel, &in.InHeader), in.NodeId)
	if !st.Ok() {
		return st
	}
	if at.Level == index.LevelObject && !strings.Contains(name, "/") {
		leaf := *in
		leaf.NodeId = m.leavesID
		return r.RawFileSystem.Create(cancel, &leaf, index.JoinPath(dir, name), out)
	}
	defer m.ops.start(opCreate)()
	if m.ro {
		return fuse.EROFS
	}
	_, err := makeChildOf(dir, name, false)
	return fuse.Status(makeErrno(err))
}

// The namespace changes only by adding: the rest is refused on a view id
// as on a dirNode (in either node of a RENAME or a LINK).

func (r *viewFS) refuse(op int) fuse.Status {
	defer r.m.ops.start(op)()
	return fuse.Status(r.m.refused())
}

func (r *viewFS) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	if isOwnID(in.NodeId) {
		return r.refuse(opMknod)
	}
	return r.RawFileSystem.Mknod(cancel, in, name, out)
}

func (r *viewFS) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if isOwnID(h.NodeId) {
		return r.refuse(opUnlink)
	}
	return r.RawFileSystem.Unlink(cancel, h, name)
}

func (r *viewFS) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if isOwnID(h.NodeId) {
		return r.refuse(opRmdir)
	}
	return r.RawFileSystem.Rmdir(cancel, h, name)
}

func (r *viewFS) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	if isOwnID(in.NodeId) || isOwnID(in.Newdir) {
		return r.refuse(opRename)
	}
	return r.RawFileSystem.Rename(cancel, in, oldName, newName)
}

func (r *viewFS) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	if isOwnID(in.NodeId) || isOwnID(in.Oldnodeid) {
		return r.refuse(opLink)
	}
	return r.RawFileSystem.Link(cancel, in, name, out)
}

func (r *viewFS) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	if isOwnID(h.NodeId) {
		return r.refuse(opSymlink)
	}
	return r.RawFileSystem.Symlink(cancel, h, target, name, out)
}

// Extended attributes of a view id's directory: none (base's).

func (r *viewFS) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	if isLeafID(h.NodeId) {
		return r.leafGetXAttr(cancel, h, attr, dest)
	}
	if isLinkID(h.NodeId) {
		return r.linkGetXAttr(attr)
	}
	if !isViewID(h.NodeId) {
		return r.RawFileSystem.GetXAttr(cancel, h, attr, dest)
	}
	defer r.m.ops.start(opGetxattr)()
	return 0, fuse.Status(noXattr(attr))
}

func (r *viewFS) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	if isLeafID(h.NodeId) {
		return r.leafListXAttr(cancel, h, dest)
	}
	if !isViewID(h.NodeId) && !isLinkID(h.NodeId) {
		return r.RawFileSystem.ListXAttr(cancel, h, dest)
	}
	return 0, fuse.OK // as the bridge answers a node without Listxattr
}

func (r *viewFS) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	if !isOwnID(in.NodeId) {
		return r.RawFileSystem.SetXAttr(cancel, in, attr, data)
	}
	b := base{m: r.m}
	return fuse.Status(b.Setxattr(context.Background(), attr, data, in.Flags))
}

func (r *viewFS) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	if !isOwnID(h.NodeId) {
		return r.RawFileSystem.RemoveXAttr(cancel, h, attr)
	}
	b := base{m: r.m}
	return fuse.Status(b.Removexattr(context.Background(), attr))
}

func (r *viewFS) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	if !isOwnID(h.NodeId) {
		return r.RawFileSystem.StatFs(cancel, h, out)
	}
	b := base{m: r.m}
	return fuse.Status(b.Statfs(context.Background(), out))
}

// Access on a view id: the bridge's default, the mode bits of dirAttr.
func (r *viewFS) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	if isLeafID(in.NodeId) {
		return r.leafAccess(cancel, in)
	}
	if isLinkID(in.NodeId) {
		return r.linkAccess(cancel, in)
	}
	if !isViewID(in.NodeId) {
		return r.RawFileSystem.Access(cancel, in)
	}
	defer r.m.ops.start(opGetattr)() // the bridge's default asks the node's Getattr
	if _, _, st := r.dir(viewCtx(cancel, &in.InHeader), in.NodeId); !st.Ok() {
		return st
	}
	var a fuse.Attr
	r.m.dirAttr(&a)
	if !hasAccess(in.Caller.Uid, in.Caller.Gid, a.Uid, a.Gid, a.Mode, in.Mask) {
		return fuse.EACCES
	}
	return fuse.OK
}

// hasAccess is go-fuse's check of mode bits (internal.HasAccess).
func hasAccess(uid, gid, fuid, fgid, mode, mask uint32) bool {
	if uid == 0 {
		return mask&1 == 0 || mode&0o111 != 0
	}
	var perm uint32
	switch {
	case uid == fuid:
		perm = mode >> 6
	case gid == fgid:
		perm = mode >> 3
	default:
		perm = mode
	}
	return perm&mask&7 == mask&7
}
