package fs

import (
	"context"
	"errors"
	iofs "io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// base is what every node shares: the mount, statfs, and refusing to set
// extended attributes.
type base struct {
	gofs.Inode
	m *Server
}

var (
	_ = (gofs.NodeStatfser)((*base)(nil))
	_ = (gofs.NodeSetxattrer)((*base)(nil))
	_ = (gofs.NodeGetxattrer)((*base)(nil))
	_ = (gofs.NodeRemovexattrer)((*base)(nil))
)

func (b *base) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	defer b.m.ops.start(opStatfs)()
	out.Bsize, out.Frsize, out.NameLen = 4096, 4096, format.MaxValueLen
	return 0
}

// Setxattr: user.oxy.* are derived, so EPERM; anything else ENOTSUP, which
// cp -a and rsync -X take as "this file system keeps no xattrs".
func (b *base) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	defer b.m.ops.start(opSetxattr)()
	switch {
	case b.m.ro:
		return syscall.EROFS
	case strings.HasPrefix(attr, xattrPrefix):
		return syscall.EPERM
	}
	return syscall.ENOTSUP
}

// Getxattr of a directory, a link or an .oxy file: none has an attribute.
func (b *base) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	defer b.m.ops.start(opGetxattr)()
	return 0, noXattr(attr)
}

// noXattr is the answer for an attribute a node does not have: ENODATA in
// the user namespace, where entry files keep user.oxy.*, and ENOTSUP in
// every other (security.*, system.posix_acl_*, trusted.*), which this file
// system keeps none of — as a file system without xattrs answers. ls -l
// asks security.selinux and system.posix_acl_access of every name and stops
// asking a device that answered ENOTSUP once; ENODATA made it ask for
// every name, one FUSE round trip each (2 a name of an ls -l).
func noXattr(attr string) syscall.Errno {
	if strings.HasPrefix(attr, "user.") {
		return syscall.ENODATA
	}
	return syscall.ENOTSUP
}

func (b *base) Removexattr(ctx context.Context, attr string) syscall.Errno {
	defer b.m.ops.start(opRemovexattr)()
	switch {
	case b.m.ro:
		return syscall.EROFS
	case strings.HasPrefix(attr, xattrPrefix):
		return syscall.EPERM
	}
	return syscall.ENODATA
}

// Attributes. A signature's mtime, ctime and atime are its key's own
// Last-Modified, read with its bytes by the GET its size needs anyway
// (index.SigStat, Node.ModTime, SigHandle.ModTime: no extra request).
// Every other node's times — directories, index entries (empty keys),
// symlinks, a signature being written, one whose time the backend does not
// give — are the store's last change as the index's view knows it
// (index.ModTime: the newest key of the pack listing the open or refresh
// read, at no extra request); the mount's start when there is none (the
// directory layout, a backend with no times).

func (m *Server) attr(a *fuse.Attr, mode uint32, nlink uint32, size int64) {
	m.attrAt(a, mode, nlink, size, time.Time{})
}

// attrAt is attr with the node's own time t (the zero time: the store's).
func (m *Server) attrAt(a *fuse.Attr, mode uint32, nlink uint32, size int64, t time.Time) {
	if t.IsZero() {
		t = m.ix.ModTime()
	}
	if t.IsZero() {
		t = m.mtime
	}
	a.Mode = mode
	a.Nlink = nlink
	a.Size = uint64(size)
	// Blocks of 512 bytes from the real size, so du adds up what the
	// entries hold (no block of a disk backs them).
	a.Blocks, a.Blksize = (uint64(size)+511)/512, 4096
	if mode&syscall.S_IFMT == syscall.S_IFDIR {
		a.Blksize = dirBlksize
	}
	a.Uid, a.Gid = m.uid, m.gid
	a.SetTimes(&t, &t, &t)
}

// dirBlksize is a directory's st_blksize: the largest READDIRPLUS reply the
// kernel takes (maxWrite, as max_pages). glibc's opendir sizes its getdents
// buffer from it (32 KiB at least, 1 MiB at most), and the kernel asks FUSE
// for as much as that buffer holds (fuse_readdir_uncached since commit
// dabb90391028, Linux 6.16; a page before): a directory of up to ~800
// names is one READDIRPLUS, where a 32 KiB buffer took one per ~200.
const dirBlksize = maxWrite

func (m *Server) dirAttr(a *fuse.Attr)              { m.attr(a, syscall.S_IFDIR|m.dirMode, 2, 0) }
func (m *Server) fileAttr(a *fuse.Attr, size int64) { m.attr(a, syscall.S_IFREG|m.fileMode, 1, size) }

