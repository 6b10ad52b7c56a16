package fs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// entryNode is one entry: sig/<hh>/<rest>/<signer> (the signature bytes) or
// <kind>/<hh>/<rest>/<value> (empty). It holds no attributes: go-fuse may
// hand an older node of the same inode number back, so every answer is
// asked of the index (or of a write in progress) afresh. A signature's node
// is one version of it (ver, its generation: versions.go).
type entryNode struct {
	base
	path string       // read-only
	e    format.Entry // read-only
	// leafID is the node's leaf id (leafids.go: no go-fuse node, the
	// Inode embedded unused); 0 for a go-fuse node. Read-only.
	leafID uint64
	ver    atomic.Uint64 // atomic: index.SigVersion when the node was made, or a later one of the same bytes (versions.go), or one it adopted (adopt)
	// ident is the identity of version ver's bytes, when known (the index
	// had read or written the bytes of the node's first version when it
	// was made, or the node adopted a version: adopt); nil otherwise.
	// Atomic.
	ident atomic.Pointer[index.SigID]
	// openMu orders an open that counts itself among the node's readers
	// (of its version) before an adoption of another version (adopt),
	// which needs none, and against an open for writing, which opens on
	// this node only when no read is counted (openWrite). Taken before a
	// writeHandle's mu.
	openMu sync.Mutex
	// readers counts the signature's descriptors open for reading on
	// this node that hold its version, and readSize is their size: each
	// holds the node's version whole (sameVersion: that version, or one
	// of the same bytes), so they agree. One opened beside a write in
	// progress (besideHandle) is not counted. Both atomic.
	readers  atomic.Int32
	readSize atomic.Int64
	// readMod is their key's time (index.SigHandle.ModTime, UnixNano; 0:
	// not known, the store's last change stands for it). Atomic.
	readMod atomic.Int64
	// lookedUp is when a lookup last returned the node (UnixNano; 0:
	// never): retried. Atomic.
	lookedUp atomic.Int64
	// w is the write this node stands for (made while it was in
	// progress: beside.go), nil for a node of a version; cleared when the
	// node takes a version after the write (settle). Atomic.
	w atomic.Pointer[writeHandle]
	// beside counts the reads open on this node beside a write in
	// progress (besideHandle: the write's bytes, not the node's
	// version), and mixed says one ever was: the node's page cache may
	// hold bytes of no version, so its opens never keep the pages
	// (readFlags). Atomic.
	beside atomic.Int32
	mixed  atomic.Bool
}

// look is what one kernel request knows of a signature's name, asked once
// at its start: the index's state of the signature (index.SigState:
// version, identity, size, time, under one lock) and the write this mount
// has open on the name (pendingWrites.look, under its lock). A LOOKUP, a
// GETATTR and an OPEN each decide from one look; only a request that had to
// read the signature (to learn its size, or an open's bytes) asks the
// index's state once more after the read.
type look struct {
	st index.SigState
	// w is the write in progress on the name whose bytes the name stands
	// for (pendingWrites.writing: not refused); nil if none.
	w *writeHandle
	// open: some write is open on the name, refused or not
	// (pendingWrites.get): the kernel's size of it may be the write's.
	open bool
	// node is the index's node of the name and nodeErr its error, when
	// the look asked (lookStat); nil: not asked.
	node    *index.Node
	nodeErr error
}

// look takes the request's look at n (see look).
func (n *entryNode) look() look {
	w, open := n.pendingLook()
	return look{st: n.m.ix.SigState(n.e), w: w, open: open}
}

// pendingLook is the write whose bytes the name stands for and whether
// one is open (pendingWrites.look) — on a node of a reservation not yet
// claimed (reserveWrite), that reservation: only its thread's retry has
// the node (its lookup gave it), and the open's permission check asks
// its attributes (GETATTR) before the open claims it.
func (n *entryNode) pendingLook() (w *writeHandle, open bool) {
	if r := n.w.Load(); r != nil && r.reserved.Load() {
		return r, true
	}
	return n.m.pending.look(n.path)
}

