package fs

import (
	"context"
	"slices"
	"sync"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// leafState is the state kept for leaf ids (leafids.go) while it matters:
// the entryNode of an id with descriptors open on it (its readers, its
// writes, the reads beside them: entry.go, beside.go, reserve.go), kept
// from the OPEN to the last RELEASE — and past it, until the kernel forgets
// the id (FORGET), when the node keeps what a node made afresh would not
// know: a version other than its id's (adopt, settle), reads beside a
// write once (mixed), a write (entryNode.w). The descriptors' handles
// are numbered here (the bridge numbers its own: a request on a leaf id
// never reaches it).
type leafState struct {
	mu     sync.Mutex              // protects the following; pendingWrites.mu is taken under it (doc.go, "Locks"); the index is asked outside it
	nodes  map[uint64]*leafNode    // leaf id -> its node; guarded by mu
	files  map[uint64]leafOpenFile // handle -> its file; guarded by mu
	nextFh uint64                  // the last handle given; guarded by mu
}

// leafNode is a leaf id's node and the handles open on it.
type leafNode struct {
	n   *entryNode
	fhs []uint64 // handles open on it, in the order they were opened; guarded by leafState.mu
	// opening counts the OPENs under way on it (keep to opened): the node
	// is not dropped meanwhile — a read's open counts itself among the
	// node's readers only once it has the bytes, and a write opened
	// meanwhile must find the same node (openOn). Guarded by leafState.mu.
	opening int
	// forgotten: the kernel's FORGET of the id came while a handle was
	// still open or opening on it (go-fuse runs a RELEASE and the FORGET
	// after it concurrently): the node goes with the last, whatever it
	// holds, unless a LOOKUP gave the id again since. Guarded by
	// leafState.mu.
	forgotten bool
}

// leafOpenFile is an open handle of a leaf id.
type leafOpenFile struct {
	id uint64
	f  gofs.FileHandle
	// busy counts the requests using f (use); its RELEASE waits for
	// them, as the bridge's does.
	busy *sync.WaitGroup
}

func (s *leafState) init() {
	s.nodes = make(map[uint64]*leafNode)
	s.files = make(map[uint64]leafOpenFile)
}

// node is the entryNode of leaf id: the one kept (leafState), else one
// made for the request from what the id names (transient: keep adds it to
// the kept ones). ok is false when the id names no entry (ESTALE).
func (l *leafIDs) node(ctx context.Context, m *Server, id uint64) (n *entryNode, kept bool, ok bool) {
	s := &l.state
	s.mu.Lock()
	if ln := s.nodes[id]; ln != nil {
		s.mu.Unlock()
		return ln.n, true, true
	}
	s.mu.Unlock()
	le, ok := l.entry(ctx, id)
	if !ok {
		return nil, false, false
	}
	n = &entryNode{base: base{m: m}, path: le.path, e: le.e, leafID: id}
	if le.e.Kind == format.KindSig {
		cur := m.ix.SigState(le.e).Version
		if cur&leafVerMask == le.ver {
			n.ver.Store(cur)
		} else {
			// An older version's id: the latest version before cur with
			// the id's bits (any version but cur: the node is stale).
			back := (cur - le.ver) & leafVerMask
			if back > cur {
				n.ver.Store(le.ver)
			} else {
				n.ver.Store(cur - back)
			}
		}
	}
	return n, false, true
}

// keep makes n the kept node of its id (or returns the one kept already)
// for an OPEN, which calls opened when done.
func (l *leafIDs) keep(n *entryNode) *entryNode {
	s := &l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	ln := s.nodes[n.leafID]
	if ln == nil {
		ln = &leafNode{n: n}
		s.nodes[n.leafID] = ln
	}
	ln.opening++
	return ln.n
}

// lookedUp is a LOOKUP's reply of id: its kept node, if any, is the
// kernel's again (not forgotten) and was looked up now (retried).
func (l *leafIDs) lookedUp(id uint64) {
	s := &l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if ln := s.nodes[id]; ln != nil {
		ln.forgotten = false
		ln.n.lookedUp.Store(time.Now().UnixNano())
	}
}

// opened ends an OPEN of id's kept node (keep): f, its handle (nil: none),
// is numbered; the node is dropped if nothing holds it (idle).
func (l *leafIDs) opened(id uint64, f gofs.FileHandle) (fh uint64) {
	s := &l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	ln := s.nodes[id]
	if f != nil {
		s.nextFh++
		fh = s.nextFh
		s.files[fh] = leafOpenFile{id: id, f: f, busy: new(sync.WaitGroup)}
		if ln != nil {
			ln.fhs = append(ln.fhs, fh)
		}
	}
	if ln != nil {
		ln.opening--
		s.dropIdleLocked(id, ln)
	}
	return fh
}

// dropIdleLocked drops ln, id's kept node, once no handle is open or
// opening on it and it holds nothing a node made afresh would not know
// (idleLeaf). s.mu is held.
func (s *leafState) dropIdleLocked(id uint64, ln *leafNode) {
	if len(ln.fhs) == 0 && ln.opening == 0 && (ln.forgotten || ln.n.idleLeaf()) {
		delete(s.nodes, id)
	}
}

// file is the handle fh of id; with fh 0, the first handle open on id's
// node (go-fuse's: the kernel names none in fstat's GETATTR), or nil.
func (l *leafIDs) file(id, fh uint64) gofs.FileHandle {
	s := &l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if fh == 0 {
		if ln := s.nodes[id]; ln != nil && len(ln.fhs) > 0 {
			return s.files[ln.fhs[0]].f
		}
		return nil
	}
	if of, ok := s.files[fh]; ok && of.id == id {
		return of.f
	}
	return nil
}

// use is the handle fh of id for a request on it (READ, WRITE, FLUSH,
// FSYNC), which calls done when it is through; nil if there is none.
func (l *leafIDs) use(id, fh uint64) (f gofs.FileHandle, done func()) {
	s := &l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	of, ok := s.files[fh]
	if !ok || of.id != id {
		return nil, func() {}
	}
	of.busy.Add(1)
	return of.f, of.busy.Done
}

// release forgets the handle fh of id and returns its file once no
// request uses it (use); the node is dropped later if idle (settle).
func (l *leafIDs) release(id, fh uint64) gofs.FileHandle {
	s := &l.state
	s.mu.Lock()
	of, ok := s.files[fh]
	if !ok || of.id != id {
		s.mu.Unlock()
		return nil
	}
	delete(s.files, fh)
	if ln := s.nodes[id]; ln != nil {
		ln.fhs = slices.DeleteFunc(ln.fhs, func(h uint64) bool { return h == fh })
	}
	s.mu.Unlock()
	of.busy.Wait()
	return of.f
}

// settle drops id's kept node if idle (dropIdleLocked).
func (l *leafIDs) settle(id uint64) {
	s := &l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if ln := s.nodes[id]; ln != nil {
		s.dropIdleLocked(id, ln)
	}
}

// forget is the kernel's FORGET of id: its kept node is dropped unless a
// handle is open on it (the kernel forgets no inode a descriptor holds).
func (l *leafIDs) forget(id uint64) {
	s := &l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	ln := s.nodes[id]
	switch {
	case ln == nil:
	case len(ln.fhs) == 0 && ln.opening == 0 && ln.n.readers.Load() == 0 && ln.n.beside.Load() == 0:
		delete(s.nodes, id)
	default:
		ln.forgotten = true
	}
}

// kept is every kept node (Invalidate, sigChanged).
func (l *leafIDs) kept() []*entryNode {
	s := &l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := make([]*entryNode, 0, len(s.nodes))
	for _, ln := range s.nodes {
		ns = append(ns, ln.n)
	}
	return ns
}

// keptLen is how many nodes are kept.
func (l *leafIDs) keptLen() int {
	s := &l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.nodes)
}

