package fs

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/store/format"
)

// MaxWriteBuffers caps the bytes all files open for writing on one mount
// hold together (each at most MaxWriteBytes): a write or truncate that would
// take the total past it fails with ENOSPC (logged), and the file's close
// reports it and writes nothing. A file holds its size from its first write
// to its release, however sparse: a write at offset 64 MiB − 1 holds 64 MiB,
// the PUT its close sends. So 4 such files fit, and 24 do not.
const MaxWriteBuffers = 256 << 20

// writeGen marks the generation of a node that stands for a write's bytes
// (writeHandle.gen): a signature's versions (index.SigVersion) count up
// from 0 and never reach it.
const writeGen = 1 << 63

// writeBudget is what the open write handles of a mount hold of
// MaxWriteBuffers.
type writeBudget struct {
	used atomic.Int64 // atomic
	max  int64        // 0: MaxWriteBuffers (tests set less); read-only after Mount
}

// take reserves n bytes, or reports that they do not fit.
func (b *writeBudget) take(n int64) bool {
	limit := b.max
	if limit == 0 {
		limit = MaxWriteBuffers
	}
	for {
		u := b.used.Load()
		if u+n > limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *writeBudget) give(n int64) { b.used.Add(-n) }

// writeHandle is a file open for writing. Bytes are kept in memory (up to
// MaxWriteBytes, and MaxWriteBuffers across the mount) and written by the
// first flush (close) after they changed, with ix.Put: the per-object key,
// then the journal line. close returns 0 only once both landed.
type writeHandle struct {
	m       *Server      // read-only
	path    string       // read-only
	e       format.Entry // read-only
	created bool         // made by Create: the entry is written even if nothing is; read-only
	append  bool         // read-only

	parent kernelDir  // Create only: told to forget the name if it never lands; read-only
	name   string     // read-only
	node   *entryNode // the node opened for writing (or created); read-only once the handle is pending
	// gen is the generation of the nodes that stand for the write's bytes
	// (a lookup's while it is in progress, Create's: entryNode.w): one
	// no version has (writeGen). Read-only.
	gen uint64

	// reserved: made by an open answered ESTALE (entryNode.reserveWrite),
	// waiting for the kernel's retried open of the write's node to claim
	// it. Atomic.
	reserved atomic.Bool
	// resFlags are the open's writeOpenFlags, which a claim must match;
	// read-only.
	resFlags uint32
	// resTid is the thread whose open made the reservation (0: unknown):
	// that open's retry is the claim, so an open of the readers' node by
	// it is the retry finding the same node (reserveWrite). Read-only.
	resTid uint32
	// untouched: the reservation read the existing bytes (an open without
	// O_TRUNC) and nothing was read, written or truncated through the
	// handle since: pendingWrites.fresh gives it as it gives a handle
	// whose bytes are not loaded, so a kernel without atomic O_TRUNC,
	// which truncates what it just opened with a SETATTR naming no file,
	// truncates it. Atomic.
	untouched atomic.Bool
	// fromReserve: made by reserveWrite, so node is the readers' node the
	// write was reserved from, not one it is open on (openOn). Atomic.
	fromReserve atomic.Bool

	size atomic.Int64 // atomic: len(buf), read by stat without the lock
	// settled: a commit landed and nothing was written or truncated
	// since, so a stat answers the index's state of the landed bytes (their
	// size and time), not the buffer's: between close's FLUSH and the
	// RELEASE the kernel sends later the handle is still pending. Atomic.
	settled atomic.Bool
	// superseded: another write of the name landed after this one's last
	// commit (pendingWrites.supersede), so while it stays settled the name
	// no longer stands for its bytes — its RELEASE may come long after its
	// close, and reads opened beside it read what was replaced. Atomic.
	superseded atomic.Bool

	mu     sync.Mutex    // protects the following; held across the handle's reads and its PUT (index locks under it)
	held   int64         // bytes of m.wbuf held: the size buf has or is about to have; guarded by mu
	loaded bool          // buf holds the file's content (an existing signature is read lazily); guarded by mu
	buf    []byte        // the content; guarded by mu
	dirty  bool          // changed since the last commit; guarded by mu
	landed bool          // a commit landed; guarded by mu
	errno  syscall.Errno // the last commit's result; guarded by mu
	// refused: the first write or truncate refused; close reports it and
	// writes nothing. Set only by refuseLocked, never cleared. Guarded by
	// mu.
	refused syscall.Errno
	// dead: refused is set, read without the lock (pendingWrites.writing).
	dead atomic.Bool
	// writers are the processes (thread group ids) that wrote or truncated
	// through this open file; tgids caches the thread group of each thread
	// seen. See Flush.
	writers map[uint32]bool
	tgids   map[uint32]uint32
	// besideReaders counts the reads open beside the write (besideHandle),
	// which read buf; besideNodes are the nodes they opened. released:
	// the kernel released the write; buf and its share of the budget go
	// when no reader beside it is left either (freeLocked). Guarded by mu.
	besideReaders int
	besideNodes   []*entryNode
	released      bool
}

var (
	_ = (gofs.FileReader)((*writeHandle)(nil))
	_ = (gofs.FileWriter)((*writeHandle)(nil))
	_ = (gofs.FileFlusher)((*writeHandle)(nil))
	_ = (gofs.FileFsyncer)((*writeHandle)(nil))
	_ = (gofs.FileReleaser)((*writeHandle)(nil))
)

// newWriteHandle makes the handle of node n's file opened for writing
// (created: by Create, which adds it to the pending writes itself).
func (m *Server) newWriteHandle(p string, e format.Entry, n *entryNode, flags uint32, created bool) *writeHandle {
	return m.makeWriteHandle(p, e, n, flags, created, nil)
}

// makeWriteHandle is newWriteHandle; prepare, if not nil, sets up h before
// it is pending (a reservation's fields: reserveWrite).
func (m *Server) makeWriteHandle(p string, e format.Entry, n *entryNode, flags uint32, created bool, prepare func(h *writeHandle)) *writeHandle {
	h := &writeHandle{m: m, path: p, e: e, node: n, created: created, append: flags&syscall.O_APPEND != 0,
		gen: writeGen | m.wgens.Add(1)}
	if prepare != nil {
		prepare(h)
	}
	// An index entry is empty, and a created file starts empty: nothing to
	// read. An existing signature is read only if a write needs its bytes
	// (O_TRUNC truncates it first, so cp over it reads nothing).
	trunc := flags&syscall.O_TRUNC != 0 && e.Kind == format.KindSig
	h.loaded = created || trunc || e.Kind != format.KindSig
	h.dirty = created || trunc
	h.size.Store(-1)
	if !created {
		m.pending.add(p, h)
	}
	if created || trunc {
		h.setSize(0)
	}
	return h
}

// setSize stores the size of buf. The first (from -1: an existing
// signature's bytes not loaded) is when the write begins to stand for the
// name (beside.go): a node whose version descriptors hold has its name
// dropped then, so that a stat by path looks it up and gets the write's
// node, not the size go-fuse's lent handle of theirs would say.
func (h *writeHandle) setSize(n int64) {
	if h.size.Swap(n) >= 0 || h.created || h.e.Kind != format.KindSig || h.reserved.Load() {
		return // a reservation stands for the name once claimed (claim)
	}
	if node := h.node; node != nil && node.readers.Load() > 0 {
		go h.m.dropName(h.path) // not from inside the request: sigChanged
	}
}

// load reads an existing signature's bytes before a partial write.
func (h *writeHandle) loadLocked(ctx context.Context) syscall.Errno {
	if h.loaded {
		return 0
	}
	rc := h.m.reqCtx(ctx)
	defer rc.end()
	data, err := h.m.ix.ReadSig(rc, h.e)
	if err != nil && !isNotExist(err) {
		return h.m.errno("read", h.path, err)
	}
	if errno := h.holdLocked(int64(len(data))); errno != 0 {
		return errno
	}
	h.buf, h.loaded = data, true
	h.setSize(int64(len(h.buf)))
	return 0
}

func (h *writeHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	defer h.m.ops.start(opWrite)()
	if len(data) == 0 {
		return 0, 0
	}
	h.untouched.Store(false)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.e.Kind != format.KindSig {
		// An index entry's value is its name; it holds no bytes.
		return 0, h.refuseLocked(syscall.EINVAL)
	}
	if errno := h.loadLocked(ctx); errno != 0 {
		return 0, h.refuseLocked(errno)
	}
	h.wroteLocked(ctx)
	if h.append {
		off = int64(len(h.buf))
	}
	end := off + int64(len(data))
	if off < 0 || end > MaxWriteBytes {
		return 0, h.refuseLocked(syscall.EFBIG)
	}
	if end > int64(len(h.buf)) {
		if errno := h.holdLocked(end); errno != 0 {
			return 0, h.refuseLocked(errno)
		}
		h.buf = slices.Grow(h.buf, int(end)-len(h.buf))[:end]
	}
	copy(h.buf[off:], data)
	h.dirty = true
	h.settled.Store(false)
	h.setSize(int64(len(h.buf)))
	return uint32(len(data)), 0
}

// refuseLocked records that a write or truncate was refused and returns
// errno. A refusal stays: a later write that fits does not clear it, and
// close writes nothing and reports the first refusal — committing would
// store a signature with a zero-filled gap or missing the refused bytes.
func (h *writeHandle) refuseLocked(errno syscall.Errno) syscall.Errno {
	if h.refused == 0 {
		h.refused = errno
		h.dead.Store(true)
		if h.e.Kind == format.KindSig {
			// The write no longer holds its node current (stale() counts
			// a refused write as none): if a refresh moved the version
			// meanwhile — Invalidate skipped the node then — the kernel's
			// name must go now, or a stat by path keeps the old size.
			// Not from inside the request (sigChanged notifies).
			go h.m.sigChanged(h.path)
		}
	}
	return errno
}

// holdLocked makes the handle hold n bytes of the mount's write budget:
// ENOSPC, logged, when they do not fit beside what the other open writes
// hold.
func (h *writeHandle) holdLocked(n int64) syscall.Errno {
	if n > h.held {
		if !h.m.wbuf.take(n - h.held) {
			h.m.event(slog.LevelWarn, fmt.Sprintf("write /%s: %d bytes do not fit: the files open for writing hold %d of the %d bytes all may hold (ENOSPC)",
				h.path, n, h.m.wbuf.used.Load(), cmp.Or(h.m.wbuf.max, MaxWriteBuffers)), slog.String("entry", h.e.Key()), slog.String("errno", "ENOSPC"))
			return syscall.ENOSPC
		}
	} else {
		h.m.wbuf.give(h.held - n)
	}
	h.held = n
	return 0
}

// truncate sets the size of a signature being written.
func (h *writeHandle) truncate(ctx context.Context, size uint64) syscall.Errno {
	h.untouched.Store(false)
	h.mu.Lock()
	defer h.mu.Unlock()
	if size > MaxWriteBytes {
		return h.refuseLocked(syscall.EFBIG)
	}
	h.wroteLocked(ctx)
	if size == 0 {
		h.buf, h.loaded = h.buf[:0], true
	} else if errno := h.loadLocked(ctx); errno != 0 {
		return h.refuseLocked(errno)
	}
	if int(size) <= len(h.buf) {
		h.buf = h.buf[:size]
		h.holdLocked(int64(size)) // gives back: cannot fail
	} else {
		if errno := h.holdLocked(int64(size)); errno != 0 {
			return h.refuseLocked(errno)
		}
		h.buf = append(h.buf, make([]byte, int(size)-len(h.buf))...)
	}
	h.dirty = true
	h.settled.Store(false)
	h.setSize(int64(len(h.buf)))
	return 0
}

func (h *writeHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	defer h.m.ops.start(opRead)()
	h.untouched.Store(false)
	h.mu.Lock()
	defer h.mu.Unlock()
	if errno := h.loadLocked(ctx); errno != 0 {
		return nil, errno
	}
	return fuse.ReadResultData(slices.Clone(slice(h.buf, dest, off))), 0
}

// Flush is close(2) of one descriptor of the open file. The first flush
// after a change writes the entry; a later flush of the same open file (a
// dup'ed descriptor) with nothing new writes nothing and returns the same
// result.
//
// The kernel sends a flush for every close of every descriptor, whichever
// process holds it: a child that inherited the descriptor closes it too,
// when it exits or, for a close-on-exec descriptor (every one Go, Python
// and most libraries open), when it execs. A process writing a signature
// that runs a command meanwhile would so commit a prefix of it: another
// reader could read the half signature, and if a later write was refused
// (EFBIG) the half signature stayed. So once a process has written through
// this open file, only a flush by a process that wrote commits; another's
// flush writes nothing and returns 0 (it wrote nothing to report on). What
// no flush committed, release does.
func (h *writeHandle) Flush(ctx context.Context) syscall.Errno {
	defer h.m.ops.start(opFlush)()
	h.mu.Lock()
	if len(h.writers) > 0 {
		if tg := h.tgidLocked(ctx); tg != 0 && !h.writers[tg] {
			h.mu.Unlock()
			return 0
		}
	}
	errno := h.commitLocked()
	h.mu.Unlock()
	if errno != 0 {
		// Refused, failed or empty: the name is the store's version
		// again, before close returns (beside.go).
		h.dropKernelCopies()
	}
	return errno
}

// wroteLocked records the process of a write or a truncate (see Flush).
func (h *writeHandle) wroteLocked(ctx context.Context) {
	if tg := h.tgidLocked(ctx); tg != 0 {
		if h.writers == nil {
			h.writers = make(map[uint32]bool)
		}
		h.writers[tg] = true
	}
}

// tgidLocked is the thread group id (the process id) of the caller of a
// request: FUSE names the calling thread, and the threads of one process
// write and close alike. 0 when unknown (no pid, a pid of another pid
// namespace, no /proc): then Flush commits, as it would without the check.
func (h *writeHandle) tgidLocked(ctx context.Context) uint32 {
	c, ok := fuse.FromContext(ctx)
	if !ok || c.Pid == 0 {
		return 0
	}
	if tg, ok := h.tgids[c.Pid]; ok {
		return tg
	}
	tg := threadGroup(c.Pid)
	if h.tgids == nil {
		h.tgids = make(map[uint32]uint32)
	}
	h.tgids[c.Pid] = tg
	return tg
}

// threadGroup reads the Tgid of thread tid from /proc (0 if it cannot).
func threadGroup(tid uint32) uint32 {
	data, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return 0
			}
			return uint32(n)
		}
	}
	return 0
}

