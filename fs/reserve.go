package fs

import (
	"context"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
)

// Writes beside held readers: a write through the mount never opens the
// node descriptors of a signature's version hold (reserveWrite below;
// docs/design.md §7 "A replaced signature is a new file").

// writeOpenFlags are the flags of a write's open that shape its handle: a
// reserved handle is claimed only by an open with the same ones.
const writeOpenFlags = syscall.O_TRUNC | syscall.O_APPEND

// reserveClaim bounds how long a reserved write waits for the kernel's
// retried open (reserveWrite) before it ends as a write of nothing.
const reserveClaim = 2 * time.Second

// reserveWrite answers an open for writing of a signature whose node
// descriptors hold: reads and mappings of its version (entryNode.readers),
// or reads opened beside an earlier write of ours, which landed since and
// made the node its version (entryNode.beside: they read that write's
// bytes). The kernel sizes
// the node a write is open on by the write — to 0 once a truncating open
// (O_TRUNC: cp, a shell's >, dd, Python's open(p, "w")) succeeds, at an
// ftruncate (open(p, "r+b").truncate(), rsync --inplace, truncate -s),
// from the size a stat of it answers — and drops its pages past that size:
// on the readers' own node, a MAP_SHARED mapping of theirs faulted (SIGBUS)
// and reads found 0 bytes or the version cut short. So the write's handle
// is made now (the existing bytes read when the open does not truncate),
// pending — the name stands for it: a lookup gives the write's node
// (beside.go) — and reserved, and the open is ESTALE: the kernel looks the
// name up again (its one retry of an open, with LOOKUP_REVAL, which asks
// us), gets the write's node and opens it, which claims the handle
// (openWrite). The readers' node is never opened for writing. One
// reservation at a time per name: another open meanwhile is ESTALE too, and
// its retry opens the write's node (claiming the reservation, or a handle
// of its own). A reservation no open claimed within reserveClaim (an open
// through /proc/self/fd/N, whose retry finds the same node: that open
// fails with ESTALE) ends as a write of nothing.
func (n *entryNode) reserveWrite(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	m := n.m
	if m.pending.reserved(n.path) {
		return nil, 0, syscall.ESTALE
	}
	h := m.newWriteHandle(n.path, n.e, n, flags, false)
	h.resFlags = flags & writeOpenFlags
	h.reserved.Store(true)
	if flags&syscall.O_TRUNC == 0 {
		h.mu.Lock()
		errno := h.loadLocked(ctx) // the name stands for the write once it has bytes
		h.mu.Unlock()
		if errno != 0 {
			h.abandon()
			return nil, 0, errno
		}
	}
	time.AfterFunc(reserveClaim, func() {
		if h.abandon() {
			m.logf("oxyfs: open /%s for writing: the kernel's retried open did not come within %v (an open through /proc/self/fd?); nothing written", n.path, reserveClaim)
		}
	})
	return nil, 0, syscall.ESTALE
}

// abandon ends a reservation no open claimed: nothing is written. It
// reports whether h was still reserved.
func (h *writeHandle) abandon() bool {
	if !h.reserved.CompareAndSwap(true, false) {
		return false
	}
	h.mu.Lock()
	h.dirty = false
	h.mu.Unlock()
	h.Release(context.Background())
	return true
}