// lookStat is look with the index's node of the name, for a request that
// answers attributes (GETATTR): one question of the index (StatSig), the
// node and the signature's state under one lock, and the pending writes'.
func (n *entryNode) lookStat(ctx context.Context) look {
	w, open := n.pendingLook()
	rc := n.m.reqCtx(ctx)
	defer rc.end()
	node, st, err := n.m.ix.StatSig(rc, n.path)
	if n.e.Kind != format.KindSig {
		st = index.SigState{}
	}
	return look{st: st, w: w, open: open, node: &node, nodeErr: err}
}

var (
	_ = (gofs.NodeGetattrer)((*entryNode)(nil))
	_ = (gofs.NodeSetattrer)((*entryNode)(nil))
	_ = (gofs.NodeOpener)((*entryNode)(nil))
	_ = (gofs.NodeGetxattrer)((*entryNode)(nil))
	_ = (gofs.NodeListxattrer)((*entryNode)(nil))
)

// sized is what entryNode.size learnt.
type sized struct {
	size  int64
	mod   time.Time // a signature's key's own time (zero: the store's last change stands for it)
	known bool      // false while a write is in progress (the kernel must not cache it)
	// ofState: the size is that of the bytes of the state's version
	// (index.SigState.Size), taken with the version under one lock; no
	// read since could have found other bytes.
	ofState bool
	// missing: the index lists the entry but its key is gone
	// (index.ErrListedMissing): ENOENT, not the ESTALE of a name that
	// stands for nothing now.
	missing bool
	// read: the signature was read to learn the size (SigStat), which
	// may have moved its version.
	read bool
}

// size is the entry's size and time: a write in progress, else the
// index's — that of q's version when the index knows it (q.st.Size), else
// as Stat gives it, else reading the signature (one GET, cached, which
// gives its key's time too). Stat says whether the name still stands for
// an entry.
func (n *entryNode) size(ctx context.Context, q look) (sized, syscall.Errno) {
	m := n.m
	if q.w != nil && !q.w.settled.Load() {
		return sized{size: q.w.size.Load()}, 0
	}
	node, err := q.stat(ctx, n)
	if err != nil {
		return sized{}, m.errno("stat", n.path, err)
	}
	if n.e.Kind == format.KindSig && q.st.Size >= 0 {
		return sized{size: q.st.Size, mod: q.st.ModTime, known: true, ofState: true}, 0
	}
	if node.Size >= 0 {
		return sized{size: node.Size, mod: node.ModTime, known: true}, 0
	}
	rc := m.reqCtx(ctx)
	defer rc.end()
	sz, mod, err := m.ix.SigStat(rc, n.e)
	if err != nil {
		return sized{missing: errors.Is(err, index.ErrListedMissing)}, m.errno("stat", n.path, err)
	}
	return sized{size: sz, mod: mod, known: true, read: true}, 0
}

// stat is the index's node of n's name: the look's when it asked
// (lookStat), else asked now.
func (q look) stat(ctx context.Context, n *entryNode) (index.Node, error) {
	if q.node != nil {
		return *q.node, q.nodeErr
	}
	rc := n.m.reqCtx(ctx)
	defer rc.end()
	return n.m.ix.Stat(rc, n.path)
}

