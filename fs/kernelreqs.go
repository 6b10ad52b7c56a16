package fs

import (
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// countRequests counts the FUSE requests the kernel sends, by opcode, where
// they enter the file system: it wraps everything go-fuse's server calls
// (noOpendir around the bridge), so it sees each request once, whatever
// answers it (the bridge, noOpendir's own READDIR(PLUS) with handle 0, a
// node's method or go-fuse's own answer). go-fuse's RecordLatencies, the
// hook that once did this, does nothing since v2.
//
// The counts are the kernel's requests, not the mount's work (Ops counts
// that): a READDIRPLUS of a directory too long for one reply is two or more
// requests, one listing; a LOOKUP the kernel did not send (the entries of a
// READDIRPLUS reply) is not one.
//
// What does not reach the file system is not counted: INIT, DESTROY,
// INTERRUPT and NOTIFY_REPLY (go-fuse answers them), and the requests on
// go-fuse's own epoll-hack file, which it opens at mount and answers
// itself. FORGET counts the nodes forgotten: a FORGET request, or
// one entry of a BATCH_FORGET (go-fuse hands the file system each entry
// alone). RENAME counts RENAME2 too (the mount refuses both).
type countRequests struct {
	fuse.RawFileSystem
	n *requestCounters
}

// The FUSE requests counted, by the kernel's name of their opcode.
const (
	reqLookup = iota
	reqForget
	reqGetattr
	reqSetattr
	reqReadlink
	reqSymlink
	reqMknod
	reqMkdir
	reqUnlink
	reqRmdir
	reqRename
	reqLink
	reqOpen
	reqRead
	reqWrite
	reqStatfs
	reqRelease
	reqFsync
	reqSetxattr
	reqGetxattr
	reqListxattr
	reqRemovexattr
	reqFlush
	reqOpendir
	reqReaddir
	reqReleasedir
	reqFsyncdir
	reqGetlk
	reqSetlk
	reqSetlkw
	reqAccess
	reqCreate
	reqIoctl
	reqFallocate
	reqReaddirplus
	reqLseek
	reqCopyFileRange
	reqTmpfile
	reqStatx
	numReqs
)

var reqNames = [numReqs]string{"LOOKUP", "FORGET", "GETATTR", "SETATTR", "READLINK", "SYMLINK", "MKNOD", "MKDIR",
	"UNLINK", "RMDIR", "RENAME", "LINK", "OPEN", "READ", "WRITE", "STATFS", "RELEASE", "FSYNC", "SETXATTR",
	"GETXATTR", "LISTXATTR", "REMOVEXATTR", "FLUSH", "OPENDIR", "READDIR", "RELEASEDIR", "FSYNCDIR", "GETLK",
	"SETLK", "SETLKW", "ACCESS", "CREATE", "IOCTL", "FALLOCATE", "READDIRPLUS", "LSEEK", "COPY_FILE_RANGE",
	"TMPFILE", "STATX"}

// requestCounters are the counts of countRequests.
type requestCounters struct {
	n [numReqs]atomic.Int64 // by req* index; atomic
	// ends counts the READDIR (0) and READDIRPLUS (1) requests answered
	// with no entry; atomic.
	ends [2]atomic.Int64
}

func (c *requestCounters) add(op int) { c.n[op].Add(1) }

// Requests returns how many FUSE requests of each opcode the kernel sent
// (countRequests says which are counted), by the kernel's name of the
// opcode ("LOOKUP", "READDIRPLUS", …), zeros included.
func (m *Server) Requests() map[string]int64 {
	out := make(map[string]int64, numReqs)
	for i, name := range reqNames {
		out[name] = m.reqs.n[i].Load()
	}
	return out
}

// ListingEnds returns how many of the READDIR and READDIRPLUS requests
// (keys "READDIR", "READDIRPLUS") were answered with no entry. The kernel
// learns that a listing ended only from such a reply (fs/fuse/readdir.c
// marks its cache of a listing complete then, and only then), so each
// listing the kernel reads to its end costs one, after the requests that
// carried its entries (none for an empty directory).
func (m *Server) ListingEnds() map[string]int64 {
	return map[string]int64{"READDIR": m.reqs.ends[0].Load(), "READDIRPLUS": m.reqs.ends[1].Load()}
}

func (r countRequests) Lookup(cancel <-chan struct{}, header *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	r.n.add(reqLookup)
	return r.RawFileSystem.Lookup(cancel, header, name, out)
}

func (r countRequests) Forget(nodeid, nlookup uint64) {
	r.n.add(reqForget)
	r.RawFileSystem.Forget(nodeid, nlookup)
}

func (r countRequests) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	r.n.add(reqGetattr)
	return r.RawFileSystem.GetAttr(cancel, in, out)
}

func (r countRequests) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	r.n.add(reqSetattr)
	return r.RawFileSystem.SetAttr(cancel, in, out)
}

func (r countRequests) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	r.n.add(reqMknod)
	return r.RawFileSystem.Mknod(cancel, in, name, out)
}

func (r countRequests) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	r.n.add(reqMkdir)
	return r.RawFileSystem.Mkdir(cancel, in, name, out)
}

func (r countRequests) Unlink(cancel <-chan struct{}, header *fuse.InHeader, name string) fuse.Status {
	r.n.add(reqUnlink)
	return r.RawFileSystem.Unlink(cancel, header, name)
}

func (r countRequests) Rmdir(cancel <-chan struct{}, header *fuse.InHeader, name string) fuse.Status {
	r.n.add(reqRmdir)
	return r.RawFileSystem.Rmdir(cancel, header, name)
}

