package index

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/oxyfs/oxyfs/store"
)

// The live lists of an open are bounded together, not one by one (issue
// 25): a store may hold many lists, each under its own cap, whose sum is
// not.
//
//   - Bytes: each list is decoded as its GET returns, in the order of its
//     name, and its compressed bytes are dropped once decoded. The GETs
//     hold at most listBytesInFlight of compressed bytes at once (a list's
//     bytes are reserved, as the pack listing gave its size, before its GET
//     is sent, and the GET is capped at that size; a list larger than the
//     whole budget, or whose size the listing did not give, takes all of
//     it). The first failure, a GET's or a decode's, stops the rest: no GET starts
//     after it and the open fails or falls back as for that one list.
//   - Keys: one cap, maxLiveKeys (store.MaxEntryListKeys, the cap of one
//     list), covers the keys of all live lists together. Past it the open
//     falls back to prefix listing with a warning that says so, as it does
//     for one list over its own cap (a corrupt list).
//
// A list's body is still read whole by its GET (at most
// store.MaxEntryListBytes): the store has no read that hands a body over
// as it arrives. Streaming it into the decoder needs one (a Get that calls
// back with the body's reader, and retries only before the first byte is
// passed on), and a decoder restartable from the start of the list.
var (
	// listBytesInFlight caps the compressed bytes of live lists an open
	// holds at once (read, not yet decoded).
	listBytesInFlight int64 = store.MaxEntryListsInFlight
	// maxLiveKeys caps the keys of all live lists of an open together.
	maxLiveKeys = store.MaxEntryListKeys
)

// errLiveKeys is an open whose live lists hold more keys together than
// maxLiveKeys.
var errLiveKeys = errors.New("the live lists hold more keys together than the cap of all live lists")

// listResult is one list's GET.
type listResult struct {
	data []byte
	err  error
	hold int64 // bytes reserved in the budget
}

// loadLists reads lists and decodes each into a run of b as its GET
// returns (see the top of this file). keys is how many keys b's set holds
// already (a refresh that adds lists to prev's); the lists' keys count on
// top of it against maxLiveKeys. A list whose GET finds nothing is a
// *listGoneError, returned once every other list was read (the caller
// reads the snapshot again, so each list is read and counted either way);
// the others are then not decoded.
func (ix *Index) loadLists(ctx context.Context, b *builder, lists []store.ListInfo, keys int) ([]*run, error) {
	b.keys, b.maxKeys = keys, maxLiveKeys
	if keys > maxLiveKeys {
		return nil, fmt.Errorf("read entry lists: %w: %d keys held already, the cap is %d", errLiveKeys, keys, maxLiveKeys)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	budget := max(listBytesInFlight, 1)
	sem := semaphore.NewWeighted(budget)
	results := make([]chan listResult, len(lists))
	for i := range results {
		results[i] = make(chan listResult, 1)
	}
	var (
		wg       sync.WaitGroup
		launched int // lists whose GET was started; set before sent is closed
		sent     = make(chan struct{})
		slots    = make(chan struct{}, listFetchParallel)
		failMu   sync.Mutex
		failed   error // the first GET that failed (not gone)
	)
	fail := func(err error) {
		failMu.Lock()
		if failed == nil {
			failed = err
		}
		failMu.Unlock()
		cancel() // the first failure stops the rest
	}
	firstFailure := func() error {
		failMu.Lock()
		defer failMu.Unlock()
		return firstErr(failed, ctx.Err())
	}
	// The producer reserves each list's bytes in name order, so the list
	// the decoder waits for always holds its reservation: no deadlock.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(sent)
		for i, l := range lists {
			// A size the listing did not give reserves the whole budget.
			hold := budget
			if l.Size > 0 {
				hold = min(l.Size, budget)
			}
			if sem.Acquire(ctx, hold) != nil {
				return
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				sem.Release(hold)
				return
			}
			launched++
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				data, err := ix.getList(ctx, l)
				if errors.Is(err, store.ErrNotFound) {
					err = &listGoneError{name: l.Name}
				} else if err != nil {
					fail(fmt.Errorf("read entry list %q: %w", l.Name, err))
				}
				results[i] <- listResult{data: data, err: err, hold: hold}
			}()
		}
	}()
	defer wg.Wait()
	defer cancel()

	runs := make([]*run, 0, len(lists))
	var gone error
	for i, l := range lists {
		var r listResult
		select {
		case r = <-results[i]:
		case <-sent:
			if i >= launched {
				// The producer stopped: ctx ended, or a GET failed.
				return nil, firstErr(firstFailure(), gone)
			}
			r = <-results[i]
		}
		switch {
		case r.err != nil && !isGone(r.err):
			// Its GET or an earlier one failed (and canceled the rest):
			// the first failure is the one to report.
			return nil, firstFailure()
		case r.err != nil:
			gone = firstErr(gone, r.err)
		case gone == nil:
			run, err := b.decodeList(l.Name, r.data)
			if err != nil {
				return nil, err // ctx is canceled on return: the rest stop
			}
			runs = append(runs, run)
		}
		r.data = nil
		sem.Release(r.hold) // decoded (or dropped): the next GET may start
	}
	if gone != nil {
		return nil, gone
	}
	return runs, nil
}

// getList reads a live list (one GET), capped at the size the pack
// listing gave, which its reservation counted: a list whose GET brings
// more is corrupt (store.ErrCorrupt), refused before its body is read.
func (ix *Index) getList(ctx context.Context, l store.ListInfo) ([]byte, error) {
	if l.Size <= 0 {
		return ix.st.Get(ctx, l.Name)
	}
	data, err := ix.st.GetAtMost(ctx, l.Name, l.Size)
	if errors.Is(err, store.ErrTooLarge) {
		// A list's name fixes its bytes: this is not the list listed. It
		// is corrupt, not too large: ErrTooLarge is named, not wrapped.
		return nil, fmt.Errorf("%w: listed at %d bytes, its GET brings more (%v)", store.ErrCorrupt, l.Size, err) //nolint:errorlint // wraps ErrCorrupt alone, on purpose
	}
	return data, err
}

func isGone(err error) bool {
	var g *listGoneError
	return errors.As(err, &g)
}

// firstErr returns the first of errs that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