// Getattr answers from one look at the signature (look; one more after a
// read that learnt the size). fstat of a signature open for reading
// answers from its handle (the version it opened); a node of a version
// that is no longer the signature's, or of a name that no longer stands
// for an entry, is ESTALE, so that the kernel looks the name up again —
// but for the answers below, which a caller that cannot retry needs.
func (n *entryNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	defer n.m.ops.start(opGetattr)()
	if h, ok := f.(*readHandle); ok && n.e.Kind == format.KindSig && h.node != nil {
		// Only a handle of the node's version answers (h.node): a read
		// beside a write in progress (besideHandle) is not the node's
		// version, and go-fuse lends it to a stat by path too. The node
		// answers instead.
		n.m.sigAttr(&out.Attr, int64(len(h.data)), h.modTime())
		out.SetTimeout(n.m.attrTTL)
		return 0
	}
	q, errno := n.getattr(ctx, n.lookStat(ctx), out)
	if w, size := landedWrite(f); w != nil && errno == 0 && q.w != nil && q.w != w && !q.w.openOn(n) {
		// A read opened beside a write of ours that landed (or that
		// write itself, its RELEASE not come yet: go-fuse lends it to
		// fstat's GETATTR as the node's first open file), while another
		// write is in progress on the name (on a node of its own:
		// reserveWrite): the size of what the node's readers read, not
		// the other write's — the kernel sizes the node by this answer,
		// and a mapping of it past that size faults (SIGBUS). When the
		// other write is open on this node (no read beside the landed
		// one held it, so it opened here), the node is that write's:
		// its size, below (reads beside it read its bytes).
		n.m.sigAttr(&out.Attr, size, time.Time{})
		out.SetTimeout(0)
		return 0
	}
	if errno != syscall.ESTALE || n.e.Kind != format.KindSig {
		return errno
	}
	switch b, _ := f.(*besideHandle); {
	case n.readers.Load() > 0:
		// The kernel sends fstat's GETATTR without the file, and go-fuse
		// then passes the node's first open file, which may be a write's
		// (a refused one whose RELEASE has not come yet): a node of an
		// older version, or of a name that stands for nothing now, is
		// reached only through the descriptors open on it (its name was
		// dropped when its version moved), so the ones reading it answer
		// — the version they hold, not ESTALE, which fstat cannot retry.
		n.m.sigAttr(&out.Attr, n.readSize.Load(), unixTime(n.readMod.Load()))
		out.SetTimeout(n.m.attrTTL)
		return 0
	case b != nil && b.landed():
		// A read opened beside this mount's write, which landed (the
		// node went stale when the write ended): the landed bytes,
		// which it reads (beside.go), not ESTALE.
		n.m.sigAttr(&out.Attr, b.size(), time.Time{})
		out.SetTimeout(0)
		return 0
	case b != nil || n.retried():
		// A read beside a write that was refused or failed (go-fuse lends
		// it to a stat by path too, which must say the name's size: the
		// store's version again, beside.go). Or a node the kernel looked
		// up just now, whose version moved since — maybe for an ESTALE,
		// after which it does not retry (an open checks permissions with
		// a GETATTR when the attributes are not cached). The signature's
		// current size (of the same look: its state is the current
		// version's), not cached; an open of the node reads the current
		// bytes (Open). Of a look taken now: the node may have become
		// current since the first (a write's node settled as the version
		// it landed), which a second look at q would not see.
		if b == nil {
			q = n.lookStat(ctx)
		}
		sz, serr := n.size(ctx, q)
		if serr != 0 {
			// The current signature could not be read (gone from the
			// view, say): the node's ESTALE, as without the window — the
			// kernel looks the name up again and hears what became of it.
			return errno
		}
		n.m.sigAttr(&out.Attr, sz.size, sz.mod)
		out.SetTimeout(0)
		return 0
	}
	return errno
}

// getattr answers a stat of the node's version from q, the request's look
// (index.SigState: its version, identity and size under one lock), reading
// the signature only when its size is not known — and then looking once
// more, which it returns (else q).
func (n *entryNode) getattr(ctx context.Context, q look, out *fuse.AttrOut) (look, syscall.Errno) {
	if n.staleNow(q) {
		return q, syscall.ESTALE
	}
	sz, errno := n.size(ctx, q)
	if errno == syscall.ENOENT && !sz.missing {
		if n.retried() {
			rc := n.m.reqCtx(ctx)
			defer rc.end()
			if _, err := n.m.ix.Stat(rc, n.path); err == nil {
				// The view lists the name, and a lookup returned the
				// node just now, but its key is gone from the store (a
				// collection forgot it; the next refresh drops the
				// name): ENOENT. ESTALE would have the kernel look the
				// name up again and get this node again — and after
				// its one retry, pass ESTALE to the caller.
				return q, syscall.ENOENT
			}
		}
		// The kernel holds a name that no longer stands for an entry (a
		// refused create whose RELEASE came after close returned, an entry
		// a collection forgot and a refresh dropped): ESTALE makes it look
		// the name up again (and an open with O_CREAT then creates), where
		// ENOENT would fail the stat or open that asked. An entry the
		// index still lists whose key is gone (index.ErrListedMissing) is
		// ENOENT: a second look-up would find the same name, and the
		// same ESTALE, which says nothing of what is wrong (the index
		// warns once, naming the key).
		return q, syscall.ESTALE
	}
	if errno != 0 {
		return q, errno
	}
	if sz.read {
		// The read that learnt the size may have found other bytes: the
		// request's second look, after it.
		q.st = n.m.ix.SigState(n.e)
		if n.staleNow(q) {
			return q, syscall.ESTALE
		}
	}
	n.m.sigAttr(&out.Attr, sz.size, sz.mod)
	if sz.known {
		out.SetTimeout(n.m.attrTTL)
	} else {
		out.SetTimeout(0)
	}
	return q, 0
}

