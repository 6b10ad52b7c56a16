package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/store/format"
)

// An open .oxy/lists/<name> reads one text of the list shared by every
// handle open on it (oxyLists): the list is read once (one GET, at most
// format.MaxEntryListBytes) however many opens there are while one is open
// or within listHold of the last close,
// and its text is decoded as it is read (format.EntryListText), never held
// whole: a bounded window of decoded blocks (8 × 1 MiB, from one pool of
// 64 MiB for the process) and a checkpoint per block the stream passed, so
// a read at any offset (less scrolling up) decodes one block, not the text
// from its start. A handle reads exactly the size a stat reported. The
// open lists together hold at most openListBudget beside their windows.

// openListBudget caps what the texts of all open lists of a mount hold
// together beside their windows: each its compressed list and its
// checkpoints (format.ListTextHeld). It fits one list at its cap, so any
// one list opens; an open that would pass it is refused (EAGAIN) before
// its GET, and logged.
var openListBudget = format.ListTextHeld(format.MaxEntryListBytes)

// errListBudget is an open of a list refused by openListBudget.
var errListBudget = errors.New("the open .oxy/lists files hold their budget")

// oxyLists is the open lists' texts, by list name.
type oxyLists struct {
	mu   sync.Mutex             // protects the following; a list is read outside it (drop closes a text under it)
	m    map[string]*sharedList // guarded by mu
	held int64                  // bytes reserved by the texts in m (openListBudget); guarded by mu
}

// listHold is how long a list's text is kept after its last close, for
// the open that follows (less after wc, a second grep): within it, and
// within the budget, an open sends no GET.
const listHold = oxyHold

// sharedList is the text of one list and the handles open on it. With no
// handle open it is idle: kept listHold, or until an open of another list
// needs its share of the budget.
type sharedList struct {
	name  string                // read-only
	ready chan struct{}         // closed once lt, size and err are set
	lt    *format.EntryListText // set by the first opener before ready is closed; dropped (nil) under oxyLists.mu once no handle holds it
	size  int64                 // the text's length; as lt
	err   error                 // as lt
	open  int                   // handles holding it (guarded by oxyLists.mu)
	hold  int64                 // bytes reserved in oxyLists.held (guarded by oxyLists.mu)
	idle  int                   // times it became idle (guarded by oxyLists.mu)
}

// reserve moves s's reservation to n bytes, if the budget has room, once
// idle texts are dropped if it has not.
func (l *oxyLists) reserve(s *sharedList, n int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.m {
		if l.held+n-s.hold <= openListBudget {
			break
		}
		if o != s && o.open == 0 {
			l.drop(o)
		}
	}
	if n > s.hold && l.held+n-s.hold > openListBudget {
		return false
	}
	l.held += n - s.hold
	s.hold = n
	return true
}

// acquire returns the shared text of name, read by read if no handle holds
// it (the callers of one read wait for it). stored is the list's
// compressed size as listed: the first opener reserves what its text will
// hold before reading it, and again from the size read (a listing may
// lie). Each acquire that returns nil error is matched by one release.
func (l *oxyLists) acquire(ctx context.Context, name string, stored int64, read func() (*format.EntryListText, int64, int64, error)) (*sharedList, error) {
	l.mu.Lock()
	s := l.m[name]
	first := s == nil
	if first {
		s = &sharedList{name: name, ready: make(chan struct{})}
		if l.m == nil {
			l.m = make(map[string]*sharedList)
		}
		l.m[name] = s
	}
	s.open++
	l.mu.Unlock()
	if first {
		if !l.reserve(s, format.ListTextHeld(stored)) {
			s.err = fmt.Errorf("open %s (%d bytes stored): %w", name, stored, errListBudget)
		} else {
			var n int64
			s.lt, s.size, n, s.err = read()
			if s.err == nil && !l.reserve(s, format.ListTextHeld(n)) {
				s.err = fmt.Errorf("open %s (%d bytes read, %d listed): %w", name, n, stored, errListBudget)
			}
		}
		close(s.ready)
	} else {
		select {
		case <-s.ready:
		case <-ctx.Done():
			l.release(name, s)
			return nil, ctx.Err()
		}
	}
	if s.err != nil {
		l.release(name, s)
		return nil, s.err
	}
	return s, nil
}

// release ends one hold of s. After the last one the text is kept
// listHold for the next open (a failed one is dropped at once).
func (l *oxyLists) release(name string, s *sharedList) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.open--; s.open > 0 {
		return
	}
	if s.err != nil || s.lt == nil {
		l.drop(s)
		return
	}
	s.idle++
	idle := s.idle
	time.AfterFunc(listHold, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if s.open == 0 && s.idle == idle { // not opened since
			l.drop(s)
		}
	})
}

// drop forgets an idle text and closes it. l.mu is held.
func (l *oxyLists) drop(s *sharedList) {
	if l.m[s.name] == s {
		delete(l.m, s.name)
	}
	l.held -= s.hold
	s.hold = 0
	if s.lt != nil {
		s.lt.Close()
		s.lt = nil
	}
}

// openList opens .oxy/lists/<name> on the list's shared text.
func (f *oxyFile) openList(ctx context.Context) (gofs.FileHandle, uint32, syscall.Errno) {
	m := f.m
	stored, _ := m.ix.ListStoredSize(f.key)
	s, err := m.lists.acquire(ctx, f.key, stored, func() (*format.EntryListText, int64, int64, error) {
		data, size, err := m.ix.ReadList(bg(ctx), f.key)
		if err != nil {
			return nil, 0, 0, err
		}
		lt, err := format.NewEntryListTextOfSize(data, size)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("decode %s: %w", f.key, err)
		}
		return lt, size, int64(len(data)), nil
	})
	if errors.Is(err, errListBudget) {
		m.logf("oxyfs: open /%s: %v (EAGAIN)", f.path, err)
		return nil, 0, syscall.EAGAIN
	}
	if err != nil {
		return nil, 0, m.errno("read", f.path, err)
	}
	return &listHandle{m: m, path: f.path, key: f.key, s: s}, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH, 0
}

// listHandle is an open .oxy/lists/<name>.
type listHandle struct {
	m    *Server
	path string
	key  string
	s    *sharedList
}

var (
	_ = (gofs.FileReader)((*listHandle)(nil))
	_ = (gofs.FileReleaser)((*listHandle)(nil))
)

func (h *listHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	defer h.m.ops.start(opRead)()
	n, err := h.s.lt.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, h.m.errno("read", h.path, err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *listHandle) Release(ctx context.Context) syscall.Errno {
	defer h.m.ops.start(opRelease)()
	h.m.lists.release(h.key, h.s)
	return 0
}