// sigAttr is fileAttr of a signature whose key's own time is mod (the zero
// time: not known, the store's last change stands for it).
func (m *Server) sigAttr(a *fuse.Attr, size int64, mod time.Time) {
	m.attrAt(a, syscall.S_IFREG|m.fileMode, 1, size, mod)
}
func (m *Server) linkAttr(a *fuse.Attr, target string) {
	m.attr(a, syscall.S_IFLNK|0o777, 1, int64(len(target)))
}

// entryOut fills the timeouts of a positive lookup.
func (m *Server) entryOut(out *fuse.EntryOut, attrTTL bool) {
	out.SetEntryTimeout(m.entryTTL)
	if attrTTL {
		out.SetAttrTimeout(m.attrTTL)
	} else {
		out.SetAttrTimeout(0)
	}
}

// dirNode is a directory of the index tree. Only the nodes the kernel holds
// exist; each answers Lookup and readdir (dirhandle.go) from the index.
type dirNode struct {
	base
	path  string      // relative to the mount root; "" is the root
	level index.Level // where path sits in the tree

	listed  listedHash              // the listing last read (see Invalidate)
	partial atomic.Pointer[listing] // the listing being read (see dirHandle)
}

// dirOps is what both kinds of directory (dirNode, oxyDir) answer: a
// lookup, their attributes, and every call that makes, removes or renames
// a name in them.
type dirOps interface {
	gofs.NodeLookuper
	gofs.NodeGetattrer
	gofs.NodeCreater
	gofs.NodeMkdirer
	gofs.NodeUnlinker
	gofs.NodeRmdirer
	gofs.NodeRenamer
	gofs.NodeLinker
	gofs.NodeSymlinker
	gofs.NodeMknoder
}

var (
	_ dirOps = (*dirNode)(nil)
	_        = (gofs.NodeSetattrer)((*dirNode)(nil))
)

func isNotExist(err error) bool {
	return errors.Is(err, iofs.ErrNotExist) || errors.Is(err, store.ErrNotFound)
}

// child is the index.Path of name in d (the index reads d's path again: a
// node keeps no more of it than its level).
func (d *dirNode) child(name string) (index.Path, bool) {
	at, ok := index.ParsePath(d.path)
	if !ok {
		return index.Path{}, false
	}
	return at.Child(name)
}

// makeChild is index.Path.Make of name in d.
func (d *dirNode) makeChild(name string, dir bool) (index.Path, error) {
	return makeChildOf(d.path, name, dir)
}

// makeChildOf is index.Path.Make of name in the directory at path.
func makeChildOf(path, name string, dir bool) (index.Path, error) {
	at, ok := index.ParsePath(path)
	if !ok {
		return index.Path{}, index.ErrNotHere
	}
	return at.Make(name, dir)
}

// newDir makes the node of the directory name, at level.
func (d *dirNode) newDir(ctx context.Context, name string, level index.Level, ino uint64, out *fuse.EntryOut) *gofs.Inode {
	return d.m.newDirIn(ctx, d.EmbeddedInode(), index.JoinPath(d.path, name), level, ino, out)
}

// newDirIn makes the node of the directory p, at level, under parent.
func (m *Server) newDirIn(ctx context.Context, parent *gofs.Inode, p string, level index.Level, ino uint64, out *fuse.EntryOut) *gofs.Inode {
	m.dirAttr(&out.Attr)
	m.entryOut(out, true)
	c := &dirNode{base: base{m: m}, path: p, level: level}
	in := parent.NewInode(ctx, c, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino})
	if level == index.LevelSigner && m.leafs != nil {
		_, signer := index.SplitPath(p)
		m.links.made(in, signer) // its links get link ids (linkids.go)
	}
	return in
}

// newFile makes the node of an entry file: of the signature's current
// version (its generation; see versions.go), as st tells it (the state the
// request took: index.SigState, version and identity under one lock), or,
// while w, a write of this mount, is in progress on it, of that write's
// bytes (its generation is the write's: beside.go). A signature whose size
// is not known yet (size < 0) reports 0 with no attribute caching, so stat
// asks Getattr, which reads it (one GET); a lookup never does. Nor is the
// size of a file being written cached. The size is the state's (StatSig
// takes the state, then asks the view): the kernel never holds a size of
// another version than the node's (a newer version makes the node stale,
// and its use looks it up again).
func (d *dirNode) newFile(ctx context.Context, p string, e format.Entry, size int64, mod time.Time, st index.SigState, w *writeHandle, out *fuse.EntryOut) *gofs.Inode {
	return d.m.newFileIn(ctx, d.EmbeddedInode(), p, e, size, mod, st, w, out)
}

