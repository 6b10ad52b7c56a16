package fs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// The requests on leaf ids (leafids.go), answered by viewFS as go-fuse's
// bridge answers them on an entryNode: the same entryNode methods (a
// transient node, or the one kept: leafstate.go), and the file handles
// they return, numbered by leafState. What the bridge adds to an answer
// (the inode number, the type bits, blocks) is added here.

// leafLookup answers a LOOKUP of name in the object directory dir with a
// leaf id when the entry has one (leafIDs.idOf; no write of this mount in
// progress on it); ok is false otherwise: the leaves' directory answers
// (viewleaves.go).
func (r *viewFS) leafLookup(ctx context.Context, dir, name string, out *fuse.EntryOut) (fuse.Status, bool) {
	m := r.m
	p := index.JoinPath(dir, name)
	rc := m.reqCtx(ctx)
	defer rc.end()
	n, st, err := m.ix.StatSig(rc, p)
	if err != nil || n.Type != index.NodeFile || m.standsFor(ctx, p) != nil {
		return 0, false
	}
	if n.Entry.Kind != format.KindSig {
		st = index.SigState{}
	}
	id, ok := m.leafs.idOf(rc, p, n.Entry, st.Version)
	if !ok {
		return 0, false
	}
	defer m.ops.start(opLookup)()
	size, mod := n.Size, n.ModTime
	known := size >= 0
	if size < 0 {
		size = 0
	}
	m.sigAttr(&out.Attr, size, mod)
	m.entryOut(out, known)
	m.leafAttr(&out.Attr)
	out.NodeId, out.Generation, out.Attr.Ino = id, st.Version, index.PathIno(p)
	m.leafs.given(id, p)
	m.leafs.lookedUp(id)
	return fuse.OK, true
}

// leafAttr adds to a, an entry's attributes, what the bridge adds.
func (m *Server) leafAttr(a *fuse.Attr) {
	a.Mode = a.Mode&0o7777 | syscall.S_IFREG
	if a.Mode&0o7777 == 0 {
		a.Mode |= 0o644
	}
	if m.uid != 0 && a.Uid == 0 {
		a.Uid = m.uid
	}
	if m.gid != 0 && a.Gid == 0 {
		a.Gid = m.gid
	}
	if a.Blksize == 0 {
		a.Blksize = 4096
		a.Blocks = (a.Size + 4095) / 4096 * 8
	}
}

// leafNode is the node of a request on a leaf id; ESTALE if it names none.
func (r *viewFS) leafNode(ctx context.Context, id uint64) (*entryNode, fuse.Status) {
	n, _, ok := r.m.leafs.node(ctx, r.m, id)
	if !ok {
		return nil, fuse.Status(syscall.ESTALE)
	}
	return n, fuse.OK
}

func (r *viewFS) leafGetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	ctx := viewCtx(cancel, &in.InHeader)
	n, st := r.leafNode(ctx, in.NodeId)
	if !st.Ok() {
		defer r.m.ops.start(opGetattr)()
		return st
	}
	f := r.m.leafs.file(in.NodeId, in.Fh())
	if errno := n.Getattr(ctx, f, out); errno != 0 {
		return fuse.Status(errno)
	}
	out.Ino = index.PathIno(n.path)
	r.m.leafAttr(&out.Attr)
	return fuse.OK
}

func (r *viewFS) leafSetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	ctx := viewCtx(cancel, &in.InHeader)
	n, st := r.leafNode(ctx, in.NodeId)
	if !st.Ok() {
		defer r.m.ops.start(opSetattr)()
		return st
	}
	fh, _ := in.GetFh()
	var f gofs.FileHandle
	if fh != 0 {
		f = r.m.leafs.file(in.NodeId, fh)
	}
	errno := n.Setattr(ctx, f, in, out)
	out.Mode = syscall.S_IFREG | out.Mode&0o7777
	return fuse.Status(errno)
}

// leafOpen opens a leaf id's entry on its kept node (made kept now): the
// node holds its descriptors' state until the last is released.
func (r *viewFS) leafOpen(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	m := r.m
	ctx := viewCtx(cancel, &in.InHeader)
	n, st := r.leafNode(ctx, in.NodeId)
	if !st.Ok() {
		defer m.ops.start(opOpen)()
		return st
	}
	n = m.leafs.keep(n)
	f, flags, errno := n.Open(ctx, in.Flags)
	if errno != 0 {
		m.leafs.opened(in.NodeId, nil)
		return fuse.Status(errno)
	}
	out.OpenFlags = flags
	out.Fh = m.leafs.opened(in.NodeId, f)
	return fuse.OK
}

