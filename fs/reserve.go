package fs

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/store/format"
)

// Writes beside held readers: a write through the mount never opens the
// node descriptors of a signature's version hold (openWrite, reserveWrite below;
// docs/design.md §7 "A replaced signature is a new file").

// writeOpenFlags are the flags of a write's open that shape its handle: a
// reserved handle is claimed only by an open with the same ones.
const writeOpenFlags = syscall.O_TRUNC | syscall.O_APPEND

// reserveClaim bounds how long a reserved write waits for the kernel's
// retried open (reserveWrite) before it ends as a write of nothing. The
// retry follows at once (the same system call); the bound is for a
// thread that never retries. A reservation is its thread's alone, so one
// that waits costs nobody else anything but its bytes.
const reserveClaim = 10 * time.Second

// reserveWrite answers an open for writing of a signature whose node
// descriptors hold: reads and mappings of its version (entryNode.readers),
// or reads opened beside an earlier write of ours, which landed since and
// made the node its version (entryNode.beside: they read that write's
// bytes). The kernel sizes the node a write is open on by the write — to 0
// once a truncating open (O_TRUNC: cp, a shell's >, dd, Python's open(p,
// "w")) returns, at an ftruncate (open(p, "r+b").truncate(), rsync
// --inplace, truncate -s), from the size a stat of it answers — and drops
// its pages past that size: on the readers' own node, a MAP_SHARED mapping
// of theirs faulted (SIGBUS) and reads found 0 bytes or the version cut
// short. So the write's handle is made now (the existing bytes read when
// the open does not truncate: untouched) and reserved for the thread
// whose open this is, and the open is ESTALE: the kernel looks the name up
// again (its one retry of an open, with LOOKUP_REVAL: the same thread
// sends the LOOKUP and then the OPEN), the lookup from that thread gives
// the write's node (lookupIn: pendingWrites.reservation), and its open
// claims the handle (openWrite). The readers' node is never opened for
// writing.
//
// A reservation is its thread's alone until claimed: to every other
// request the name stands for what it stood for (pendingWrites passes
// reserved handles over) — the open that reserved has not returned — and
// no other open can take it or is turned away by it. So the retry always
// finds its write's node, whatever other writers and readers of the name
// do meanwhile: writes landing, reads opening the landed versions' nodes,
// other reservations (a trial of two writer threads beside a reader
// through one mount failed 2–30 of 232–467 writes with ESTALE while the
// reservation was the name's: another writer's open took it, landed, and
// a read held the node the retry then found). A node no descriptor holds
// is opened for writing (openWrite): a read that opens it during the
// write reads beside it, the version's attributes dropped first
// (openBeside).
//
// A reservation no open claimed ends as a write of nothing: at once when
// the reserving thread's retry comes back to the readers' node (an open
// through /proc/self/fd/N of a descriptor of the version: its retry does
// not look the name up; that open fails with ESTALE), or when that thread
// opens the name again, else after reserveClaim.
func (n *entryNode) reserveWrite(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	m := n.m
	tid := callerTid(ctx)
	if w := m.pending.reservation(n.path, tid); w != nil && w.abandon() && w.node == n {
		m.event(slog.LevelWarn, fmt.Sprintf("open /%s for writing: refused, the kernel's retried open found the node descriptors of its version hold again (an open through /proc/self/fd?); nothing written (ESTALE)", n.path), slog.String("entry", n.e.Key()), slog.String("errno", "ESTALE"))
		return nil, 0, syscall.ESTALE
	} // else a reservation of an open of this thread's that ended unclaimed: ended now
	h := m.makeWriteHandle(n.path, n.e, n, flags, false, func(h *writeHandle) {
		h.fromReserve.Store(true)
		h.resFlags = flags & writeOpenFlags
		h.resTid = tid
		h.reserved.Store(true)
	})
	if flags&syscall.O_TRUNC == 0 {
		h.mu.Lock()
		errno := h.loadLocked(ctx)
		h.mu.Unlock()
		if errno != 0 {
			h.abandon()
			return nil, 0, errno
		}
		h.untouched.Store(true)
	}
	time.AfterFunc(reserveClaim, func() {
		if h.abandon() {
			m.event(slog.LevelWarn, fmt.Sprintf("open /%s for writing: the kernel's retried open did not come within %v (an open through /proc/self/fd?); nothing written", n.path, reserveClaim), slog.String("entry", n.e.Key()))
		}
	})
	return nil, 0, syscall.ESTALE
}

