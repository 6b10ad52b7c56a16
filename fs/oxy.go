package fs

import (
	"context"
	"slices"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
)

// The .oxy/ debug view (DESIGN §4). Its files report the exact size of what
// a read returns (oxyfile.go says how stat and read agree). Browsing it and
// reading status, journal and retired cost nothing; reading a list costs
// one GET each open.
const (
	oxyName      = ".oxy"
	oxyStatus    = "status"
	oxyJournal   = "journal"
	oxyRetired   = "retired"
	oxyListsName = "lists"
)

var oxyNames = []string{oxyJournal, oxyListsName, oxyRetired, oxyStatus} // sorted

// oxyDir is .oxy/ (lists false) or .oxy/lists/ (lists true).
type oxyDir struct {
	base
	lists bool

	listed listedHash // .oxy/lists/: the listing last read (see Invalidate)
}

var (
	_ dirOps = (*oxyDir)(nil)
	_        = (gofs.NodeOpendirHandler)((*oxyDir)(nil))
)

func (d *oxyDir) dirPath() string {
	if d.lists {
		return oxyName + "/" + oxyListsName
	}
	return oxyName
}

// liveLists names the live lists of the current view.
func (m *Server) liveLists() []string {
	var names []string
	for _, l := range m.ix.Status().LiveLists {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	return names
}

func (d *oxyDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	m := d.m
	defer m.ops.start(opLookup)()
	p := index.JoinPath(d.dirPath(), name)
	var f *oxyFile
	switch {
	case d.lists:
		if _, ok := slices.BinarySearch(m.liveLists(), name); !ok {
			return nil, syscall.ENOENT
		}
		f = &oxyFile{base: base{m: m}, what: "list", key: name}
	case name == oxyListsName:
		m.dirAttr(&out.Attr)
		m.entryOut(out, true)
		return d.NewInode(ctx, &oxyDir{base: base{m: m}, lists: true}, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: index.PathIno(p)}), 0
	case name == oxyStatus, name == oxyJournal, name == oxyRetired:
		f = &oxyFile{base: base{m: m}, what: name}
	default:
		return nil, syscall.ENOENT
	}
	f.path = p
	var aout fuse.AttrOut
	if errno := f.lookupAttr(ctx, &aout); errno != 0 {
		return nil, errno
	}
	out.Attr = aout.Attr
	out.SetAttrTimeout(aout.Timeout())
	// A list goes away when a fold retires it, and journal and retired
	// are a node per text (oxyFile.gen): let the kernel ask again.
	out.SetEntryTimeout(m.entryTTL)
	if d.lists || f.what == oxyJournal || f.what == oxyRetired {
		out.SetEntryTimeout(0)
	}
	return d.NewInode(ctx, f, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: index.PathIno(p), Gen: f.gen}), 0
}

// OpendirHandle serves a listing of .oxy/ or .oxy/lists/ (the kernel
// sends no OPENDIR: see noOpendir; the flags are what it assumes anyway).
func (d *oxyDir) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return &oxyDirHandle{d: d}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// listing is the directory's names.
func (d *oxyDir) listing() []fuse.DirEntry {
	defer d.m.ops.start(opReaddir)()
	var list []fuse.DirEntry
	if d.lists {
		list = d.listsListing()
		d.listed.Store(listHash(list)) // the kernel keeps it (see noOpendir)
	} else {
		for _, name := range oxyNames {
			mode := uint32(syscall.S_IFREG)
			if name == oxyListsName {
				mode = syscall.S_IFDIR
			}
			list = append(list, fuse.DirEntry{Name: name, Mode: mode, Ino: index.ChildIno(oxyName, name)})
		}
	}
	return list
}

// oxyDirHandle streams one listing of an oxyDir. A READDIRPLUS gives a
// node to lists/ only, as dirHandle does to directories only: a file's
// attributes are for the stat that asks. Looking .oxy/status up renders its
// text, which every stat and open within oxyHold then gets: a READDIRPLUS
// that looked it up made a find over the mount, and a read of .oxy/status
// just after it, report the counts of when find passed .oxy.
type oxyDirHandle struct {
	d    *oxyDir
	list []fuse.DirEntry
	read bool // list is made
	pos  int
}

var (
	_ = (gofs.FileReaddirenter)((*oxyDirHandle)(nil))
	_ = (gofs.FileSeekdirer)((*oxyDirHandle)(nil))
	_ = (gofs.FileLookuper)((*oxyDirHandle)(nil))
)

func (h *oxyDirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if !h.read {
		h.list, h.read = h.d.listing(), true
	}
	if h.pos >= len(h.list) {
		return nil, 0
	}
	h.pos++
	e := h.list[h.pos-1]
	e.Off = uint64(h.pos)
	return &e, 0
}

// Seekdir: offsets are positions in the listing (0 is its start, which
// sees what changed since).
func (h *oxyDirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if off == 0 {
		h.read = false
	}
	h.pos = int(off)
	return 0
}

// Lookup answers for READDIRPLUS: a node for lists/, none for a file (not
// an error: the entry goes out without one).
func (h *oxyDirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if !h.d.lists && name == oxyListsName {
		return h.d.Lookup(ctx, name, out)
	}
	return nil, syscall.ENOENT
}

// listsListing is the listing of .oxy/lists/: the live lists.
func (d *oxyDir) listsListing() []fuse.DirEntry {
	var list []fuse.DirEntry
	for _, name := range d.m.liveLists() {
		list = append(list, fuse.DirEntry{Name: name, Mode: syscall.S_IFREG, Ino: index.ChildIno(d.dirPath(), name)})
	}
	return list
}

func (d *oxyDir) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	defer d.m.ops.start(opGetattr)()
	d.m.attr(&out.Attr, syscall.S_IFDIR|(d.m.dirMode&0o555), 2, 0)
	out.SetTimeout(d.m.attrTTL)
	return 0
}

// .oxy/ is a read-only view.

func (d *oxyDir) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	defer d.m.ops.start(opCreate)()
	return nil, nil, 0, syscall.EROFS
}

func (d *oxyDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	defer d.m.ops.start(opMkdir)()
	return nil, syscall.EROFS
}

func (d *oxyDir) Unlink(ctx context.Context, name string) syscall.Errno {
	defer d.m.ops.start(opUnlink)()
	return syscall.EROFS
}

func (d *oxyDir) Rmdir(ctx context.Context, name string) syscall.Errno {
	defer d.m.ops.start(opRmdir)()
	return syscall.EROFS
}

func (d *oxyDir) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	defer d.m.ops.start(opRename)()
	return syscall.EROFS
}

func (d *oxyDir) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	defer d.m.ops.start(opLink)()
	return nil, syscall.EROFS
}

func (d *oxyDir) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	defer d.m.ops.start(opSymlink)()
	return nil, syscall.EROFS
}

func (d *oxyDir) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	defer d.m.ops.start(opMknod)()
	return nil, syscall.EROFS
}
