// Command floorfs is the FUSE transport's floor on this machine: a trivial
// filesystem that serves a copy of a directory tree from memory — no index,
// no store, no go-fuse inode tree, no request to anything. scripts/bench
// mounts it beside oxyfs on the same tree (the copy of the mount it makes
// on tmpfs) and reports oxyfs's find and ls -R as a ratio to it: what
// oxyfs costs above the kernel round trips any FUSE filesystem pays here.
//
//	floorfs SRC MOUNTPOINT
//
// It reads SRC once (every directory, every regular file's bytes, every
// symbolic link's target) into an array of nodes whose index is the inode
// number, prints "ready: N names" and serves until SIGINT/SIGTERM or an
// unmount. It answers go-fuse's raw protocol (fuse.RawFileSystem) directly:
// LOOKUP is a map lookup, READDIR(PLUS) a slice of a sorted list, READ a
// slice of the bytes. It caches in the kernel what oxyfs caches — names and
// attributes for an hour, directory listings and file contents kept — and
// declines OPENDIR as oxyfs does (FUSE_NO_OPENDIR_SUPPORT), so the rows
// compare the same kernel traffic. As root it mounts with mount(2).
package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is one name of the tree; its index in floor.nodes is its inode.
type node struct {
	mode     uint32
	data     []byte // a regular file's bytes, a link's target
	children []fuse.DirEntry
	byName   map[string]uint64
}

type floor struct {
	fuse.RawFileSystem
	nodes []node // [0] unused, [1] the root
}

func load(src string) (*floor, error) {
	f := &floor{RawFileSystem: fuse.NewDefaultRawFileSystem(), nodes: make([]node, 2)}
	f.nodes[1] = node{mode: syscall.S_IFDIR | 0o755, byName: map[string]uint64{}}
	dirs := map[string]uint64{".": 1}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		var nd node
		switch {
		case d.IsDir():
			nd = node{mode: syscall.S_IFDIR | 0o755, byName: map[string]uint64{}}
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			nd = node{mode: syscall.S_IFLNK | 0o777, data: []byte(t)}
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			nd = node{mode: syscall.S_IFREG | 0o644, data: b}
		default:
			return nil
		}
		ino := uint64(len(f.nodes))
		f.nodes = append(f.nodes, nd)
		if d.IsDir() {
			dirs[rel] = ino
		}
		parent, ok := dirs[filepath.Dir(rel)]
		if !ok {
			return fmt.Errorf("%s: parent not loaded", rel)
		}
		name := filepath.Base(rel)
		pn := &f.nodes[parent]
		pn.byName[name] = ino
		pn.children = append(pn.children, fuse.DirEntry{Name: name, Ino: ino, Mode: nd.mode})
		return nil
	})
	for i := range f.nodes {
		c := f.nodes[i].children
		sort.Slice(c, func(a, b int) bool { return c[a].Name < c[b].Name })
	}
	return f, err
}

const ttlSec = 3600

func (f *floor) node(ino uint64) *node {
	if ino == 0 || ino >= uint64(len(f.nodes)) {
		return nil
	}
	return &f.nodes[ino]
}

func (f *floor) fill(ino uint64, a *fuse.Attr) {
	n := &f.nodes[ino]
	a.Ino, a.Mode, a.Size, a.Nlink = ino, n.mode, uint64(len(n.data)), 1
	if n.mode&syscall.S_IFMT == syscall.S_IFDIR {
		a.Nlink = 2
	}
	a.Blocks = (a.Size + 511) / 512
}

func (f *floor) entry(ino uint64, out *fuse.EntryOut) {
	out.NodeId, out.Generation = ino, 1
	out.EntryValid, out.AttrValid = ttlSec, ttlSec
	f.fill(ino, &out.Attr)
}

func (f *floor) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	d := f.node(h.NodeId)
	if d == nil || d.byName == nil {
		return fuse.ENOENT
	}
	ino, ok := d.byName[name]
	if !ok {
		return fuse.ENOENT
	}
	f.entry(ino, out)
	return fuse.OK
}

func (f *floor) Forget(nodeid, nlookup uint64) {}

func (f *floor) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if f.node(in.NodeId) == nil {
		return fuse.ENOENT
	}
	f.fill(in.NodeId, &out.Attr)
	out.AttrValid = ttlSec
	return fuse.OK
}

// OpenDir is declined: the kernel then opens directories itself, keeps
// their listings and sends READDIR(PLUS) with handle 0 (as on oxyfs).
func (f *floor) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS
}

func (f *floor) readDir(in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	d := f.node(in.NodeId)
	if d == nil || d.byName == nil {
		return fuse.ENOTDIR
	}
	for i := in.Offset; i < uint64(len(d.children)); i++ {
		e := d.children[i]
		e.Off = i + 1
		if plus {
			eo := out.AddDirLookupEntry(e)
			if eo == nil {
				break
			}
			f.entry(e.Ino, eo)
		} else if !out.AddDirEntry(e) {
			break
		}
	}
	return fuse.OK
}

func (f *floor) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return f.readDir(in, out, false)
}

func (f *floor) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return f.readDir(in, out, true)
}

func (f *floor) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if in.Flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return fuse.EROFS
	}
	out.OpenFlags = fuse.FOPEN_KEEP_CACHE
	return fuse.OK
}

func (f *floor) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	n := f.node(in.NodeId)
	if n == nil {
		return nil, fuse.ENOENT
	}
	d := n.data
	if in.Offset >= uint64(len(d)) {
		return fuse.ReadResultData(nil), fuse.OK
	}
	return fuse.ReadResultData(d[in.Offset:min(uint64(len(d)), in.Offset+uint64(len(buf)))]), fuse.OK
}

func (f *floor) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	n := f.node(h.NodeId)
	if n == nil || n.mode&syscall.S_IFMT != syscall.S_IFLNK {
		return nil, fuse.EINVAL
	}
	return n.data, fuse.OK
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: floorfs SRC MOUNTPOINT")
		os.Exit(2)
	}
	f, err := load(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "floorfs: load %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	srv, err := fuse.NewServer(f, os.Args[2], &fuse.MountOptions{
		FsName: "floorfs", Name: "floorfs", DirectMount: os.Geteuid() == 0,
		EnableSymlinkCaching: true, Options: []string{"ro"},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "floorfs: mount %s: %v\n", os.Args[2], err)
		os.Exit(1)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		fmt.Fprintf(os.Stderr, "floorfs: mount %s: %v\n", os.Args[2], err)
		os.Exit(1)
	}
	fmt.Printf("ready: %d names\n", len(f.nodes)-2)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sig; srv.Unmount() }()
	srv.Wait()
}
