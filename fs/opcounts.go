package fs

import (
	"sync/atomic"
	"time"
)

// The FUSE operations Ops counts.
const (
	opLookup = iota
	opGetattr
	opSetattr
	opReaddir
	opOpen
	opRead
	opWrite
	opFlush
	opRelease
	opCreate
	opMkdir
	opReadlink
	opGetxattr
	opListxattr
	opSetxattr
	opRemovexattr
	opUnlink
	opRmdir
	opRename
	opLink
	opSymlink
	opMknod
	opStatfs
	opOpendir
	numOps
)

var opNames = [numOps]string{"lookup", "getattr", "setattr", "readdir", "open", "read", "write", "flush", "release",
	"create", "mkdir", "readlink", "getxattr", "listxattr", "setxattr", "removexattr", "unlink", "rmdir", "rename",
	"link", "symlink", "mknod", "statfs", "opendir"}

type opCounters struct {
	n       [numOps]atomic.Int64             // atomic
	observe func(op string, d time.Duration) // Options.Observe; read-only after Mount
}

// start counts an operation and returns what to call when it returns
// (deferred: `defer m.ops.start(opLookup)()`), which reports its time
// to Options.Observe, if set.
func (c *opCounters) start(op int) func() {
	c.n[op].Add(1)
	if c.observe == nil {
		return noop
	}
	began := time.Now()
	return func() { c.observe(opNames[op], time.Since(began)) }
}

func noop() {}

// Ops returns how many FUSE operations of each kind the mount answered.
func (m *Server) Ops() map[string]int64 {
	out := make(map[string]int64, numOps)
	for i, name := range opNames {
		out[name] = m.ops.n[i].Load()
	}
	return out
}
