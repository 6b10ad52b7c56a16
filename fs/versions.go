package fs

import (
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// Versions of a signature.
//
// Each version of a signature's bytes (index.SigVersion) is a node of its
// own: its inode generation is the version, so go-fuse gives it a node ID of
// its own, as a local filesystem gives a new inode to a file renamed over
// another. A descriptor held open keeps its node, its handle's bytes and
// its size (fstat answers from the handle): it reads the version it opened,
// whole, however the signature changes. A node whose version is no longer
// the signature's answers a stat or an open by name with ESTALE, and the
// kernel looks the name up again (LOOKUP_REVAL), which gives the new
// version's node — unless the version moved to the same bytes (size and
// digest, index.SigState.ID), which the node then takes as its own at an
// open (sameVersion). Each change the index sees (a refresh, an own write, a
// read that found other bytes) is pushed to the kernel as it happens
// (index.Subscribe → indexChanged → NotifyEntry of the name), so a stat
// that the kernel would answer from its cache asks again.

// stale reports whether n is a signature node of a version that is no
// longer the signature's (and no write of it is in progress, whose node
// stays until close; a refused one does not count: pendingWrites.writing).
// The subscription asks it (sigChanged); a request decides from its look
// (staleAt, staleNow).
func (n *entryNode) stale() bool {
	return n.e.Kind == format.KindSig && n.staleAt(n.look())
}

// staleAt is stale as of q, the look the request took once. A node of a
// write's bytes (entryNode.w) is stale once that write is no longer the
// one in progress on the name (landed and released, refused, or ended
// with nothing written): the name is then a version again.
func (n *entryNode) staleAt(q look) bool {
	if n.e.Kind != format.KindSig {
		return false
	}
	if w := n.w.Load(); w != nil {
		// Stale unless its write is the one in progress — or the write
		// in progress was opened on this node after its own landed
		// (openWrite: in place, as no descriptor held it), which the
		// kernel sizes by that write (its ftruncate was ESTALE).
		return q.w != w && (q.w == nil || !q.w.openOn(n))
	}
	return q.w == nil && n.ver.Load() != q.st.Version
}

// staleNow is staleAt, but a node whose version moved to bytes the index
// knows to be the node's own (q.st.ID, no request) takes that version
// first: a stat, like an open (sameVersion), then needs no second lookup
// for a move that changed no byte. The version and the identity are of
// one moment (one index.SigState).
func (n *entryNode) staleNow(q look) bool {
	if !n.staleAt(q) {
		return false
	}
	own := n.ident.Load()
	if own == nil || !q.st.IDKnown || q.st.ID != *own {
		return true
	}
	if n.beside.Load() > 0 {
		// Reads opened beside a write of ours hold the node and read
		// that write's bytes, not the node's own: the node stays stale,
		// and their fstat answers what they read (Getattr).
		return true
	}
	n.takeVersion(q.st.Version)
	return n.staleAt(q)
}

// takeVersion makes v the node's version unless it has a later one.
func (n *entryNode) takeVersion(v uint64) {
	for old := n.ver.Load(); old < v && !n.ver.CompareAndSwap(old, v); old = n.ver.Load() {
	}
}

// sameVersion reports whether sh, just opened, is the node's version: the
// one it was made for, or a later one whose bytes are the same (size and
// digest: index.SigID), which the node then takes as its own. A version
// that moves without its bytes changing — a refresh that saw the journal
// line of this mount's own write, a read that found the bytes it had —
// then sends no open to look the name up again, which the kernel does only
// once (the "double move" of docs/reliability.md).
func (n *entryNode) sameVersion(sh *index.SigHandle) bool {
	v := sh.Version()
	if v == n.ver.Load() {
		return true
	}
	if own := n.ident.Load(); own == nil || sh.ID() != *own {
		return false
	}
	n.takeVersion(v)
	return true
}

// indexChanged is the mount's subscription to its index (index.Subscribe,
// registered by Mount): a signature whose version moved has its name
// dropped (sigChanged), and a view published has what the kernel caches of
// what it changed dropped (Invalidate). The index calls it from a
// goroutine of its own, never in a FUSE request, after the view is
// published, and Refresh returns only once it has returned: a refresh that
// ended (oxyfs's "refreshed" log line) is one the kernel was told of.
// While an unmount is under way or done it tells the kernel nothing.
func (m *Server) indexChanged(c index.Change) {
	switch c.Kind {
	case index.ChangeSig:
		m.sigChanged(c.Key)
	case index.ChangeAllSigs:
		m.sigChanged("")
	case index.ChangePublished:
		if !m.quiet.Load() {
			m.invalidate(c.Prev)
		}
	}
}

// sigChanged drops the kernel's name of a
// signature whose version moved (every such name for ""), so that the next
// use of the name looks it up and gets the new version's node. It runs in
// the index's watcher goroutine, never in a FUSE request (a notice waits
// for the directory's lock, which a request in it may hold).
func (m *Server) sigChanged(key string) {
	if m.quiet.Load() {
		return
	}
	if key == "" {
		m.dropStaleNames(m.root.EmbeddedInode())
		if m.views != nil {
			m.dropStaleLeaves()
		}
		if m.leafs != nil {
			m.dropAllLeaves()
		}
		return
	}
	dir, name, n := m.kernelEntry(key)
	if n != nil && (n.stale() || m.ix.SigRecheck(n.e)) {
		dir.notifyEntry(name)
	}
	if dir, name, ok := m.leafKernelEntry(key); ok && (n == nil || !n.stale()) {
		// The kernel may hold a leaf id of the name (leafids.go), whose
		// version the mount does not know: the name is dropped (once).
		dir.notifyEntry(name)
	}
}

// dropName drops the kernel's name of the entry at key, whatever node it
// holds for it. Not from inside a FUSE request (see sigChanged).
func (m *Server) dropName(key string) {
	if m.quiet.Load() {
		return
	}
	if dir, name, n := m.kernelEntry(key); n != nil {
		dir.notifyEntry(name)
	} else if dir, name, ok := m.leafKernelEntry(key); ok {
		dir.notifyEntry(name)
	}
}

// kernelEntry is the node the kernel holds for the entry at key, with its
// directory and name; nil if it holds none.
func (m *Server) kernelEntry(key string) (kd kernelDir, name string, n *entryNode) {
	e, err := index.ParseEntryPath(key) // an entry's key is its path
	if err != nil || len(e.Object) < 2 {
		return kernelDir{}, "", nil // not an entry's key: no node of it
	}
	if m.views != nil {
		return m.leafEntry(key)
	}
	dir := m.root.EmbeddedInode()
	for _, name := range [...]string{e.Kind.String(), e.Object[:2], e.Object[2:]} {
		if dir = dir.GetChild(name); dir == nil {
			return kernelDir{}, "", nil // the kernel holds no name of it
		}
	}
	if kid := dir.GetChild(e.Value); kid != nil {
		n, _ = kid.Operations().(*entryNode)
	}
	return kernelDir{in: dir}, e.Value, n
}

// dropStaleNames drops the names of every stale signature node the kernel
// holds under in.
func (m *Server) dropStaleNames(in *gofs.Inode) {
	for name, kid := range in.Children() {
		switch op := kid.Operations().(type) {
		case *dirNode:
			if op.level != index.LevelSigners {
				m.dropStaleNames(kid)
			}
		case *entryNode:
			if op.stale() {
				in.NotifyEntry(name)
			}
		}
	}
}

// settle makes sh's version the own of n, a node of a write that ended
// (entryNode.w), when no read beside the write and no reader is open on
// it (waiting up to adoptWait, as adopt), and drops the kernel's pages
// and attributes of the node, which were the write's; it reports whether
// it did. n.openMu is held.
func (n *entryNode) settle(sh *index.SigHandle) bool {
	for deadline := time.Now().Add(adoptWait); n.beside.Load() > 0 || n.readers.Load() > 0; {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	id := sh.ID()
	n.ident.Store(&id)
	n.ver.Store(sh.Version())
	n.w.Store(nil)
	n.notifyContent(0, 0)
	return true
}

// adoptWait is how long an adoption waits for the descriptors that hold
// the node's version to be released: most are about to be (a RELEASE lags
// its close; a reader that read to the end), and no new one counts itself
// meanwhile (n.openMu is held).
const adoptWait = 100 * time.Millisecond

// adopt makes sh's version, newer than the node's, the node's own when no
// descriptor holds the node's version (waiting up to adoptWait for those
// that do to be released), and drops the kernel's pages and attributes of
// the node; it reports whether it did. An open in the retry
// window (entryNode.retried) then reads the signature's current bytes as
// the node's version, like any other open of the node. (It opened them
// as bytes of no version of the node before: with direct I/O, but a
// mapping's pages are the node's, and fstat's GETATTR is answered from
// the node's first open file — a mapping sized by another descriptor's
// fstat showed 16 bytes of one version and zeros up to another's 45: the
// byte simulation's B1 conc-mount-mmap-shared.) n.openMu is held.
func (n *entryNode) adopt(sh *index.SigHandle) bool {
	v := sh.Version()
	if v <= n.ver.Load() {
		return false
	}
	for deadline := time.Now().Add(adoptWait); n.readers.Load() > 0; {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	id := sh.ID()
	n.ident.Store(&id)
	n.ver.Store(v)
	n.notifyContent(0, 0)
	return true
}