// Setattr: modes, owners and times are the mount's, so chmod and chown are
// EPERM, and so is utimes — but for setting the times to now on an entry
// open for writing, which is what touch does after it opened (or created)
// the file, and which changes nothing. A size is only set through a file
// open for writing: truncating a signature being rewritten, or an index
// entry to 0 (it is empty); any other size of an index entry is EINVAL,
// truncating a signature by name EPERM. (Where the kernel does not pass
// O_TRUNC to OPEN it truncates with a SETATTR naming no file: that
// truncates the file just opened for writing.)
func (n *entryNode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	m := n.m
	defer m.ops.start(opSetattr)()
	if m.ro {
		return syscall.EROFS
	}
	if errno := refuseOwnAttrs(in, func() bool {
		h, _ := f.(*writeHandle)
		return h != nil || m.pending.get(n.path) != nil || m.pending.fresh(n.path) != nil
	}); errno != 0 {
		return errno
	}
	if sz, ok := in.GetSize(); ok {
		h, _ := f.(*writeHandle)
		if h == nil && sz == 0 {
			h = m.pending.fresh(n.path)
		}
		switch {
		case n.e.Kind != format.KindSig:
			if sz != 0 {
				return syscall.EINVAL
			}
		case h == nil:
			return syscall.EPERM
		default:
			if errno := h.truncate(ctx, sz); errno != 0 {
				return errno
			}
		}
	}
	if h, ok := f.(*writeHandle); ok && n.e.Kind == format.KindSig && h.size.Load() >= 0 {
		// Through a descriptor of a write (ftruncate, futimens): the
		// attributes of that write, whatever the name stands for now —
		// another write of it may have landed since this one opened, or
		// be in progress on a node of its own, which made this node
		// stale to a stat by name, and an ftruncate that was done
		// answered ESTALE (a trial: 6,482 of 14,324 writes of two
		// rewriters that truncate to their length beside a reader).
		n.m.sigAttr(&out.Attr, h.size.Load(), time.Time{})
		out.SetTimeout(0)
		return 0
	}
	_, errno := n.getattr(ctx, n.lookStat(ctx), out)
	return errno
}

// Open: reading a signature takes a handle on its bytes at open
// (index.OpenSig: one GET unless cached or open already, one copy shared by
// every handle on the version, EAGAIN past the readers' budget); the kernel
// reads them through its page cache unless a size it holds may be stale
// (readFlags; see the package doc, "Kernel caching"). It decides from one
// look at the signature (look), and once more after the read only if the
// bytes read are of another version than the look's (or if the write the
// look found was released before the open could read beside it). Beside a
// write in progress on the name it reads the write's bytes instead
// (beside.go). A
// node whose version is no longer the signature's, or whose bytes the open
// found to be another version's, is ESTALE: the kernel looks the name up
// again and opens the new version's node. Writing opens a writeHandle.
func (n *entryNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	m := n.m
	defer m.ops.start(opOpen)()
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		h, fl, errno := n.openWrite(ctx, flags)
		if errno == 0 {
			writeOpened(n.path)
		}
		return h, fl, errno
	}
	if n.e.Kind != format.KindSig {
		return &readHandle{m: m}, fuse.FOPEN_NOFLUSH, 0 // empty, and known to be: the page cache answers
	}
	q := n.look()
	if q.w != nil {
		if h := n.openDuringWrite(q.w); h != nil {
			return h, besideFlags, 0
		}
		q = n.look() // the write is open elsewhere, or was released just now: the node's version is read
	}
	if n.staleAt(q) && n.ident.Load() == nil && !n.retried() {
		return nil, 0, syscall.ESTALE
	}
	rc := m.reqCtx(ctx)
	defer rc.end()
	sh, err := m.ix.OpenSig(rc, n.e)
	if err != nil {
		return n.openFailed(q, err)
	}
	if hook := testHookOpenedSig.Load(); hook != nil {
		(*hook)(n.path)
	}
	n.openMu.Lock()
	if w, _ := m.pending.look(n.path); w != nil && w.openOn(n) {
		// A write of the name open on this node: it began while the
		// signature was opened (its GET), as no read was counted yet
		// (openWrite), or before. A read of the version here would share
		// the node with the write — whose handle go-fuse lends to
		// fstat's GETATTR, naming no file, and by which the kernel sizes
		// the node: the read's mapping, sized by the write's size, dies
		// of SIGBUS. The read opens beside the write. (openWrite decides
		// under openMu, so a write either sees this read counted or is
		// seen here.)
		n.openMu.Unlock()
		sh.Release()
		if h := n.openDuringWrite(w); h != nil {
			return h, besideFlags, 0
		}
		return nil, 0, syscall.ESTALE // the write was released just now; the kernel looks the name up again
	}
	defer n.openMu.Unlock()
	if !n.holdsVersion(sh) {
		sh.Release()
		return nil, 0, syscall.ESTALE
	}
	return n.readHandle(sh), n.readFlags(q, sh), 0
}

