package fs

import (
	"context"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
)

var _ = (gofs.NodeOpendirHandler)((*dirNode)(nil))

// OpendirHandle opens a directory with FOPEN_CACHE_DIR: the kernel keeps the
// listing, and until it is told that the listing changed (Invalidate, an own
// write) an ls or find of the directory costs an open and a release, no
// read and no lookup. The listing is made at the first read, not here.
func (d *dirNode) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return &dirHandle{d: d}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// dirHandle streams one listing of a directory.
type dirHandle struct {
	d       *dirNode
	loaded  bool
	entries []fuse.DirEntry
	pos     int
}

var (
	_ = (gofs.FileReaddirenter)((*dirHandle)(nil))
	_ = (gofs.FileSeekdirer)((*dirHandle)(nil))
	_ = (gofs.FileReleasedirer)((*dirHandle)(nil))
)

func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if !h.loaded {
		h.d.m.ops.inc(opReaddir)
		list, errno := h.d.list(ctx)
		if errno != 0 {
			return nil, errno
		}
		h.entries, h.loaded = list, true
		h.d.listed.Store(listHash(list)) // what the kernel may now cache
	}
	if h.pos >= len(h.entries) {
		return nil, 0
	}
	h.pos++
	e := h.entries[h.pos-1]
	e.Off = uint64(h.pos)
	return &e, 0
}

// Seekdir: offsets are positions in the listing (0 is its start).
func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if off == 0 {
		h.loaded = false // rewinddir sees what changed since
	}
	h.pos = int(off)
	return 0
}

func (h *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) {}

// listHash is an FNV-64a of a listing's names and types.
func listHash(list []fuse.DirEntry) uint64 {
	h := uint64(14695981039346656037)
	for _, e := range list {
		for i := 0; i < len(e.Name); i++ {
			h = (h ^ uint64(e.Name[i])) * 1099511628211
		}
		h = (h ^ uint64(e.Mode>>12)) * 1099511628211
	}
	return h | 1 // never 0: 0 is "never listed"
}

// listedHash is what the kernel may cache of a directory: 0 if it never
// read its listing.
type listedHash = atomic.Uint64

// notifyListings tells the kernel that the listings of the by-signer
// directories a signature write changed are stale (the kernel resets the
// parent's own listing on CREATE). It runs before close returns, so the
// next ls shows the write.
func (m *Server) notifyListings(e store.Entry) {
	if e.Kind != store.KindSig {
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