func (r *viewFS) leafRelease(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	m := r.m
	f := m.leafs.release(in.NodeId, in.Fh)
	if rel, ok := f.(gofs.FileReleaser); ok {
		rel.Release(&fuse.Context{Caller: in.Caller, Cancel: cancel})
	}
	m.leafs.settle(in.NodeId)
}

func (r *viewFS) leafRead(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	file, done := r.m.leafs.use(in.NodeId, in.Fh)
	defer done()
	if f, ok := file.(gofs.FileReader); ok {
		res, errno := f.Read(&fuse.Context{Caller: in.Caller, Cancel: cancel}, buf, int64(in.Offset))
		return res, fuse.Status(errno)
	}
	return nil, fuse.ENOTSUP
}

func (r *viewFS) leafWrite(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	file, done := r.m.leafs.use(in.NodeId, in.Fh)
	defer done()
	if f, ok := file.(gofs.FileWriter); ok {
		n, errno := f.Write(&fuse.Context{Caller: in.Caller, Cancel: cancel}, data, int64(in.Offset))
		return n, fuse.Status(errno)
	}
	return 0, fuse.ENOTSUP
}

func (r *viewFS) leafFlush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	file, done := r.m.leafs.use(in.NodeId, in.Fh)
	defer done()
	if f, ok := file.(gofs.FileFlusher); ok {
		return fuse.Status(f.Flush(&fuse.Context{Caller: in.Caller, Cancel: cancel}))
	}
	return fuse.OK
}

func (r *viewFS) leafFsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	file, done := r.m.leafs.use(in.NodeId, in.Fh)
	defer done()
	if f, ok := file.(gofs.FileFsyncer); ok {
		return fuse.Status(f.Fsync(&fuse.Context{Caller: in.Caller, Cancel: cancel}, in.FsyncFlags))
	}
	return fuse.ENOTSUP
}

// leafLseek: no handle seeks itself; as the bridge's default, from the
// attributes.
func (r *viewFS) leafLseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	var attr fuse.AttrOut
	if st := r.leafGetAttr(cancel, &fuse.GetAttrIn{InHeader: in.InHeader}, &attr); !st.Ok() {
		return st
	}
	switch in.Whence {
	case 3: // SEEK_DATA
		if in.Offset >= attr.Size {
			return fuse.Status(syscall.ENXIO)
		}
		out.Offset = in.Offset
		return fuse.OK
	case 4: // SEEK_HOLE
		if in.Offset > attr.Size {
			return fuse.Status(syscall.ENXIO)
		}
		out.Offset = attr.Size
		return fuse.OK
	}
	return fuse.ENOTSUP
}

func (r *viewFS) leafGetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	ctx := viewCtx(cancel, h)
	n, st := r.leafNode(ctx, h.NodeId)
	if !st.Ok() {
		return 0, st
	}
	sz, errno := n.Getxattr(ctx, attr, dest)
	return sz, fuse.Status(errno)
}

func (r *viewFS) leafListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	ctx := viewCtx(cancel, h)
	n, st := r.leafNode(ctx, h.NodeId)
	if !st.Ok() {
		return 0, st
	}
	sz, errno := n.Listxattr(ctx, dest)
	return sz, fuse.Status(errno)
}

// leafAccess: the bridge's default, the mode bits of the attributes.
func (r *viewFS) leafAccess(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	var out fuse.AttrOut
	ctx := viewCtx(cancel, &in.InHeader)
	n, st := r.leafNode(ctx, in.NodeId)
	if !st.Ok() {
		return st
	}
	if errno := n.Getattr(ctx, nil, &out); errno != 0 {
		return fuse.Status(errno)
	}
	r.m.leafAttr(&out.Attr)
	if !hasAccess(in.Caller.Uid, in.Caller.Gid, out.Uid, out.Gid, out.Mode, in.Mask) {
		return fuse.EACCES
	}
	return fuse.OK
}

// joinBufs is a WRITEV's buffers as one.
func joinBufs(data [][]byte) []byte {
	if len(data) == 1 {
		return data[0]
	}
	var b []byte
	for _, d := range data {
		b = append(b, d...)
	}
	return b
}

// What the kernel sends on a file or a handle: on a leaf id, the leaf's
// answer (above); it never comes on a view id's directory (it has no
// handle: OPENDIR is declined), where each answers what the bridge
// answers a dirNode.

func (r *viewFS) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if isLeafID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.Status(syscall.ENOTDIR)
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.ENOTSUP
	}
	return r.RawFileSystem.FsyncDir(cancel, in)
}

