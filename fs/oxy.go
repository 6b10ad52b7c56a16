package fs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
)

// The .oxy/ debug view (DESIGN §4). Its files are made when opened, so they
// report size 0 (as /proc does) and are read with direct I/O. Browsing it
// costs nothing; reading journal, retired or a list costs one GET each open.
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
	_ = (gofs.NodeLookuper)((*oxyDir)(nil))
	_ = (gofs.NodeReaddirer)((*oxyDir)(nil))
	_ = (gofs.NodeGetattrer)((*oxyDir)(nil))
	_ = (gofs.NodeCreater)((*oxyDir)(nil))
	_ = (gofs.NodeMkdirer)((*oxyDir)(nil))
	_ = (gofs.NodeUnlinker)((*oxyDir)(nil))
	_ = (gofs.NodeRmdirer)((*oxyDir)(nil))
	_ = (gofs.NodeRenamer)((*oxyDir)(nil))
	_ = (gofs.NodeLinker)((*oxyDir)(nil))
	_ = (gofs.NodeSymlinker)((*oxyDir)(nil))
	_ = (gofs.NodeMknoder)((*oxyDir)(nil))
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
	case name == oxyStatus:
		f = &oxyFile{base: base{m: m}, what: name}
	case name == oxyJournal:
		f = &oxyFile{base: base{m: m}, what: name, key: store.JournalKey}
	case name == oxyRetired:
		f = &oxyFile{base: base{m: m}, what: name, key: store.RetiredKey}
	default:
		return nil, syscall.ENOENT
	}
	f.path = p
	f.attr(&out.Attr)
	// A list goes away when a fold retires it: let the kernel ask again.
	out.SetEntryTimeout(m.entryTTL)
	if d.lists {
		out.SetEntryTimeout(0)
	}
	out.SetAttrTimeout(m.attrTTL)
	return d.NewInode(ctx, f, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: index.PathIno(p)}), 0
}

func (d *oxyDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
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
	return gofs.NewListDirStream(list), 0
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

// oxyFile is one file of .oxy/: status, journal, retired or lists/<name>.
type oxyFile struct {
	base
	path string
	what string // "status", "journal", "retired", "list"
	key  string // the store key it shows (journal, retired, list)
}

var (
	_ = (gofs.NodeGetattrer)((*oxyFile)(nil))
	_ = (gofs.NodeSetattrer)((*oxyFile)(nil))
	_ = (gofs.NodeOpener)((*oxyFile)(nil))
)

func (f *oxyFile) attr(a *fuse.Attr) {
	f.m.attr(a, syscall.S_IFREG|(f.m.fileMode&0o444), 1, 0)
}

func (f *oxyFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	defer f.m.ops.start(opGetattr)()
	f.attr(&out.Attr)
	out.SetTimeout(f.m.attrTTL)
	return 0
}

func (f *oxyFile) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	defer f.m.ops.start(opSetattr)()
	return syscall.EROFS
}

func (f *oxyFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	m := f.m
	defer m.ops.start(opOpen)()
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		return nil, 0, syscall.EROFS
	}
	if f.what == "list" {
		return f.openList(ctx)
	}
	data, err := f.content(bg(ctx))
	if err != nil {
		return nil, 0, m.errno("read", f.path, err)
	}
	return &readHandle{m: m, data: data}, fuse.FOPEN_DIRECT_IO, 0
}

// openList opens .oxy/lists/<name>: the list's compressed bytes are read
// once (one GET, at most store.MaxEntryListBytes) and its text is decoded as
// it is read (store.EntryListText), never held whole.
func (f *oxyFile) openList(ctx context.Context) (gofs.FileHandle, uint32, syscall.Errno) {
	data, err := f.m.ix.Store().Get(bg(ctx), f.key)
	if err == nil {
		var lt *store.EntryListText
		if lt, err = store.NewEntryListText(data); err == nil {
			return &listHandle{m: f.m, path: f.path, lt: lt}, fuse.FOPEN_DIRECT_IO, 0
		}
		err = fmt.Errorf("decode %s: %w", f.key, err)
	}
	return nil, 0, f.m.errno("read", f.path, err)
}

// listHandle is an open .oxy/lists/<name>.
type listHandle struct {
	m    *Server
	path string
	lt   *store.EntryListText
}

var (
	_ = (gofs.FileReader)((*listHandle)(nil))
	_ = (gofs.FileReleaser)((*listHandle)(nil))
)

func (h *listHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	defer h.m.ops.start(opRead)()
	n, err := h.lt.ReadAt(dest, off)
	if err != nil && err != io.EOF {
		return nil, h.m.errno("read", h.path, err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *listHandle) Release(ctx context.Context) syscall.Errno {
	defer h.m.ops.start(opRelease)()
	h.lt.Close()
	return 0
}

// statusDoc is .oxy/status: the index's status, with the mount's own.
type statusDoc struct {
	index.Status
	Mountpoint string           `json:"mountpoint"`
	ReadOnly   bool             `json:"read_only"`
	FuseOps    map[string]int64 `json:"fuse_ops"`
}

// content makes the file's text, as of now.
func (f *oxyFile) content(ctx context.Context) ([]byte, error) {
	m := f.m
	switch f.what {
	case oxyStatus:
		doc := statusDoc{Status: m.ix.Status(), Mountpoint: m.dir, ReadOnly: m.ro, FuseOps: m.Ops()}
		data, err := json.MarshalIndent(doc, "", "  ")
		return append(data, '\n'), err
	case oxyJournal, oxyRetired:
		data, err := m.ix.Store().Get(ctx, f.key)
		if errors.Is(err, store.ErrNotFound) {
			return []byte{}, nil // absent means empty
		}
		return data, err
	}
	return nil, fmt.Errorf("no content for %s", f.what)
}
