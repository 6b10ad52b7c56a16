package fs

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/index"
)

// pendingWrites are the files open for writing, by path: stat and lookup
// see a created file before it lands, and its size while it is written.
// A reserved write (entryNode.reserveWrite) is held here too, but it is
// its thread's alone until its open claims it: every getter but
// reservation passes it over, so the name stands for what it stood for to
// everyone else (the open that reserved it has not returned). So is a
// write that landed when a later one has landed since (superseded): the
// name stands for the later bytes, though the kernel has not released the
// earlier write yet.
type pendingWrites struct {
	mu      sync.Mutex                // protects the following; a leaf: handles' sizes are read atomically under it
	m       map[string][]*writeHandle // guarded by mu
	version atomic.Uint64             // atomic: bumped by every add and remove (see listVersion)
}

func (p *pendingWrites) init() { p.m = make(map[string][]*writeHandle) }

func (p *pendingWrites) add(path string, h *writeHandle) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[path] = append(p.m[path], h)
	p.version.Add(1)
}

func (p *pendingWrites) remove(path string, h *writeHandle) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := slices.DeleteFunc(p.m[path], func(x *writeHandle) bool { return x == h })
	if len(hs) == 0 {
		delete(p.m, path)
	} else {
		p.m[path] = hs
	}
	p.version.Add(1)
}

// fresh returns the most recent handle writing path that has not read,
// written or truncated anything yet: the one an open with O_TRUNC just made
// (its bytes not loaded, or loaded only by its reservation: untouched).
func (p *pendingWrites) fresh(path string) *writeHandle {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.m[path]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].reserved.Load() {
			continue
		}
		if hs[i].size.Load() < 0 || hs[i].untouched.Load() {
			return hs[i]
		}
	}
	return nil
}

// get returns the most recent handle writing path whose size is known (an
// existing signature opened without O_TRUNC and not written yet has none).
// snapshot is a copy of the bytes written so far, when the handle holds
// the file's whole content (a file it created or truncated); ok is false
// while an existing signature's bytes are not loaded yet.
func (h *writeHandle) snapshot() (data []byte, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.loaded {
		return nil, false
	}
	return slices.Clone(h.buf), true
}

func (p *pendingWrites) get(path string) *writeHandle {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.m[path]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].size.Load() >= 0 && !passed(hs[i]) {
			return hs[i]
		}
	}
	return nil
}

// writing returns the handle whose bytes stat, open and the versions of
// an existing entry follow while it is written: get's, but for a handle
// whose write was refused. That one will write nothing, and its handle
// stays until the kernel's RELEASE, which comes after close returns (later
// under load, never while a dup'ed descriptor is open): meanwhile the entry
// is what the index says — its size, and a new version when another
// writer replaces it — not the refused bytes.
func (p *pendingWrites) writing(path string) *writeHandle {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.m[path]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].size.Load() >= 0 && !hs[i].dead.Load() && !passed(hs[i]) {
			return hs[i]
		}
	}
	return nil
}

// supersede marks every other write of path that landed and wrote
// nothing since (settled) as superseded: h has just landed after them.
func (p *pendingWrites) supersede(path string, h *writeHandle) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.m[path] {
		if x != h && x.settled.Load() {
			x.superseded.Store(true)
		}
	}
}

// passed reports whether the getters pass h over: a reservation, which
// is its thread's alone, or a write superseded by a later one that landed.
func passed(h *writeHandle) bool {
	return h.reserved.Load() || h.settled.Load() && h.superseded.Load()
}

// reservation returns the reserved write (entryNode.reserveWrite) of
// thread tid that waits for its claim on path, or nil.
func (p *pendingWrites) reservation(path string, tid uint32) *writeHandle {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.m[path] {
		if h.resTid == tid && h.reserved.Load() {
			return h
		}
	}
	return nil
}

// look returns, under one holding of the lock, writing's handle for path
// and whether get's would be one (a write is open on it, refused or not).
func (p *pendingWrites) look(path string) (writing *writeHandle, open bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.m[path]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].size.Load() >= 0 && !passed(hs[i]) {
			open = true
			if writing == nil && !hs[i].dead.Load() {
				writing = hs[i]
			}
		}
	}
	return writing, open
}

// live reports whether h may still write (no write of it was refused).
func live(h *writeHandle) bool { return !h.dead.Load() }

// children lists the names being created in dir (by a handle whose write
// was not refused).
func (p *pendingWrites) children(dir string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var names []string
	for path, hs := range p.m {
		if parent, name := index.SplitPath(path); len(hs) > 0 && hs[0].created && parent == dir && slices.ContainsFunc(hs, live) {
			names = append(names, name)
		}
	}
	return names
}