// newFileIn is newFile under parent: the entry's directory, or with view
// ids the leaves' directory (viewleaves.go).
func (m *Server) newFileIn(ctx context.Context, parent *gofs.Inode, p string, e format.Entry, size int64, mod time.Time, st index.SigState, w *writeHandle, out *fuse.EntryOut) *gofs.Inode {
	ver, gen, writing := st.Version, st.Version, w != nil
	if writing {
		gen = w.gen
	}
	known := size >= 0 && !writing
	if size < 0 {
		size = 0
	}
	if writing {
		mod = time.Time{}
	}
	m.sigAttr(&out.Attr, size, mod)
	m.entryOut(out, known)
	n := &entryNode{base: base{m: m}, path: p, e: e}
	n.ver.Store(ver)
	n.w.Store(w)
	if e.Kind == format.KindSig && !writing && st.IDKnown && st.ID.Size == size {
		n.ident.Store(&st.ID)
	}
	in := parent.NewInode(ctx, n, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: index.PathIno(p), Gen: gen})
	if en, ok := in.Operations().(*entryNode); ok { // n, or the node of this version the kernel holds
		en.lookedUp.Store(time.Now().UnixNano())
	}
	return in
}

func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	m := d.m
	if d.level == index.LevelRoot && name == leavesName && m.views != nil {
		// The leaves' directory (viewleaves.go): looked up once, by the
		// mount itself; the kernel can send no name with a slash.
		m.dirAttr(&out.Attr)
		return d.NewInode(ctx, &leafDir{base: base{m: m}}, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: index.PathIno(leavesName)}), 0
	}
	defer m.ops.start(opLookup)()
	if d.level == index.LevelRoot && name == oxyName {
		m.dirAttr(&out.Attr)
		m.entryOut(out, true)
		return d.NewInode(ctx, &oxyDir{base: base{m: m}}, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: index.PathIno(oxyName)}), 0
	}
	return m.lookupIn(ctx, d.EmbeddedInode(), d.path, name, out)
}

// lookupIn is a lookup of name in the directory dir (its go-fuse node
// parent, or with view ids, for an entry, the leaves' directory).
func (m *Server) lookupIn(ctx context.Context, parent *gofs.Inode, dir, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	child := func() (index.Path, bool) {
		at, ok := index.ParsePath(dir)
		if !ok {
			return index.Path{}, false
		}
		return at.Child(name)
	}
	p := index.JoinPath(dir, name)
	// One question of the index (StatSig): the name's node and, for a
	// signature, its state (index.SigState) under one lock.
	rc := m.reqCtx(ctx)
	defer rc.end()
	n, st, err := m.ix.StatSig(rc, p)
	if err != nil {
		if !isNotExist(err) {
			return nil, m.errno("lookup", p, err)
		}
		if m.virt.has(p) {
			if at, ok := child(); ok { // it is: Mkdir made it
				return m.newDirIn(ctx, parent, p, at.Level, index.PathIno(p), out), 0
			}
		}
		if h := m.standsFor(ctx, p); h != nil { // a refused create stands for nothing
			return m.newFileIn(ctx, parent, p, h.e, h.size.Load(), time.Time{}, st, h, out), 0
		}
		return nil, syscall.ENOENT
	}
	switch n.Type {
	case index.NodeDir:
		at, ok := child()
		if !ok { // never: the index found it
			return nil, syscall.ENOENT
		}
		return m.newDirIn(ctx, parent, p, at.Level, n.Ino, out), 0
	case index.NodeSymlink:
		m.linkAttr(&out.Attr, n.Target)
		m.entryOut(out, true)
		l := &linkNode{base: base{m: m}, target: n.Target}
		return parent.NewInode(ctx, l, gofs.StableAttr{Mode: syscall.S_IFLNK, Ino: n.Ino}), 0
	}
	if h := m.standsFor(ctx, p); h != nil {
		return m.newFileIn(ctx, parent, p, n.Entry, h.size.Load(), time.Time{}, st, h, out), 0
	}
	return m.newFileIn(ctx, parent, p, n.Entry, n.Size, n.ModTime, st, nil, out), 0
}

// standsFor is the write whose node a lookup of p from the request's
// thread gives: that thread's reservation (the kernel's retry of the open
// reserveWrite answered ESTALE looks the name up before it opens), else
// the write in progress on the name (pendingWrites.writing); nil: none.
func (m *Server) standsFor(ctx context.Context, p string) *writeHandle {
	if h := m.pending.reservation(p, callerTid(ctx)); h != nil {
		return h
	}
	return m.pending.writing(p)
}