func (r countRequests) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	r.n.add(reqRename)
	return r.RawFileSystem.Rename(cancel, in, oldName, newName)
}

func (r countRequests) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	r.n.add(reqLink)
	return r.RawFileSystem.Link(cancel, in, name, out)
}

func (r countRequests) Symlink(cancel <-chan struct{}, header *fuse.InHeader, pointedTo, linkName string, out *fuse.EntryOut) fuse.Status {
	r.n.add(reqSymlink)
	return r.RawFileSystem.Symlink(cancel, header, pointedTo, linkName, out)
}

func (r countRequests) Readlink(cancel <-chan struct{}, header *fuse.InHeader) ([]byte, fuse.Status) {
	r.n.add(reqReadlink)
	return r.RawFileSystem.Readlink(cancel, header)
}

func (r countRequests) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	r.n.add(reqAccess)
	return r.RawFileSystem.Access(cancel, in)
}

func (r countRequests) GetXAttr(cancel <-chan struct{}, header *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	r.n.add(reqGetxattr)
	return r.RawFileSystem.GetXAttr(cancel, header, attr, dest)
}

func (r countRequests) ListXAttr(cancel <-chan struct{}, header *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	r.n.add(reqListxattr)
	return r.RawFileSystem.ListXAttr(cancel, header, dest)
}

func (r countRequests) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	r.n.add(reqSetxattr)
	return r.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

func (r countRequests) RemoveXAttr(cancel <-chan struct{}, header *fuse.InHeader, attr string) fuse.Status {
	r.n.add(reqRemovexattr)
	return r.RawFileSystem.RemoveXAttr(cancel, header, attr)
}

func (r countRequests) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	r.n.add(reqCreate)
	return r.RawFileSystem.Create(cancel, in, name, out)
}

func (r countRequests) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	r.n.add(reqTmpfile)
	return r.RawFileSystem.Tmpfile(cancel, in, out)
}

func (r countRequests) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	r.n.add(reqOpen)
	return r.RawFileSystem.Open(cancel, in, out)
}

func (r countRequests) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	r.n.add(reqRead)
	return r.RawFileSystem.Read(cancel, in, buf)
}

func (r countRequests) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	r.n.add(reqLseek)
	return r.RawFileSystem.Lseek(cancel, in, out)
}

func (r countRequests) GetLk(cancel <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	r.n.add(reqGetlk)
	return r.RawFileSystem.GetLk(cancel, in, out)
}

func (r countRequests) SetLk(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	r.n.add(reqSetlk)
	return r.RawFileSystem.SetLk(cancel, in)
}

func (r countRequests) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) fuse.Status {
	r.n.add(reqSetlkw)
	return r.RawFileSystem.SetLkw(cancel, in)
}

// testHookRelease, when set (tests), runs as a RELEASE arrives, before
// go-fuse takes the file off its node: the kernel sends it after close
// returns, when it will. Atomic.
var testHookRelease atomic.Pointer[func(in *fuse.ReleaseIn)]

func (r countRequests) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	r.n.add(reqRelease)
	if hook := testHookRelease.Load(); hook != nil {
		(*hook)(in)
	}
	r.RawFileSystem.Release(cancel, in)
}

// Writev counts every WRITE: go-fuse calls it first for each one, and calls
// Write (not counted) only when Writev answers ENOSYS.
func (r countRequests) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	r.n.add(reqWrite)
	return r.RawFileSystem.Writev(cancel, in, data)
}

func (r countRequests) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	r.n.add(reqCopyFileRange)
	return r.RawFileSystem.CopyFileRange(cancel, in)
}

func (r countRequests) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	r.n.add(reqIoctl)
	return r.RawFileSystem.Ioctl(cancel, in, inbuf, out, outbuf)
}

func (r countRequests) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	r.n.add(reqFlush)
	return r.RawFileSystem.Flush(cancel, in)
}

func (r countRequests) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	r.n.add(reqFsync)
	return r.RawFileSystem.Fsync(cancel, in)
}

func (r countRequests) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	r.n.add(reqFallocate)
	return r.RawFileSystem.Fallocate(cancel, in)
}

func (r countRequests) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	r.n.add(reqOpendir)
	return r.RawFileSystem.OpenDir(cancel, in, out)
}

func (r countRequests) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	r.n.add(reqReaddir)
	st := r.RawFileSystem.ReadDir(cancel, in, out)
	if st.Ok() && len(out.Bytes()) == 0 {
		r.n.ends[0].Add(1)
	}
	return st
}

func (r countRequests) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	r.n.add(reqReaddirplus)
	st := r.RawFileSystem.ReadDirPlus(cancel, in, out)
	if st.Ok() && len(out.Bytes()) == 0 {
		r.n.ends[1].Add(1)
	}
	return st
}

func (r countRequests) ReleaseDir(in *fuse.ReleaseIn) {
	r.n.add(reqReleasedir)
	r.RawFileSystem.ReleaseDir(in)
}

func (r countRequests) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	r.n.add(reqFsyncdir)
	return r.RawFileSystem.FsyncDir(cancel, in)
}

func (r countRequests) StatFs(cancel <-chan struct{}, header *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	r.n.add(reqStatfs)
	return r.RawFileSystem.StatFs(cancel, header, out)
}

func (r countRequests) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	r.n.add(reqStatx)
	return r.RawFileSystem.Statx(cancel, in, out)
}
