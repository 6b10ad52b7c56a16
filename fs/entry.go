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
	path string        // read-only
	e    format.Entry  // read-only
	ver  atomic.Uint64 // atomic: index.SigVersion when the node was made, or a later one of the same bytes (versions.go), or one it adopted (adopt)
	// ident is the identity of version ver's bytes, when known (the index
	// had read or written the bytes of the node's first version when it
	// was made, or the node adopted a version: adopt); nil otherwise.
	// Atomic.
	ident atomic.Pointer[index.SigID]
	// openMu orders an open that counts itself among the node's readers
	// (of its version) before an adoption of another version (adopt),
	// which needs none.
	openMu sync.Mutex
	// readers counts the signature's descriptors open for reading on
	// this node that hold its version, and readSize is their size: each
	// holds the node's version whole (sameVersion: that version, or one
	// of the same bytes), so they agree. One opened beside a write in
	// progress with another version's bytes is not counted. Both atomic.
	readers  atomic.Int32
	readSize atomic.Int64
	// readMod is their key's time (index.SigHandle.ModTime, UnixNano; 0:
	// not known, the store's last change stands for it). Atomic.
	readMod atomic.Int64
	// lookedUp is when a lookup last returned the node (UnixNano; 0:
	// never): retried. Atomic.
	lookedUp atomic.Int64
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
}

// size is the entry's size and time: a write in progress, else the
// index's — that of st's version when st knows it (st is the signature's
// state the request took: index.SigState), else as Stat gives it, else
// reading the signature (one GET, cached, which gives its key's time too).
// Stat says whether the name still stands for an entry.
func (n *entryNode) size(ctx context.Context, st index.SigState) (sized, syscall.Errno) {
	m := n.m
	if h := m.pending.writing(n.path); h != nil && !h.settled.Load() {
		return sized{size: h.size.Load()}, 0
	}
	node, err := m.ix.Stat(bg(ctx), n.path)
	if err != nil {
		return sized{}, m.errno("stat", n.path, err)
	}
	if n.e.Kind == format.KindSig && st.Size >= 0 {
		return sized{size: st.Size, mod: st.ModTime, known: true, ofState: true}, 0
	}
	if node.Size >= 0 {
		return sized{size: node.Size, mod: node.ModTime, known: true}, 0
	}
	sz, mod, err := m.ix.SigStat(bg(ctx), n.e)
	if err != nil {
		return sized{missing: errors.Is(err, index.ErrListedMissing)}, m.errno("stat", n.path, err)
	}
	return sized{size: sz, mod: mod, known: true}, 0
}

