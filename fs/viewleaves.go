package fs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
)

// The leaves' directory. With view ids (viewids.go) an object directory
// has no go-fuse node, but its entry files keep theirs (entryNode, and all
// of versions.go, beside.go, reserve.go, pending.go and write.go with
// them): leaves are few in the kernel (a READDIRPLUS gives a file no node;
// only a stat or an open makes one). Their nodes hang under one directory
// of the root's, leafDir, named leavesName, which the kernel never sees (a
// name with a slash it cannot send): the mount looks it up once (Mount),
// and viewFS sends it the LOOKUP and the CREATE of a name in an object
// directory with the entry's whole path as the name. The bridge then keeps
// the leaf as leafDir's child of that name, so a leaf the kernel holds is
// m.leaves.GetChild(key), its key being its path.

// leavesName is the leaves' directory's name.
const leavesName = "/leaves"

// leafDir is the leaves' directory: Lookup and Create take an entry's path.
type leafDir struct{ base }

var (
	_ = (gofs.NodeLookuper)((*leafDir)(nil))
	_ = (gofs.NodeCreater)((*leafDir)(nil))
)

// entryDir splits an entry's path into its object directory's and its name.
func entryDir(p string) (dir string, at index.Path, name string, ok bool) {
	dir, name = index.SplitPath(p)
	at, ok = index.ParsePath(dir)
	return dir, at, name, ok && at.Level == index.LevelObject
}

func (l *leafDir) Lookup(ctx context.Context, p string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	defer l.m.ops.start(opLookup)()
	dir, _, name, ok := entryDir(p)
	if !ok {
		return nil, syscall.ENOENT
	}
	return l.m.lookupIn(ctx, l.EmbeddedInode(), dir, name, out)
}

func (l *leafDir) Create(ctx context.Context, p string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	m := l.m
	dir, at, name, ok := entryDir(p)
	if !ok {
		defer m.ops.start(opCreate)()
		return nil, nil, 0, syscall.EPERM
	}
	return m.createIn(ctx, l.EmbeddedInode(), m.viewDir(ctx, dir, at), dir, name, flags, out)
}

// kernelDir is a directory the kernel may hold, to be told that a name in
// it or its listing changed: a go-fuse node, or the view ids the kernel
// may hold for it (viewIDs.held).
type kernelDir struct {
	m   *Server
	in  *gofs.Inode
	ids [2]uint64 // view ids; 0: none
}

// viewDir is the kernelDir of the view directory dir, at at.
func (m *Server) viewDir(ctx context.Context, dir string, at index.Path) kernelDir {
	return kernelDir{m: m, ids: m.views.held(ctx, dir, at)}
}

func (d kernelDir) held() bool { return d.in != nil || d.ids[0] != 0 }

// notifyEntry drops the kernel's name in the directory (NotifyEntry).
func (d kernelDir) notifyEntry(name string) {
	if d.in != nil {
		d.in.NotifyEntry(name)
	}
	for _, id := range d.ids {
		if id != 0 {
			d.m.server.EntryNotify(id, name)
		}
	}
}

// notifyContent drops the kernel's listing and attributes of the directory.
func (d kernelDir) notifyContent() {
	if d.in != nil {
		d.in.NotifyContent(0, 0)
	}
	for _, id := range d.ids {
		if id != 0 {
			d.m.server.InodeNotify(id, 0, 0)
		}
	}
}

// leafEntry is the leaf node the kernel holds for the entry at key, with
// its directory and name (kernelEntry with view ids).
func (m *Server) leafEntry(key string) (dir kernelDir, name string, n *entryNode) {
	kid := m.leaves.GetChild(key)
	if kid == nil {
		return kernelDir{}, "", nil
	}
	n, _ = kid.Operations().(*entryNode)
	d, at, name, ok := entryDir(key)
	if !ok || n == nil {
		return kernelDir{}, "", nil
	}
	return m.viewDir(context.Background(), d, at), name, n
}

// leafDirOf is the directory and name of the entry at key (the kernelDir
// of its object directory's view ids).
func (m *Server) leafDirOf(key string) (kernelDir, string) {
	d, at, name, ok := entryDir(key)
	if !ok {
		return kernelDir{}, ""
	}
	return m.viewDir(context.Background(), d, at), name
}

// dropStaleLeaves drops the names of every stale signature leaf the kernel
// holds (dropStaleNames with view ids).
func (m *Server) dropStaleLeaves() {
	for key, kid := range m.leaves.Children() {
		if n, ok := kid.Operations().(*entryNode); ok && n.stale() {
			if dir, name, _ := m.leafEntry(key); dir.held() {
				dir.notifyEntry(name)
			}
		}
	}
	if m.leafs != nil {
		for _, n := range m.leafs.kept() {
			if n.stale() {
				if dir, name := m.leafDirOf(n.path); dir.held() {
					dir.notifyEntry(name)
				}
			}
		}
	}
}
