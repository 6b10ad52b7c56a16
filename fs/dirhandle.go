package fs

import (
	"context"
	"hash/maphash"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

var _ = (gofs.NodeOpendirHandler)((*dirNode)(nil))

// OpendirHandle makes the handle a READDIR(PLUS) is served through. The
// kernel sends no OPENDIR (see noOpendir): every read comes with handle 0
// and is served by a handle of its own, opened here in process. The flags
// say what the kernel assumes anyway (FOPEN_CACHE_DIR: it keeps the
// listing, and until it is told that the listing changed, Invalidate or an
// own write, a warm ls or find of the directory costs no request). The
// listing is made at the first read, not here.
func (d *dirNode) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	h := &dirHandle{d: d, m: d.m, path: d.path, level: d.level, slot: &d.partial, listed: &d.listed}
	return h, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// listing is one listing of a directory, and the state of the mount it was
// made from.
type listing struct {
	version listVersion
	entries []fuse.DirEntry
}

// listVersion changes whenever a listing may: an index generation (a
// refresh that changed the tree, an own write), a mkdir, a file created or
// closed.
type listVersion struct{ gen, virt, pending uint64 }

func (m *Server) listVersion() listVersion {
	return listVersion{gen: m.ix.Generation(), virt: m.virt.version.Load(), pending: m.pending.version.Load()}
}

// maxRelists bounds how many times one request lists a directory that a
// refresh or a write changed while it was listed (dirHandle.load); each
// refresh takes far longer than a listing.
const maxRelists = 5

// testHookListed, when set (tests), runs after a listing is made and
// before the kernel is told of it. Atomic.
var testHookListed atomic.Pointer[func(path string)]

// dirHandle streams one listing of a directory.
//
// A listing longer than one reply, and the kernel's last request of every
// listing (the one that finds its end), arrive as separate READDIR(PLUS)
// requests, each on a handle of its own. The listing a handle read from is
// kept on the node (dirNode.partial) until a request finds its end, and a
// request that continues where the last stopped reads from it while the
// mount has not changed since (listVersion): the requests of one listing
// see one snapshot, each name once, and the request that finds the end
// costs no new listing.
type dirHandle struct {
	d      *dirNode // nil for a directory of a view id (viewfs.go)
	m      *Server
	path   string
	level  index.Level
	slot   *atomic.Pointer[listing] // the listing being read: dirNode.partial, or the view id's (viewPartials)
	listed *listedHash              // dirNode.listed; nil for a view id's directory (see Invalidate)
	ls     *listing                 // nil until the first read
	pos    int
	served int // entries this handle produced
}

var (
	_ = (gofs.FileReaddirenter)((*dirHandle)(nil))
	_ = (gofs.FileSeekdirer)((*dirHandle)(nil))
	_ = (gofs.FileReleasedirer)((*dirHandle)(nil))
	_ = (gofs.FileLookuper)((*dirHandle)(nil))
)

func (h *dirHandle) load(ctx context.Context) syscall.Errno {
	m := h.m
	v := m.listVersion()   // before the listing: a change while it is made makes it stale
	var resumeAfter string // the last name a listing that went stale served
	if h.pos > 0 {
		ls := h.slot.Load()
		if ls != nil && ls.version == v {
			h.ls = ls
			return 0
		}
		if ls != nil && h.pos <= len(ls.entries) {
			resumeAfter = ls.entries[h.pos-1].Name
		}
	}
	defer m.ops.start(opReaddir)()
	var list []fuse.DirEntry
	for try := 1; ; try++ {
		var errno syscall.Errno
		if list, errno = m.listDir(ctx, h.path, h.level); errno != 0 {
			return errno
		}
		if hook := testHookListed.Load(); hook != nil {
			(*hook)(h.path)
		}
		// What the kernel may now cache — stored before the version is
		// checked again: a refresh whose generation moves after the
		// check runs its Invalidate after this store, sees this hash and
		// drops the listing if it changed. One that moved before the
		// check may have run its Invalidate before the store (the
		// listing made from the older view would then stay in the
		// kernel until the next change): list again.
		if h.listed != nil {
			h.listed.Store(listHash(list))
		}
		now := m.listVersion()
		if now == v || try == maxRelists {
			break
		}
		v = now
	}
	if h.pos == 0 && h.level == index.LevelObject {
		// A lister that stats what it lists (ls -l, du, find -size) asks
		// next for these names' attributes: the index fetches the
		// signatures' bytes ahead when stats follow listings
		// (index.SigsListed; no request for find -type f or ls -R).
		m.ix.SigsListed(h.path)
	}
	if resumeAfter != "" {
		// The mount changed in the middle of a listing (a refresh, a write):
		// continue after the last name served, not at the same position,
		// so a name that stayed is neither skipped nor served twice.
		h.pos = resumePos(list, resumeAfter)
	}
	h.ls = &listing{version: v, entries: list}
	return 0
}

func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	e, ok, errno := h.next(ctx)
	if !ok {
		return nil, errno
	}
	return &e, 0
}