// testHookOpenedSig, when set (tests), runs when a read's open has opened
// the signature (its GET, which may take long) and not yet counted itself
// among the node's readers. Atomic.
var testHookOpenedSig atomic.Pointer[func(path string)]

// openFailed answers an open whose index.OpenSig failed with err; q is the
// open's look.
func (n *entryNode) openFailed(q look, err error) (gofs.FileHandle, uint32, syscall.Errno) {
	if n.staleAt(q) && n.ident.Load() == nil && index.Classify(err) == index.ClassNotFound {
		// A node whose version moved (in the retry window) and whose
		// signature is not there now: ESTALE, as without the window,
		// so the kernel looks the name up again rather than taking
		// ENOENT for a name its listing may still show.
		return nil, 0, syscall.ESTALE
	}
	return nil, 0, n.m.errno("read", n.path, err)
}

// holdsVersion reports whether sh, just opened (with no write in progress
// on the name: the open's look), holds the node's version (sameVersion,
// or one the node adopts); if not, the open is ESTALE: the kernel looks the
// name up again and opens the current version's node. n.openMu is held.
func (n *entryNode) holdsVersion(sh *index.SigHandle) bool {
	if n.w.Load() != nil {
		// A node of a write that ended (stale: staleAt), opened in the
		// retry window: it becomes a node of sh's version once no read
		// beside the write is open on it (settle), as adopt.
		return n.retried() && n.settle(sh)
	}
	if n.sameVersion(sh) {
		return true
	}
	// In the retry window — the version moved again just after the
	// kernel looked the name up (maybe for an ESTALE, after which it does
	// not retry: an open must not fail because a signature changed) — the
	// node takes the signature's current version as its own when no
	// descriptor holds the node's (adopt), and the open reads it — never
	// the older version: an open after a write (or a refresh) that moved
	// the version must read what it wrote. Otherwise ESTALE. A node is one
	// version for every descriptor on it: their page cache is the node's,
	// and fstat's GETATTR names no descriptor (go-fuse passes the node's
	// first open file), so a descriptor of other bytes beside the node's
	// would read the other's pages in a mapping, and be told the other's
	// size.
	return n.retried() && n.adopt(sh)
}

// readHandle makes the handle of an open of sh, the node's version,
// counted among its readers.
func (n *entryNode) readHandle(sh *index.SigHandle) *readHandle {
	h := &readHandle{m: n.m, data: sh.Bytes(), sig: sh, node: n}
	n.readSize.Store(int64(len(h.data)))
	var mod int64
	if t := h.modTime(); !t.IsZero() {
		mod = t.UnixNano()
	}
	n.readMod.Store(mod)
	n.readers.Add(1)
	return h
}

// retryWindow is how soon after a lookup returned a node a version move
// is taken for one between the kernel's second look-up of the name (after
// an ESTALE) and its use, which the kernel does not retry (retried).
const retryWindow = 5 * time.Second

// retried reports whether n was returned by a lookup within retryWindow:
// a stat or an open of it whose version moved is then answered, not
// ESTALE, which the kernel would pass to the caller if it came after its
// retry (issue 37, item 8) — an open with the signature's current bytes
// (never an older version descriptors still hold: an open after a write
// reads what it wrote), a stat
// with the current size (Getattr answers the held size when descriptors
// hold the version). Otherwise ESTALE makes the kernel look the name up
// and use the new version's node.
func (n *entryNode) retried() bool {
	at := n.lookedUp.Load()
	if n.leafID != 0 {
		at = max(at, n.m.leafs.lookedUpAt(n.leafID))
	}
	return at != 0 && time.Since(time.Unix(0, at)) < retryWindow
}

