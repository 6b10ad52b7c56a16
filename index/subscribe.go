package index

import "context"

// One subscription (issue 40): whoever keeps something of the index —
// a mount keeps the kernel's names, attributes and listings — hears from
// Subscribe what changed, and nobody wires a refresh to it by hand.
//
// Changes are noted where they happen (a signature's version moves under
// sigCache.mu; a refresh's publish under loadMu) and handed over by one
// goroutine of the index's own, never under a lock: a mount tells the
// kernel, which may wait for a request that waits for one of them. Notes
// are bounded: past maxWatchNotes keys waiting, they collapse into
// ChangeAllSigs.

// maxWatchNotes bounds the keys waiting to be told to the subscribers;
// past it they are told that every signature may have changed.
const maxWatchNotes = 1 << 12

// ChangeKind says what a Change tells.
type ChangeKind uint8

const (
	// ChangeSig says the signature Change.Key changed as the index knows
	// it: its version (SigVersion) moved (a refresh showed it replaced,
	// this handle wrote it, a read found other bytes), or its next read is
	// to compare its bytes (SigRecheck: a forget record named its object;
	// the version moves then only if they differ).
	ChangeSig ChangeKind = iota + 1
	// ChangeAllSigs says every signature's version may have moved (a refresh
	// past the trust window, a directory's refresh, the cache starting
	// over, or more changes than are kept one by one).
	ChangeAllSigs
	// ChangePublished says a Load or a Refresh succeeded: lookups now see the
	// view it left (the same one when nothing changed; Generation says
	// whether the tree did).
	ChangePublished
)

// Change is one thing a subscriber hears.
type Change struct {
	Kind ChangeKind
	Key  string // ChangeSig: the signature's key (its path in the tree)
	// Prev is, for a ChangePublished, the view before the publishes it
	// tells (zero when there was none: a Load): with the current view
	// (Mark), what changed (ViewMark.Keys, DiffKeys). The index keeps it
	// only until the change is told, so a subscriber that needs no
	// comparison holds no older view.
	Prev ViewMark
}

// Subscribe calls fn with every change from now on, until the index
// closes: the signatures whose version moves (or that are to be read
// again) and each view published.
// Every subscriber is called from one goroutine of the index's own, in
// the order subscribed, never two calls at once and never under a lock of
// the index, some time after the change; changes noted while it runs come
// in the next calls. Within one hand-over the signature changes come
// before the ChangePublished, so a refresh's own moves are told before
// its publish. Consecutive publishes may be told as one.
//
// A Refresh returns only once every subscriber has returned from the
// ChangePublished of its view (or its context is done, or the index
// closed): whoever refreshes (oxyfs's refresh loop, a test) finds what
// the subscribers keep already brought up to date. So fn must not call
// Refresh, nor wait for anything that waits for a Refresh to end. Load
// does not wait (a lookup that loads may be a request a subscriber's
// kernel notice waits for).
func (ix *Index) Subscribe(fn func(Change)) {
	c := ix.sigs
	c.mu.Lock()
	start := c.watch.ready == nil
	if start {
		c.watch.ready = make(chan struct{}, 1)
		c.watch.told = make(chan struct{})
	}
	c.watch.fns = append(c.watch.fns, fn)
	ready := c.watch.ready
	c.mu.Unlock()
	if start {
		go c.watchLoop(ix.ra.ctx, ready)
	}
}

// sigWatch is what waits to be told to the subscribers (Subscribe).
// Guarded by sigCache.mu.
type sigWatch struct {
	fns       []func(Change) // the subscribers; none: nothing is noted
	keys      []string       // signatures changed since the subscribers were last called
	all       bool           // every signature changed since
	published uint64         // publishes noted (a count)
	prev      *view          // the view before the first publish not yet handed over; nil: none
	told      chan struct{}  // closed, and replaced, each time publishes are told
	toldUpTo  uint64         // publishes told so far
	handed    uint64         // publishes handed over to be told (prev is of those after)
	ready     chan struct{}  // signalled (capacity 1) when something is noted
}

// noteLocked notes that signature key's version moved ("": every
// signature's may have).
func (w *sigWatch) noteLocked(key string) {
	if len(w.fns) == 0 {
		return
	}
	if key == "" || len(w.keys) >= maxWatchNotes {
		w.all, w.keys = true, w.keys[:0]
	} else if !w.all && (len(w.keys) == 0 || w.keys[len(w.keys)-1] != key) {
		w.keys = append(w.keys, key)
	}
	w.signal()
}

func (w *sigWatch) signal() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// notePublished notes that a view was published over prev, and returns
// the number a Refresh waits to be told (waitTold); 0: nobody subscribes.
func (c *sigCache) notePublished(prev *view) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &c.watch
	if len(w.fns) == 0 {
		return 0
	}
	if w.published == w.handed {
		w.prev = prev // the first publish since the last hand-over
	}
	w.published++
	w.signal()
	return w.published
}

// waitTold waits until the subscribers have been told publish n (0:
// nobody subscribes), ctx is done or done (the index's) ends.
func (c *sigCache) waitTold(ctx, done context.Context, n uint64) {
	for n > 0 {
		c.mu.Lock()
		told, ch := c.watch.toldUpTo, c.watch.told
		c.mu.Unlock()
		if told >= n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-done.Done():
			return
		}
	}
}

// watchLoop tells the subscribers what changed until done ends.
func (c *sigCache) watchLoop(done context.Context, ready chan struct{}) {
	for {
		select {
		case <-done.Done():
			return
		case <-ready:
		}
		c.mu.Lock()
		w := &c.watch
		fns, keys, all, published, prev := w.fns, w.keys, w.all, w.published, w.prev
		w.keys, w.all = nil, false
		if published > w.handed {
			w.handed, w.prev = published, nil
		}
		c.mu.Unlock()
		tell := func(ch Change) {
			for _, fn := range fns {
				fn(ch)
			}
		}
		if all {
			tell(Change{Kind: ChangeAllSigs})
		} else {
			for _, k := range keys {
				tell(Change{Kind: ChangeSig, Key: k})
			}
		}
		c.mu.Lock()
		up := published > w.toldUpTo
		c.mu.Unlock()
		if !up {
			continue
		}
		tell(Change{Kind: ChangePublished, Prev: ViewMark{prev}})
		c.mu.Lock()
		w.toldUpTo = published
		close(w.told)
		w.told = make(chan struct{})
		c.mu.Unlock()
	}
}