func typeMode(t index.NodeType) uint32 {
	switch t {
	case index.NodeDir:
		return syscall.S_IFDIR
	case index.NodeSymlink:
		return syscall.S_IFLNK
	}
	return syscall.S_IFREG
}

// list is the directory's listing: the index's, with the virtual
// directories and files being created, and .oxy at the root.
func (d *dirNode) list(ctx context.Context) ([]fuse.DirEntry, syscall.Errno) {
	return d.m.listDir(ctx, d.path, d.level)
}

// listDir is the listing of the directory at path, at level.
func (m *Server) listDir(ctx context.Context, path string, level index.Level) ([]fuse.DirEntry, syscall.Errno) {
	scratch := dirNamesPool.Get().(*[]index.DirName)
	defer func() {
		clear(*scratch) // hold no name past the listing
		*scratch = (*scratch)[:0]
		dirNamesPool.Put(scratch)
	}()
	rc := m.reqCtx(ctx)
	defer rc.end()
	names, err := m.ix.ReadDirNames(rc, path, (*scratch)[:0])
	*scratch = names
	if err != nil && !(isNotExist(err) && m.virt.has(path)) {
		return nil, m.errno("readdir", path, err)
	}
	list := make([]fuse.DirEntry, 0, len(names)+1)
	for _, n := range names {
		list = append(list, fuse.DirEntry{Name: n.Name, Ino: n.Ino, Mode: typeMode(n.Type)})
	}
	extra := false
	has := func(name string) bool {
		_, found := slices.BinarySearchFunc(names, name, func(n index.DirName, s string) int { return strings.Compare(n.Name, s) })
		return found
	}
	for _, name := range m.virt.children(path) {
		if !has(name) {
			list = append(list, fuse.DirEntry{Name: name, Ino: index.ChildIno(path, name), Mode: syscall.S_IFDIR})
			extra = true
		}
	}
	if level == index.LevelObject {
		for _, name := range m.pending.children(path) {
			if !has(name) {
				list = append(list, fuse.DirEntry{Name: name, Ino: index.ChildIno(path, name), Mode: syscall.S_IFREG})
				extra = true
			}
		}
	}
	if level == index.LevelRoot {
		list = append(list, fuse.DirEntry{Name: oxyName, Ino: index.PathIno(oxyName), Mode: syscall.S_IFDIR})
		extra = true
	}
	if extra {
		slices.SortFunc(list, func(a, b fuse.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	}
	return list, 0
}

// dirNamesPool holds listDir's scratch for the index's names (the listing
// kept is the []fuse.DirEntry made from them): a walk lists every
// directory once, and each listing would otherwise leave its names' slice
// as garbage. Its slices hold no name between listings.
var dirNamesPool = sync.Pool{New: func() any { return new([]index.DirName) }}

var _ = (gofs.NodeOnForgetter)((*dirNode)(nil))

// OnForget: go-fuse dropped the node (the kernel forgot it). A signer's
// directory leaves linkDirs (linkids.go; with leaf ids only).
func (d *dirNode) OnForget() {
	if d.level == index.LevelSigner && d.m.leafs != nil {
		d.m.links.dropped(d.EmbeddedInode())
	}
}

func (d *dirNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	defer d.m.ops.start(opGetattr)()
	d.m.dirAttr(&out.Attr)
	out.SetTimeout(d.m.attrTTL)
	return 0
}

// Setattr on a directory: a directory's mode, owner and times are the
// mount's, so chmod, chown and utimes are EPERM (and a size EISDIR).
func (d *dirNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	defer d.m.ops.start(opSetattr)()
	if d.m.ro {
		return syscall.EROFS
	}
	if _, ok := in.GetSize(); ok {
		return syscall.EISDIR
	}
	if errno := refuseOwnAttrs(in, func() bool { return false }); errno != 0 {
		return errno
	}
	d.m.dirAttr(&out.Attr)
	out.SetTimeout(d.m.attrTTL)
	return 0
}

// exists reports whether p is in the index or is a virtual directory.
func (m *Server) exists(ctx context.Context, p string) (bool, syscall.Errno) {
	if m.virt.has(p) {
		return true, 0
	}
	rc := m.reqCtx(ctx)
	defer rc.end()
	_, err := m.ix.Stat(rc, p)
	switch {
	case err == nil:
		return true, 0
	case isNotExist(err):
		return false, 0
	}
	return false, m.errno("stat", p, err)
}

// makeErrno is the errno of a name index.Path.Make refuses: EINVAL for a
// name that cannot stand there, EPERM where the tree makes nothing so.
func makeErrno(err error) syscall.Errno {
	if errors.Is(err, index.ErrBadName) {
		return syscall.EINVAL
	}
	return syscall.EPERM
}

// Mkdir makes a virtual directory, kept in memory until unmount, so that
// mkdir -p sig/ab/cdef… then cp works. Only <hh> and <rest> directories can
// be made (index.Path.Make): a wrong place is EPERM, a wrong name EINVAL.
func (d *dirNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	m := d.m
	defer m.ops.start(opMkdir)()
	if m.ro {
		return nil, syscall.EROFS
	}
	at, err := d.makeChild(name, true)
	if err != nil {
		return nil, makeErrno(err)
	}
	p := index.JoinPath(d.path, name)
	if ok, errno := m.exists(ctx, p); errno != 0 {
		return nil, errno
	} else if ok {
		return nil, syscall.EEXIST
	}
	m.virt.add(p)
	return d.newDir(ctx, name, at.Level, index.PathIno(p), out), 0
}

// Create starts writing the entry name of an object directory. Nothing is
// sent until the file is closed (see writeHandle).
func (d *dirNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return d.m.createIn(ctx, d.EmbeddedInode(), kernelDir{in: d.EmbeddedInode()}, d.path, name, flags, out)
}

// createIn is a create of name in the directory dir: its node is made
// under parent (dir's, or with view ids the leaves' directory), and kd is
// the directory the kernel holds, told if the create never lands.
func (m *Server) createIn(ctx context.Context, parent *gofs.Inode, kd kernelDir, dir, name string, flags uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	defer m.ops.start(opCreate)()
	if m.ro {
		return nil, nil, 0, syscall.EROFS
	}
	at, err := makeChildOf(dir, name, false)
	if err != nil {
		return nil, nil, 0, makeErrno(err)
	}
	p := index.JoinPath(dir, name)
	if errno := m.sides.refuse(m, p, name); errno != 0 {
		return nil, nil, 0, errno
	}
	if flags&syscall.O_EXCL != 0 || at.Kind == format.KindSig && !m.overwrite {
		// O_EXCL, or a signature that would replace one without
		// --allow-overwrite (the kernel creates a name it has no entry for).
		if ok, errno := m.exists(ctx, p); errno != 0 {
			return nil, nil, 0, errno
		} else if ok {
			return nil, nil, 0, syscall.EEXIST
		}
	}
	e := at.Entry()
	h := m.newWriteHandle(p, e, nil, flags, true)
	in := m.newFileIn(ctx, parent, p, e, 0, time.Time{}, m.ix.SigState(e), h, out)
	h.node, _ = in.Operations().(*entryNode)
	h.parent, h.name = kd, name
	m.pending.add(p, h)
	return in, h, fuse.FOPEN_DIRECT_IO, 0
}

// The namespace never changes but by adding entries: every other change is
// refused, and nothing is sent.

func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	defer d.m.ops.start(opUnlink)()
	return d.m.refused()
}

func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	defer d.m.ops.start(opRmdir)()
	return d.m.refused()
}