// claim makes the reserved write h the open of thread tid on its own node
// n (the retry of the open reserveWrite answered ESTALE), if it is that
// thread's (0: unknown) and the open's flags are the reservation's; from
// then on the name stands for it. n.openMu is held.
func (h *writeHandle) claim(n *entryNode, tid uint32, flags uint32) bool {
	if n.w.Load() != h || h.resFlags != flags&writeOpenFlags || h.resTid != tid || !h.reserved.CompareAndSwap(true, false) {
		return false
	}
	if node := h.node; node != nil && node.readers.Load() > 0 {
		// As setSize at a write's first size: a stat by path, which
		// go-fuse would answer with the readers' lent handle, looks the
		// name up and gets the write's node.
		go h.m.dropName(h.path) // not from inside the request: sigChanged
	}
	return true
}

// callerTid is the thread that sent the request of ctx (0: unknown).
func callerTid(ctx context.Context) uint32 {
	if c, ok := fuse.FromContext(ctx); ok {
		return c.Pid
	}
	return 0
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

// openDuringWrite opens n for reading while w, a write of its name, is in
// progress: a read beside the write (beside.go) when the write is open on
// this node (w.openOn: the node the write opened, or the write's own node
// a lookup gave) — the node is the write's, the kernel sizes it by the
// write; on a version's node, its attributes are dropped first
// (openBeside). nil and 0 otherwise — the write is open elsewhere (a
// reservation, as descriptors held this node), so this node stays its
// version's, whose bytes the open reads whole (Open), as the descriptors
// open on it do and as go-fuse's lent handles of theirs answer a stat; or
// w was released just now.
func (n *entryNode) openDuringWrite(w *writeHandle) *besideHandle {
	if !w.openOn(n) {
		return nil
	}
	return n.openBeside(w)
}

// openWrite opens the entry for writing: a writeHandle. Replacing an
// existing signature needs --allow-overwrite.
func (n *entryNode) openWrite(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	m := n.m
	if m.ro {
		return nil, 0, syscall.EROFS
	}
	if n.e.Kind == format.KindSig && !m.overwrite && m.pending.get(n.path) == nil {
		if n.ident.Load() == nil && n.stale() {
			// The node of a write that ended with nothing landed (a
			// create the store refused: ENOSPC), whose name the kernel
			// still holds (the RELEASE, and the notices after it, may
			// come after close returned): no signature exists. ESTALE:
			// the kernel looks the name up again, finds none, and an
			// O_CREAT open creates (fs/TestWriteIntoAFullStoreIsENOSPC
			// met EPERM here under load).
			return nil, 0, syscall.ESTALE
		}
		m.event(slog.LevelWarn, fmt.Sprintf("open /%s for writing: refused, the signature exists (mount with --allow-overwrite to replace signatures) (EPERM)", n.path), slog.String("entry", n.e.Key()), slog.String("errno", "EPERM"))
		return nil, 0, syscall.EPERM
	}
	if n.e.Kind == format.KindSig {
		// Under openMu, as a read counts itself among the readers (Open):
		// a read either is counted before this looks, or sees this write
		// (pending) when it counts itself.
		n.openMu.Lock()
		defer n.openMu.Unlock()
		if w := n.w.Load(); w != nil && w.claim(n, callerTid(ctx), flags) {
			return w, fuse.FOPEN_DIRECT_IO, 0 // the kernel's retry (reserveWrite)
		}
		if w := n.w.Load(); (w == nil || w.settled.Load()) && (n.readers.Load() > 0 || n.beside.Load() > 0) {
			// Descriptors hold this node — reads of its version, or reads
			// opened beside a write of ours that has landed since (they
			// read its bytes; the node stays that write's, settle) — and
			// no write is in progress on it: the write opens a node of
			// its own. With none held the write opens here: answering
			// every rewrite ESTALE sent concurrent writers and readers of
			// one name past the kernel's one retry (a trial: 162 of 1,036
			// writes of 3 writers failed with ESTALE, 16 of 1,789 reads
			// beside one writer; 0 here).
			return n.reserveWrite(ctx, flags)
		}
	}
	return m.newWriteHandle(n.path, n.e, n, flags, false), fuse.FOPEN_DIRECT_IO, 0
}

// testHookWriteOpened, when set (tests), runs when an open for writing of
// an existing name has its handle (no lock held), before the kernel has
// the reply (and, for O_TRUNC, sizes the node by it). Atomic.
var testHookWriteOpened atomic.Pointer[func(path string)]

func writeOpened(p string) {
	if hook := testHookWriteOpened.Load(); hook != nil {
		(*hook)(p)
	}
}
