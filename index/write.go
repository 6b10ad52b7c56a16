package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/internal/lib/par"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
)

// putParallel bounds the per-object keys one PutBatch writes at once.
const putParallel = 16

// errNotSent is the error of a write PutBatch did not send, when neither
// par.ForEach nor the context says why (never expected).
var errNotSent = errors.New("the write was not sent")

// Write is one entry of a PutBatch: signatures carry their bytes, every
// other kind has empty Data.
type Write struct {
	Entry format.Entry
	Data  []byte
}

// checkWrite validates a write before anything is sent.
func checkWrite(w Write) error {
	if err := w.Entry.Validate(); err != nil {
		return err
	}
	switch {
	case w.Entry.Kind == format.KindSig && len(w.Data) == 0:
		return fmt.Errorf("%w: a signature needs bytes", format.ErrBadKey)
	case w.Entry.Kind != format.KindSig && len(w.Data) != 0:
		return fmt.Errorf("%w: a %s entry holds its value in its key and must be empty (%d bytes given)", format.ErrBadKey, w.Entry.Kind, len(w.Data))
	}
	return nil
}

// Put writes one entry: its per-object key first (spec §13.7), then, on a
// bucket, its journal line through the group commit. It returns once both
// landed; the entry is then visible to this handle at once. Putting a
// signer's signature again replaces it.
func (ix *Index) Put(ctx context.Context, e format.Entry, data []byte) error {
	return ix.PutBatch(ctx, []Write{{Entry: e, Data: data}})
}

// PutBatch writes many entries: every per-object key (in parallel), then one
// journal update for all of them (a write batch, §13.4). Nothing is written
// if any entry is invalid. If some keys cannot be written, the others are
// still journaled and the error names the failures.
func (ix *Index) PutBatch(ctx context.Context, ws []Write) error {
	for _, w := range ws {
		if err := checkWrite(w); err != nil {
			return fmt.Errorf("put %q: %w", termsafe.Value(w.Entry.Key()), err)
		}
	}
	if ix.commit.isClosed() {
		return fmt.Errorf("put: %w", ErrClosed)
	}
	if len(ws) == 0 {
		return nil
	}
	written := make([]bool, len(ws))
	errs := make([]error, len(ws))
	// Every key is tried whatever befalls the others (the ones that land
	// are journaled): each error is kept in errs, never returned to par.
	perr := par.ForEach(ctx, len(ws), putParallel, func(ctx context.Context, i int) error {
		w := ws[i]
		key := w.Entry.Key()
		// The PUT and the cache's copy in the order the store took them:
		// one write of a key at a time through this handle (putLocks).
		unlock := ix.putLocks.Lock(key)
		defer unlock()
		if err := ix.st.Put(ctx, key, w.Data); err != nil {
			errs[i] = err
			return nil
		}
		if w.Entry.Kind == format.KindSig {
			ix.sigs.put(key, w.Data, ix.sigTime())
		}
		written[i] = true
		return nil
	})
	var keys []string
	var landed []format.Entry
	for i, w := range ws {
		if !written[i] && errs[i] == nil {
			// Not tried: ForEach stopped before it, and says why (ctx's
			// error); every key not written has its error.
			errs[i] = fmt.Errorf("put %q: not sent: %w", termsafe.Value(w.Entry.Key()), cmp.Or(perr, ctx.Err(), errNotSent))
		}
		if written[i] {
			keys = append(keys, w.Entry.Key())
			landed = append(landed, w.Entry)
		}
	}
	var failed error
	if n := len(ws) - len(keys); n > 0 {
		failed = fmt.Errorf("put: %d of %d keys could not be written: %w", n, len(ws), errors.Join(errs...))
	}
	if len(keys) > 0 && ix.st.Layout() == store.LayoutBucket {
		if err := ix.commit.add(ctx, keys); err != nil {
			what := fmt.Sprintf("%q", termsafe.Value(keys[0]))
			if len(keys) > 1 {
				what = fmt.Sprintf("%d entries (first %q)", len(keys), termsafe.Value(keys[0]))
			}
			return errors.Join(failed, fmt.Errorf("put %s: the per-object keys were written but their journal lines were not, so a folded reader does not see them until the next complete fold; put them again (oxyfs put --force): %w", what, err))
		}
	}
	if len(landed) > 0 {
		ix.own.add(landed)
		ix.gen.Add(1)
	}
	return failed
}

// committer is the group commit: writers enqueue journal keys and wait; one
// goroutine takes everything waiting and appends it in one journal update
// (journal.Append), then wakes every waiter of that batch with its result.
type committer struct {
	ix *Index // read-only after init

	mu      sync.Mutex    // protects the following; a leaf: the journal update runs outside it
	queue   []*pending    // guarded by mu
	closed  bool          // guarded by mu
	running bool          // guarded by mu
	wake    chan struct{} // read-only after init
	done    chan struct{} // closed when the running committer exits; guarded by mu

	appends atomic.Int64 // atomic: journal updates made
	keys    atomic.Int64 // atomic: keys they carried
	tries   atomic.Int64 // atomic: compare-and-swap attempts
}

type pending struct {
	keys []string
	err  error
	done chan struct{}
}

func (c *committer) init(ix *Index) {
	c.ix = ix
	c.wake = make(chan struct{}, 1)
}

func (c *committer) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// add enqueues keys and waits for the journal update that carries them.
func (c *committer) add(ctx context.Context, keys []string) error {
	p := &pending{keys: keys, done: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.queue = append(c.queue, p)
	if !c.running {
		c.running = true
		c.done = make(chan struct{})
		go c.run()
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("waiting for the journal update (it may still land): %w", ctx.Err())
	}
}

// run appends batches until the queue is empty and the committer is closed.
// The update runs on a context of its own: a waiter that gives up does not
// cancel the others' update.
func (c *committer) run() {
	defer close(c.done)
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		if len(batch) == 0 && c.closed {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if len(batch) == 0 {
			<-c.wake
			continue
		}
		seen := make(map[string]bool)
		var keys []string
		for _, p := range batch {
			for _, k := range p.keys {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
		begun := c.ix.chain.now()
		res, err := c.ix.appendFn(context.Background(), c.ix.st, keys)
		if errors.Is(err, journal.ErrPartialFold) {
			// The lines landed; only the partial fold after them failed,
			// and the next update past the threshold tries it again.
			c.ix.warn(fmt.Sprintf("journal lines landed, but the partial fold after them failed: %v", err))
			err = nil
		}
		if err != nil {
			err = fmt.Errorf("journal append of %d keys: %w", len(keys), err)
		} else {
			c.ix.chain.add(res.Before, res.After, keys, begun)
			c.appends.Add(1)
			c.keys.Add(int64(len(keys)))
			c.tries.Add(int64(res.Tries))
		}
		for _, p := range batch {
			p.err = err
			close(p.done)
		}
	}
}

// close waits for every pending update and stops the committer.
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	running, done := c.running, c.done
	c.mu.Unlock()
	if !running {
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-done
}