// Fsync writes what changed, as a flush does.
func (h *writeHandle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.commitLocked()
}

func (h *writeHandle) commitLocked() syscall.Errno {
	if h.refused != 0 {
		h.dirty = false
		return h.refused
	}
	if !h.dirty {
		return h.errno
	}
	h.dirty = false
	if h.e.Kind == format.KindSig && len(h.buf) == 0 {
		// Nothing to write yet. Not logged here: a shell's `exec 3>file`
		// closes its first descriptor before writing through the dup'ed
		// one, and that write lands. Release logs what stays empty.
		h.errno = syscall.EINVAL
		return h.errno
	}
	// One commit of a name at a time (Server.commits): the write whose
	// PUT the store took last is the one that supersedes the others here.
	unlock := h.m.commits.Lock(h.path)
	defer unlock()
	h.errno = h.m.put(h.path, h.e, h.buf)
	if h.errno == 0 {
		h.landed = true
		h.superseded.Store(false)
		h.settled.Store(true)
		h.m.pending.supersede(h.path, h)
	}
	return h.errno
}

// Release: the last descriptor is closed. What a flush did not write (there
// was none) is written now; its error can only be logged.
func (h *writeHandle) Release(ctx context.Context) syscall.Errno {
	defer h.m.ops.start(opRelease)()
	h.mu.Lock()
	errno := h.commitLocked()
	landed, refused := h.landed, h.refused != 0
	if !landed && !refused && h.e.Kind == format.KindSig && len(h.buf) == 0 && errno == syscall.EINVAL {
		h.m.event(slog.LevelWarn, fmt.Sprintf("write /%s: a signature needs bytes; nothing written (EINVAL)", h.path), slog.String("entry", h.e.Key()), slog.String("errno", "EINVAL"))
	}
	h.mu.Unlock()
	// Out of the pending writes before it is released: an open that found
	// the write (its look) and then finds it released (openBeside) looks
	// again, and must not find it again — a released write still pending
	// answered a read's open and its kernel retry ESTALE both (a reader
	// beside two writers through one mount). Reads that open beside it
	// meanwhile read its bytes, which stay until the last of them goes.
	h.m.pending.remove(h.path, h)
	h.mu.Lock()
	h.released = true
	h.freeLocked()
	h.mu.Unlock()
	if errno != 0 {
		// What no flush reported (none came): from a goroutine, as the
		// notices below — the kernel may wait for this RELEASE.
		go h.dropKernelCopies()
	}
	if !landed && !refused && !h.created && h.e.Kind == format.KindSig {
		// As at a refusal (which asked already, refuseLocked; a refresh
		// since saw the node stale itself): a write that ends without
		// landing no longer holds the node current; drop the name if its
		// version moved.
		go h.m.sigChanged(h.path)
	}
	if h.created && !landed && h.parent.held() {
		// The kernel holds the name Create gave it, and may have listed
		// it: make it ask again (and find nothing). Not from inside the
		// request: an entry notification waits for the directory's lock,
		// which the kernel may hold while it waits for us.
		go func() {
			h.parent.notifyEntry(h.name)
			h.parent.notifyContent()
		}()
	}
	return errno
}

// freeLocked gives back the buffer and its share of the budget once the
// kernel released the write and no reader beside it is left (beside.go).
// h.mu is held.
func (h *writeHandle) freeLocked() {
	if h.released && h.besideReaders == 0 {
		h.holdLocked(0)
		h.buf = nil
	}
}

// put writes one entry, returning the errno close reports. Its cause is
// logged once: close does not retry.
func (m *Server) put(p string, e format.Entry, data []byte) syscall.Errno {
	m.writes.Add(1)
	defer m.writes.Done()
	err := m.ix.Put(context.Background(), e, data)
	if err == nil {
		m.notifyListings(e)
		return 0
	}
	// Once, at WARN or ERROR (failed): the close that gets the errno is
	// the caller's only other word of it. ENOSPC was "(no space left on
	// device)" here, which the mount's log took for INFO.
	errno := errnoOf(err)
	m.failed("write", p, e.Key(), err, errno)
	return errno
}

// openOn reports whether the write is open on node n — the node the
// kernel sizes by the write: the one its open was answered on, or, for a
// reservation, the write's own node (entryNode.w).
func (h *writeHandle) openOn(n *entryNode) bool {
	return n.w.Load() == h || h.node == n && !h.fromReserve.Load()
}
