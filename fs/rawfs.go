package fs

import (
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// noOpendir is go-fuse's bridge (gofs.NewNodeFS) with OPENDIR declined.
//
// Answering the first OPENDIR with ENOSYS tells the kernel that this file
// system needs no directory handles (FUSE_NO_OPENDIR_SUPPORT, Linux 5.1):
// from then on it opens every directory itself, with FOPEN_KEEP_CACHE |
// FOPEN_CACHE_DIR, sends no OPENDIR and no RELEASEDIR, and sends READDIR
// and READDIRPLUS with file handle 0. A warm ls or find of a directory then
// costs no request at all (the kernel serves the listing it cached), where
// it cost a synchronous OPENDIR and a RELEASEDIR: for a find over 100,000
// entries (~82,000 directories) that was most of the time.
//
// go-fuse's fs layer reads a directory only through a handle, so a read
// with handle 0 opens one in process (the node's OpendirHandle, as an
// OPENDIR would), reads at the requested offset (dirHandle.Seekdir) and
// releases it: nothing crosses the kernel boundary but the READDIR(PLUS)
// and its reply. A read past the first reply (the kernel's request for
// more, which finds the end) makes the listing again, in memory.
//
// What the handle returned by OPENDIR used to say, the kernel now assumes
// for every directory: FOPEN_CACHE_DIR | FOPEN_KEEP_CACHE, so every
// listing, .oxy's included, stays cached until Invalidate or an own write
// tells the kernel it changed (see invalidate.go).
type noOpendir struct {
	fuse.RawFileSystem
	ops *opCounters // counts the OPENDIRs declined: one per mount
}

func (r noOpendir) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer r.ops.start(opOpendir)()
	return fuse.ENOSYS
}

func (r noOpendir) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if in.Fh != 0 {
		return r.RawFileSystem.ReadDir(cancel, in, out)
	}
	return r.readDir(cancel, in, out, false)
}

func (r noOpendir) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if in.Fh != 0 {
		return r.RawFileSystem.ReadDirPlus(cancel, in, out)
	}
	return r.readDir(cancel, in, out, true)
}

// readDir serves a READDIR(PLUS) sent with no handle through a handle of
// its own, opened and released in process.
func (r noOpendir) readDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	a := dirArgsPool.Get().(*dirArgs)
	defer dirArgsPool.Put(a)
	a.open = fuse.OpenIn{InHeader: in.InHeader, Flags: syscall.O_RDONLY | syscall.O_DIRECTORY}
	a.opened = fuse.OpenOut{}
	if st := r.RawFileSystem.OpenDir(cancel, &a.open, &a.opened); !st.Ok() {
		return st
	}
	a.read = *in
	a.read.Fh = a.opened.Fh
	a.release = fuse.ReleaseIn{InHeader: in.InHeader, Fh: a.opened.Fh, Flags: a.open.Flags}
	defer r.RawFileSystem.ReleaseDir(&a.release)
	if plus {
		return r.RawFileSystem.ReadDirPlus(cancel, &a.read, out)
	}
	return r.RawFileSystem.ReadDir(cancel, &a.read, out)
}

// dirArgs are the requests readDir makes of the bridge, pooled: one
// directory read makes three, and a cold find reads every directory.
type dirArgs struct {
	open    fuse.OpenIn
	opened  fuse.OpenOut
	read    fuse.ReadIn
	release fuse.ReleaseIn
}

var dirArgsPool = sync.Pool{New: func() any { return new(dirArgs) }}