// Getattr: fstat of a signature open for reading answers from its handle
// (the version it opened); a node of a version that is no longer the
// signature's, or of a name that no longer stands for an entry, is ESTALE,
// so that the kernel looks the name up again.
func (n *entryNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	defer n.m.ops.start(opGetattr)()
	if h, ok := f.(*readHandle); ok && n.e.Kind == format.KindSig && h.node != nil {
		// Only a handle of the node's version answers (h.node): one of
		// other bytes — what a file being created held when it was
		// opened, another version beside a write in progress — is not
		// the node's size, and go-fuse lends it to a stat by path too;
		// answered, its size stayed cached for the attribute timeout
		// after the write landed. The node answers instead.
		n.m.sigAttr(&out.Attr, int64(len(h.data)), h.modTime())
		out.SetTimeout(n.m.attrTTL)
		return 0
	}
	errno := n.getattr(ctx, out)
	if errno == syscall.ESTALE && n.e.Kind == format.KindSig && n.readers.Load() > 0 {
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
	}
	if errno == syscall.ESTALE && n.e.Kind == format.KindSig && n.stale() && n.retried() {
		// The version moved again just after the kernel looked the name
		// up — maybe for an ESTALE, after which it does not retry (an
		// open checks permissions with a GETATTR when the attributes are
		// not cached): the signature's current size, not cached; an open
		// of the node reads the current bytes (Open).
		sz, serr := n.size(ctx, n.m.ix.SigState(n.e))
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

// getattr answers a stat of the node's version from one state of the
// signature (index.SigState: its version, identity and size under one
// lock), reading the signature only when its size is not known.
func (n *entryNode) getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	st := n.m.ix.SigState(n.e)
	if n.staleNow(st) {
		return syscall.ESTALE
	}
	sz, errno := n.size(ctx, st)
	if errno == syscall.ENOENT && !sz.missing {
		if n.retried() {
			if _, err := n.m.ix.Stat(bg(ctx), n.path); err == nil {
				// The view lists the name, and a lookup returned the
				// node just now, but its key is gone from the store (a
				// collection forgot it; the next refresh drops the
				// name): ENOENT. ESTALE would have the kernel look the
				// name up again and get this node again — and after
				// its one retry, pass ESTALE to the caller.
				return syscall.ENOENT
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
		return syscall.ESTALE
	}
	if errno != 0 {
		return errno
	}
	if !sz.ofState && n.staleNow(n.m.ix.SigState(n.e)) { // the read that learnt the size found other bytes
		return syscall.ESTALE
	}
	n.m.sigAttr(&out.Attr, sz.size, sz.mod)
	if sz.known {
		out.SetTimeout(n.m.attrTTL)
	} else {
		out.SetTimeout(0)
	}
	return 0
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
	return n.getattr(ctx, out)
}

// Open: reading a signature takes a handle on its bytes at open
// (index.OpenSig: one GET unless cached or open already, one copy shared by
// every handle on the version, EAGAIN past the readers' budget); the kernel
// reads them through its page cache unless a size it holds may be stale
// (readFlags; see the package doc, "Kernel caching"). A node whose version
// is no longer the signature's, or whose bytes the open found to be
// another version's, is ESTALE: the kernel looks the name up again and
// opens the new version's node. Writing opens a writeHandle.
func (n *entryNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	m := n.m
	defer m.ops.start(opOpen)()
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return n.openWrite(flags)
	}
	if n.e.Kind != format.KindSig {
		return &readHandle{m: m}, fuse.FOPEN_NOFLUSH, 0 // empty, and known to be: the page cache answers
	}
	if n.stale() && n.ident.Load() == nil && !n.retried() {
		return nil, 0, syscall.ESTALE
	}
	sh, err := m.ix.OpenSig(bg(ctx), n.e)
	if err != nil {
		return n.openFailed(err)
	}
	n.openMu.Lock()
	defer n.openMu.Unlock()
	same, errno := n.holdsVersion(sh)
	if errno != 0 {
		sh.Release()
		return nil, 0, errno
	}
	return n.readHandle(sh, same), n.readFlags(), 0
}

// openWrite opens the entry for writing: a writeHandle. Replacing an
// existing signature needs --allow-overwrite.
func (n *entryNode) openWrite(flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	m := n.m
	if m.ro {
		return nil, 0, syscall.EROFS
	}
	if n.e.Kind == format.KindSig && !m.overwrite && m.pending.get(n.path) == nil {
		m.logf("oxyfs: open %s for writing: refused, the signature exists (mount with --allow-overwrite to replace signatures)", n.path)
		return nil, 0, syscall.EPERM
	}
	return m.newWriteHandle(n.path, n.e, flags, false), fuse.FOPEN_DIRECT_IO, 0
}

// openFailed answers an open whose index.OpenSig failed with err.
func (n *entryNode) openFailed(err error) (gofs.FileHandle, uint32, syscall.Errno) {
	m := n.m
	if n.stale() && n.ident.Load() == nil && index.Classify(err) == index.ClassNotFound {
		// A node whose version moved (in the retry window) and whose
		// signature is not there now: ESTALE, as without the window,
		// so the kernel looks the name up again rather than taking
		// ENOENT for a name its listing may still show.
		return nil, 0, syscall.ESTALE
	}
	if w := m.pending.writing(n.path); w != nil && index.Classify(err) == index.ClassNotFound {
		if data, ok := w.snapshot(); ok {
			// A file being created (no version in the store yet) is
			// listed and looked up: a reader sees what was written
			// so far, as on a local filesystem, not ENOENT.
			return &readHandle{m: m, data: data}, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH, 0
		}
	}
	return nil, 0, m.errno("read", n.path, err)
}

// holdsVersion reports whether sh, just opened, holds the node's version
// (sameVersion, or one the node adopts), or the errno of an open whose
// bytes the node cannot stand for (ESTALE: the kernel looks the name up
// again and opens the current version's node). n.openMu is held.
func (n *entryNode) holdsVersion(sh *index.SigHandle) (same bool, errno syscall.Errno) {
	same = n.sameVersion(sh)
	writing := n.m.pending.writing(n.path) != nil
	if !same && writing && n.readers.Load() > 0 {
		// A write in progress keeps its node's name across a refresh,
		// and the signature moved meanwhile: these bytes beside the
		// descriptors holding the node's version would share their
		// pages and their fstat (the node's first open file answers
		// it): a mapping sized by theirs showed the new bytes and
		// zeros, and a held descriptor read the new bytes (issue 37
		// item 9, B2 bytes-held-mount).
		return false, syscall.ESTALE
	}
	if !same && !writing {
		// In the retry window — the version moved again just after the
		// kernel looked the name up (maybe for an ESTALE, after which it
		// does not retry: an open must not fail because a signature
		// changed) — the node takes the signature's current version as
		// its own when no descriptor holds the node's (adopt), and the
		// open reads it — never the older version: an open after a
		// write (or a refresh) that moved the version must read what it
		// wrote. Otherwise ESTALE. A node is one version for every
		// descriptor on it: their page cache is the node's, and fstat's
		// GETATTR names no descriptor (go-fuse passes the node's first
		// open file), so a descriptor of other bytes beside the node's
		// would read the other's pages in a mapping, and be told the
		// other's size.
		if !n.retried() || !n.adopt(sh) {
			return false, syscall.ESTALE
		}
		same = true
	}
	return same, 0
}

// readHandle makes the handle of an open of sh. One of the node's version
// (same) is counted among its readers: one opened beside a write in
// progress may hold another, and would make the size the node's readers
// answer (Getattr) not theirs.
func (n *entryNode) readHandle(sh *index.SigHandle, same bool) *readHandle {
	h := &readHandle{m: n.m, data: sh.Bytes(), sig: sh}
	if same {
		h.node = n
		n.readSize.Store(int64(len(h.data)))
		var mod int64
		if t := h.modTime(); !t.IsZero() {
			mod = t.UnixNano()
		}
		n.readMod.Store(mod)
		n.readers.Add(1)
	}
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
	return at != 0 && time.Since(time.Unix(0, at)) < retryWindow
}

// sizeSettle is how much longer than AttrTimeout a size reported before a
// signature changed may outlive the change in the kernel: a reply that was
// on its way when the change was seen.
const sizeSettle = time.Minute

// readFlags are the open flags of a signature opened for reading. No
// FLUSH: a reader's close has nothing to write. The page cache, not direct
// I/O, when the kernel's size of the file cannot be stale: the kernel reads
// at most the size it holds while its attributes are fresh, and asks
// (GETATTR) before reading past it when they are not, so the size it holds
// must be that of these bytes — true unless the signature changed within
// AttrTimeout (+ sizeSettle) of now (ix.SigChangedAt) or is being written.
// Then cat's second read, the one that finds the end, is answered by the
// kernel, not by a READ. The pages are kept across opens
// (FOPEN_KEEP_CACHE): they are this node's, and a node is one version of
// the signature — its bytes never change (a replacement is a new node,
// versions.go; a node takes a later version only of the same bytes,
// sameVersion), so a second read of a signature whose bytes the kernel
// holds sends an OPEN and no READ. Direct I/O reads exactly the handle's
// bytes whatever size the kernel holds, and fills no page.
func (n *entryNode) readFlags() uint32 {
	m := n.m
	if m.pending.get(n.path) != nil || time.Since(m.ix.SigChangedAt(n.e)) <= m.attrTTL+sizeSettle {
		return fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH
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