func (r *viewFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if isLeafID(in.NodeId) {
		return r.leafOpen(cancel, in, out)
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.ENOTSUP // a linkNode has no Open either
	}
	return r.RawFileSystem.Open(cancel, in, out)
}

func (r *viewFS) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	if isLeafID(h.NodeId) {
		return nil, fuse.Status(syscall.EINVAL)
	}
	if isLinkID(h.NodeId) {
		return r.linkReadlink(cancel, h)
	}
	if isViewID(h.NodeId) {
		return nil, fuse.ENOTSUP
	}
	return r.RawFileSystem.Readlink(cancel, h)
}

func (r *viewFS) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	if isLeafID(in.NodeId) {
		return fuse.ENOSYS
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.ENOSYS
	}
	return r.RawFileSystem.Statx(cancel, in, out)
}

func (r *viewFS) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	if isLeafID(in.NodeId) {
		return fuse.Status(syscall.ENOTTY)
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.Status(syscall.ENOTTY)
	}
	return r.RawFileSystem.Ioctl(cancel, in, inbuf, out, outbuf)
}

func (r *viewFS) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	if isLeafID(in.NodeId) {
		return fuse.ENOTSUP
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.ENOTSUP
	}
	return r.RawFileSystem.GetLk(cancel, in, out)
}

func (r *viewFS) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if isLeafID(in.NodeId) {
		return fuse.ENOTSUP
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.ENOTSUP
	}
	return r.RawFileSystem.SetLk(cancel, in)
}

func (r *viewFS) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	if isLeafID(in.NodeId) {
		return fuse.ENOTSUP
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.ENOTSUP
	}
	return r.RawFileSystem.SetLkw(cancel, in)
}

func (r *viewFS) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	if isLeafID(in.NodeId) {
		return r.leafLseek(cancel, in, out)
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.ENOTSUP
	}
	return r.RawFileSystem.Lseek(cancel, in, out)
}

func (r *viewFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if isLeafID(in.NodeId) {
		return r.leafRead(cancel, in, buf)
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return nil, fuse.EBADF
	}
	return r.RawFileSystem.Read(cancel, in, buf)
}

func (r *viewFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	if isLeafID(in.NodeId) {
		return r.leafWrite(cancel, in, data)
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return 0, fuse.EBADF
	}
	return r.RawFileSystem.Write(cancel, in, data)
}

func (r *viewFS) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	if isLeafID(in.NodeId) {
		return r.leafWrite(cancel, in, joinBufs(data))
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return 0, fuse.EBADF
	}
	return r.RawFileSystem.Writev(cancel, in, data)
}

func (r *viewFS) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	if isLeafID(in.NodeId) || isLeafID(in.NodeIdOut) {
		return 0, fuse.ENOTSUP // no entry's handle copies itself (the bridge's answer)
	}
	if isOwnID(in.NodeId) || isOwnID(in.NodeIdOut) {
		return 0, fuse.EBADF
	}
	return r.RawFileSystem.CopyFileRange(cancel, in)
}

func (r *viewFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	if isLeafID(in.NodeId) {
		r.leafRelease(cancel, in)
		return
	}
	if !isViewID(in.NodeId) && !isLinkID(in.NodeId) {
		r.RawFileSystem.Release(cancel, in)
	}
}

func (r *viewFS) ReleaseDir(in *fuse.ReleaseIn) {
	if isLeafID(in.NodeId) {
		return
	}
	if !isViewID(in.NodeId) && !isLinkID(in.NodeId) {
		r.RawFileSystem.ReleaseDir(in)
	}
}

func (r *viewFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	if isLeafID(in.NodeId) {
		return r.leafFlush(cancel, in)
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.EBADF
	}
	return r.RawFileSystem.Flush(cancel, in)
}

func (r *viewFS) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if isLeafID(in.NodeId) {
		return r.leafFsync(cancel, in)
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.EBADF
	}
	return r.RawFileSystem.Fsync(cancel, in)
}

func (r *viewFS) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	if isLeafID(in.NodeId) {
		return fuse.ENOTSUP
	}
	if isViewID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.EBADF
	}
	return r.RawFileSystem.Fallocate(cancel, in)
}

func (r *viewFS) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	if isLeafID(in.NodeId) || isLinkID(in.NodeId) {
		return fuse.Status(syscall.ENOTDIR)
	}
	if isViewID(in.NodeId) {
		return fuse.ENOTSUP
	}
	return r.RawFileSystem.Tmpfile(cancel, in, out)
}