func (d *dirNode) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	defer d.m.ops.start(opRename)()
	return d.m.refused()
}

func (d *dirNode) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	defer d.m.ops.start(opLink)()
	return nil, d.m.refused()
}

func (d *dirNode) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	defer d.m.ops.start(opSymlink)()
	return nil, d.m.refused()
}

func (d *dirNode) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	defer d.m.ops.start(opMknod)()
	return nil, d.m.refused()
}

// touchSlack is how far from now a time may be and still be touch's "now".
const touchSlack = time.Minute

// refuseOwnAttrs is EPERM for a SETATTR that would change what the mount
// owns: the mode, the owner or group, or the times — unless the times are
// set to now (touch) and openForWriting says the node is open for writing.
func refuseOwnAttrs(in *fuse.SetAttrIn, openForWriting func() bool) syscall.Errno {
	if in.Valid&(fuse.FATTR_MODE|fuse.FATTR_UID|fuse.FATTR_GID) != 0 {
		return syscall.EPERM
	}
	if in.Valid&(fuse.FATTR_ATIME|fuse.FATTR_MTIME|fuse.FATTR_ATIME_NOW|fuse.FATTR_MTIME_NOW) == 0 {
		return 0
	}
	now := time.Now()
	for _, get := range []func() (time.Time, bool){in.GetATime, in.GetMTime} {
		if t, ok := get(); ok && (t.Before(now.Add(-touchSlack)) || t.After(now.Add(touchSlack))) {
			return syscall.EPERM
		}
	}
	if !openForWriting() {
		return syscall.EPERM
	}
	return 0
}