// idleLeaf reports whether the kept node of a leaf id holds nothing a node
// made afresh for a request would not know: no reader, no read beside a
// write, never read beside one, no write, and its id's version.
func (n *entryNode) idleLeaf() bool {
	if n.readers.Load() > 0 || n.beside.Load() > 0 || n.mixed.Load() || n.w.Load() != nil {
		return false
	}
	if n.e.Kind != format.KindSig {
		return true
	}
	if n.m.pending.get(n.path) != nil {
		return false // a write of the name may be open on it (openOn)
	}
	return n.ver.Load()&leafVerMask == n.leafID&leafVerMask && n.ident.Load() == nil
}

// notifyContent drops the kernel's attributes (off < 0) or pages and
// attributes of n (go-fuse's NotifyContent; a leaf id's InodeNotify).
func (n *entryNode) notifyContent(off, length int64) {
	if n.leafID != 0 {
		if n.m.server != nil {
			n.m.server.InodeNotify(n.leafID, off, length)
		}
		return
	}
	n.EmbeddedInode().NotifyContent(off, length)
}

// leafKernelEntry is the kernel's name of the entry at key when it may
// hold a leaf id of it (sigChanged, dropName): its directory and name.
func (m *Server) leafKernelEntry(key string) (kernelDir, string, bool) {
	if m.leafs == nil {
		return kernelDir{}, "", false
	}
	dir, at, name, ok := entryDir(key)
	if !ok || !m.leafs.mayHold(key) {
		return kernelDir{}, "", false
	}
	return m.viewDir(context.Background(), dir, at), name, true
}

// dropAllLeaves drops every name of a signature the kernel may hold by a
// leaf id (every signature's version moved: index.ChangeAllSigs): the
// sig/<hh> names under which it was given one (leafIDs.sigHH; all 256 once
// it was given one under each), which the kernel holds no entry file
// without. It looks the directories up again as it uses them (their view
// ids are the same).
func (m *Server) dropAllLeaves() {
	kd := m.viewDir(context.Background(), format.KindSig.String(), index.Path{Level: index.LevelKind, Kind: format.KindSig})
	for b := 0; b < 256; b++ {
		if m.leafs.sigHHHeld(byte(b)) {
			kd.notifyEntry(hexByte(byte(b)))
		}
	}
}
