package fs

import (
	"context"
	"slices"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/store/format"
)

// Reads beside this mount's own write.
//
// While this mount has a write open on a name (pendingWrites.writing: a
// create, or a re-sign with --allow-overwrite, not refused), the name's
// contents are that write's bytes, live, as on a local filesystem (and as
// gcsfuse or rclone mount serve a file being written): an open for reading
// beside it gets a besideHandle, which reads the write's buffer at each
// READ, so read(2), fstat, stat by path and a MAP_SHARED mapping (sized by
// fstat) agree — the node's GETATTR answers the write's size while it is
// written (entryNode.size). Such a handle is opened with direct I/O (the
// bytes change under it) and is not one of the node's readers of its
// version (entryNode.readers), and a node that had one never keeps its
// pages across an open again (entryNode.mixed: its page cache may hold
// bytes of no version).
//
// A lookup while the write is in progress gives a node of the write
// (entryNode.w; its generation is writeHandle.gen, which no version has),
// not of the version: an open beside the write on a node whose version
// descriptors hold (entryNode.readers) is ESTALE, the kernel looks the name
// up again and opens the write's node, so a mapping of the write's bytes
// never shares the pages of theirs (the page cache is per node). A node of
// a write is stale once the write is no longer the one in progress
// (staleAt); it takes a version only in the retry window, once no read
// beside the write is open on it (settle, as adopt). When a write begins
// on a node whose version descriptors hold, it drops the name
// (writeHandle.setSize), so that a stat by path, which go-fuse would answer
// with their handle, looks the name up and gets the write's node.
//
// When the write lands (close's FLUSH), the name is the landed version: the
// node's GETATTR answers the index's state of the landed bytes, and a
// besideHandle lent to a GETATTR of a node that went stale answers its
// bytes, which are the landed ones. When the write is refused or ends with
// nothing written, the name is the store's version again: before close
// returns, the kernel is told to drop the attributes and pages of the
// write's node and of every node a besideHandle read it through
// (writeHandle.dropKernelCopies), so no open after it sees the dropped
// bytes. Readers opened during the write keep reading what the write held:
// its buffer stays (and keeps its share of MaxWriteBuffers) until the last
// of them is released. Their fstat then says the name's size, the store's
// version's: GETATTR names no descriptor, and a stat by path is lent the
// same handle.

// besideHandle is a read open beside a write in progress: it reads the
// write's buffer as it is at each READ (see above).
type besideHandle struct {
	m    *Server      // read-only
	w    *writeHandle // read-only
	node *entryNode   // the node opened; read-only
}

var (
	_ = (gofs.FileReader)((*besideHandle)(nil))
	_ = (gofs.FileFlusher)((*besideHandle)(nil))
	_ = (gofs.FileReleaser)((*besideHandle)(nil))
)

// openBeside opens n for reading beside w, a write in progress on its name
// (the open's look); nil if the kernel released w since, whose bytes
// are gone: the open looks again.
func (n *entryNode) openBeside(w *writeHandle) *besideHandle {
	n.openMu.Lock() // before a settle of the node (versions.go)
	defer n.openMu.Unlock()
	w.mu.Lock()
	if w.released {
		w.mu.Unlock()
		return nil
	}
	w.besideReaders++
	if !slices.Contains(w.besideNodes, n) {
		w.besideNodes = append(w.besideNodes, n)
	}
	w.mu.Unlock()
	n.mixed.Store(true)
	n.beside.Add(1)
	if n.w.Load() != w && !n.m.quiet.Load() {
		// A version's node (the one the write opened, or one of the
		// version it replaces): the kernel may hold the version's size
		// for it — until the write's open returns, for a truncating
		// write opened here, or until the attributes time out — and
		// answer this read's fstat with it while the read gives the
		// write's bytes (a mapping sized so faulted past them: SIGBUS).
		// Drop them before the open returns: the next stat asks, and is
		// answered the write's size (its handle or this one, lent).
		// Attributes only (a negative offset): no page is locked, so
		// this is safe inside the request.
		n.notifyContent(-1, 0)
	}
	return &besideHandle{m: n.m, w: w, node: n}
}

// besideFlags are the open flags of a besideHandle: direct I/O, as the
// bytes change under it; no FLUSH.
const besideFlags = fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH

// Read reads the write's bytes as they are now.
func (h *besideHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	defer h.m.ops.start(opRead)()
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	return fuse.ReadResultData(slices.Clone(slice(h.w.buf, dest, off))), 0
}

// Flush has nothing to write (FOPEN_NOFLUSH; counted, as readHandle's).
func (h *besideHandle) Flush(ctx context.Context) syscall.Errno {
	defer h.m.ops.start(opFlush)()
	return 0
}

// Release lets the write's buffer go once neither the write nor any reader
// beside it holds it.
func (h *besideHandle) Release(ctx context.Context) syscall.Errno {
	defer h.m.ops.start(opRelease)()
	h.node.beside.Add(-1)
	h.w.mu.Lock()
	h.w.besideReaders--
	h.w.freeLocked()
	h.w.mu.Unlock()
	return 0
}

// landed reports whether the bytes the handle reads are the version the
// write landed (and nothing was written since).
func (h *besideHandle) landed() bool {
	_, ok := h.w.landedSize()
	return ok
}

// size is the size of the bytes the handle reads now.
func (h *besideHandle) size() int64 {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	return int64(len(h.w.buf))
}

// landedSize is the size of the bytes the write landed, if it landed and
// nothing was written since (ok).
func (h *writeHandle) landedSize() (size int64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.landed || h.dirty || h.errno != 0 || h.refused != 0 {
		return 0, false
	}
	return int64(len(h.buf)), true
}

// landedWrite is the write whose landed bytes the handle f stands for on
// its node — a read beside a write (besideHandle), or a write that ended
// (its FLUSH landed it) and whose RELEASE has not come yet, which go-fuse
// lends to a GETATTR that names no file as the node's first open file —
// and their size; nil if f is neither, or the write did not land.
func landedWrite(f gofs.FileHandle) (*writeHandle, int64) {
	var w *writeHandle
	switch h := f.(type) {
	case *besideHandle:
		w = h.w
	case *writeHandle:
		w = h
	default:
		return nil, 0
	}
	size, ok := w.landedSize()
	if !ok {
		return nil, 0
	}
	return w, size
}

// dropKernelCopies tells the kernel to drop what it holds of the write's
// bytes — the attributes (the size its writes set) and the pages of its
// node and of every node a reader beside it read it through — when the
// write was refused or failed: the name is the store's version again. It
// runs in the FLUSH (and RELEASE) that reported the failure, before close
// returns, with h.mu not held: the kernel waits for the pages a READ of a
// besideHandle (which takes h.mu) is filling.
func (h *writeHandle) dropKernelCopies() {
	if h.e.Kind != format.KindSig || h.m.quiet.Load() {
		return
	}
	h.mu.Lock()
	nodes := slices.Clone(h.besideNodes)
	if n := h.node; n != nil && !slices.Contains(nodes, n) {
		nodes = append(nodes, n)
	}
	h.mu.Unlock()
	for _, n := range nodes {
		n.notifyContent(0, 0)
	}
}