// next is Readdirent's entry by value (viewFS.readDir's: no allocation
// per name served); ok is false at the end and on an error.
func (h *dirHandle) next(ctx context.Context) (e fuse.DirEntry, ok bool, errno syscall.Errno) {
	if h.ls == nil {
		if errno := h.load(ctx); errno != 0 {
			return e, false, errno
		}
	}
	if h.pos >= len(h.ls.entries) {
		return e, false, 0
	}
	h.pos++
	h.served++
	e = h.ls.entries[h.pos-1]
	e.Off = uint64(h.pos)
	return e, true, 0
}

// Lookup answers for READDIRPLUS, from the listing just read: directories
// get a node and their attributes (find and ls -R descend into them without
// a LOOKUP), other names none. A READDIRPLUS entry with node id 0 is a
// plain directory entry to the kernel (fuse_direntplus_link), so find -type
// f, which needs only the type, costs no node per file, here or in the
// kernel; a stat of a file costs its LOOKUP, as a stat after a plain
// READDIR does (and a signature whose size is not known yet needs its
// GETATTR either way).
func (h *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	d := h.d
	if h.ls == nil || h.pos == 0 || h.ls.entries[h.pos-1].Name != name || (d.level == index.LevelRoot && name == oxyName) {
		return d.Lookup(ctx, name, out)
	}
	e := h.ls.entries[h.pos-1]
	if e.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, syscall.ENOENT // not an error: the entry goes out without a node
	}
	at, ok := d.child(name)
	if !ok { // never: the index or mkdir made it
		return nil, syscall.ENOENT
	}
	defer d.m.ops.start(opLookup)()
	return d.newDir(ctx, name, at.Level, e.Ino, out), 0
}

// Seekdir: offsets are positions in the listing (0 is its start).
func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if off == 0 {
		h.ls = nil // rewinddir sees what changed since
	}
	h.pos = int(off)
	return 0
}

// Releasedir keeps the listing for the requests still to come, or drops it
// once a request found the end.
func (h *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) {
	switch {
	case h.ls == nil:
	case h.served > 0:
		h.slot.Store(h.ls)
	default:
		h.slot.CompareAndSwap(h.ls, nil)
	}
}

// resumePos is where a listing continues after the name last: just past it
// if it is still there, else before the first name that sorts after it
// (listings are sorted by name).
func resumePos(list []fuse.DirEntry, last string) int {
	for i, e := range list {
		if e.Name == last {
			return i + 1
		}
		if e.Name > last {
			return i
		}
	}
	return len(list)
}

// listSeed seeds listHash: its values never leave the process.
var listSeed = maphash.MakeSeed()

// listHash is a hash of a listing's names and types.
func listHash(list []fuse.DirEntry) uint64 {
	var h maphash.Hash
	h.SetSeed(listSeed)
	for _, e := range list {
		h.WriteString(e.Name)
		h.WriteByte(byte(e.Mode >> 12)) // never in a name: ends it
	}
	return h.Sum64() | 1 // never 0: 0 is "never listed"
}

// listedHash is what the kernel may cache of a directory: 0 if it never
// read its listing.
type listedHash = atomic.Uint64

// notifyListings tells the kernel that the listings of the by-signer
// directories a signature write changed are stale (the kernel resets the
// parent's own listing on CREATE). It runs before close returns, so the
// next ls shows the write.
func (m *Server) notifyListings(e format.Entry) {
	if e.Kind != format.KindSig {
		return
	}
	root := m.root.EmbeddedInode()
	signers := root.GetChild(index.BySigner)
	if signers == nil {
		return
	}
	signers.NotifyContent(0, 0)
	if dir := signers.GetChild(e.Value); dir != nil {
		dir.NotifyContent(0, 0)
	}
}