// sizeSettle is how much longer than AttrTimeout a size reported before a
// signature changed may outlive the change in the kernel: a reply that was
// on its way when the change was seen.
const sizeSettle = time.Minute

// readFlags are the open flags of sh, a signature opened for reading; q is
// the open's look. No FLUSH: a reader's close has nothing to write. The
// page cache, not direct I/O, when the kernel's size of the file cannot be
// stale: the kernel reads at most the size it holds while its attributes
// are fresh, and asks (GETATTR) before reading past it when they are not,
// so the size it holds must be that of these bytes — true unless the
// signature's version began within AttrTimeout (+ sizeSettle) of now
// (index.SigState.ChangedAt: the look's, when sh is of its version; else
// the open's second look, after the read), or a write is open on it, or a
// read beside one is open on the node (besideHandle). Then cat's second
// read, the one that finds the end, is answered by the kernel, not by a
// READ. The pages are kept across opens (FOPEN_KEEP_CACHE): they are this
// node's, and a node is one version of the signature — its bytes never
// change (a replacement is a new node, versions.go; a node takes a later
// version only of the same bytes, sameVersion), so a second read of a
// signature whose bytes the kernel holds sends an OPEN and no READ — but
// for a node read beside a write once (mixed), whose pages may hold the
// write's bytes: its opens drop them. Direct I/O reads exactly the
// handle's bytes whatever size the kernel holds, and fills no page.
func (n *entryNode) readFlags(q look, sh *index.SigHandle) uint32 {
	m := n.m
	changed := q.st.ChangedAt
	if sh.Version() != q.st.Version {
		changed = m.ix.SigState(n.e).ChangedAt
	}
	switch {
	case q.open || n.beside.Load() > 0 || time.Since(changed) <= m.attrTTL+sizeSettle:
		return fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH
	case n.mixed.Load():
		return fuse.FOPEN_NOFLUSH
	}
	return fuse.FOPEN_NOFLUSH | fuse.FOPEN_KEEP_CACHE
}

// readHandle is an open file's bytes, taken at open: a reader sees one
// version of the entry however long it keeps the file open. A signature's
// are shared with every handle on the same version (sig), given back at
// release.
type readHandle struct {
	m    *Server
	data []byte           // read-only
	sig  *index.SigHandle // nil for an index entry
	node *entryNode       // a signature's node, whose readers it counts; nil for an index entry
}

var (
	_ = (gofs.FileReader)((*readHandle)(nil))
	_ = (gofs.FileFlusher)((*readHandle)(nil))
	_ = (gofs.FileReleaser)((*readHandle)(nil))
)

// modTime is the time of the handle's bytes (index.SigHandle.ModTime): the
// zero time for an index entry, or when not known.
func (h *readHandle) modTime() time.Time {
	if h.sig == nil {
		return time.Time{}
	}
	return h.sig.ModTime()
}

// unixTime is the time entryNode.readMod keeps (0: the zero time).
func unixTime(ns int64) time.Time {
	if ns <= 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Release gives the bytes back to the readers' budget.
func (h *readHandle) Release(ctx context.Context) syscall.Errno {
	defer h.m.ops.start(opRelease)()
	if h.node != nil {
		h.node.readers.Add(-1)
	}
	if h.sig != nil {
		h.sig.Release()
	}
	return 0
}

// Flush has nothing to write. Opens ask the kernel not to send it
// (FOPEN_NOFLUSH); it is counted, so a kernel that sends it shows.
func (h *readHandle) Flush(ctx context.Context) syscall.Errno {
	defer h.m.ops.start(opFlush)()
	return 0
}

func (h *readHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	defer h.m.ops.start(opRead)()
	return fuse.ReadResultData(slice(h.data, dest, off)), 0
}

// slice returns the part of data a read of len(dest) bytes at off sees.
func slice(data, dest []byte, off int64) []byte {
	if off < 0 || off >= int64(len(data)) {
		return nil
	}
	end := off + int64(len(dest))
	if end > int64(len(data)) {
		end = int64(len(data))
	}
	return data[off:end]
}
