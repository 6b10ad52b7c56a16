package index

import (
	"context"
)

// maxWatchNotes bounds the keys waiting to be told to a watcher; past it
// the watcher is told that every signature may have changed.
const maxWatchNotes = 1 << 12

// sigWatch hands signature changes to a watcher (WatchSigChanges), from a
// goroutine of its own: a change is noted under sigCache.mu, which the
// watcher must not be called under (the mount tells the kernel, which may
// wait for a request that waits for that lock). Guarded by sigCache.mu.
type sigWatch struct {
	fn    func(key string) // nil: nobody watches
	keys  []string         // changed since the watcher was last called
	all   bool             // every signature changed since
	ready chan struct{}    // signalled (capacity 1) when keys or all is set
}

func (w *sigWatch) noteLocked(key string) {
	if w.fn == nil {
		return
	}
	if key == "" || len(w.keys) >= maxWatchNotes {
		w.all, w.keys = true, w.keys[:0]
	} else if !w.all && (len(w.keys) == 0 || w.keys[len(w.keys)-1] != key) {
		w.keys = append(w.keys, key)
	}
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// WatchSigChanges calls fn with the key of every signature whose version
// (SigVersion) moves from now on, or with "" when every signature's may
// have. fn runs in one goroutine of its own, some time after the change,
// never two at once, until the index closes; changes noted while it runs
// come in the next calls. Only the last watcher set is called.
func (ix *Index) WatchSigChanges(fn func(key string)) {
	c := ix.sigs
	c.mu.Lock()
	start := c.watch.fn == nil
	c.watch.fn = fn
	if c.watch.ready == nil {
		c.watch.ready = make(chan struct{}, 1)
	}
	ready := c.watch.ready
	c.mu.Unlock()
	if start {
		go c.watchLoop(ix.ra.ctx, ready)
	}
}

// watchLoop calls the watcher with what changed until done ends.
func (c *sigCache) watchLoop(done context.Context, ready chan struct{}) {
	for {
		select {
		case <-done.Done():
			return
		case <-ready:
		}
		c.mu.Lock()
		fn, keys, all := c.watch.fn, c.watch.keys, c.watch.all
		c.watch.keys, c.watch.all = nil, false
		c.mu.Unlock()
		if all {
			fn("")
			continue
		}
		for _, k := range keys {
			fn(k)
		}
	}
}
