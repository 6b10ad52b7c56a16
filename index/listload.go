package index

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
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
//   - Keys: one cap, maxLiveKeys (format.MaxEntryListKeys, the cap of one
//     list), covers the keys of all live lists together. Past it the open
//     falls back to prefix listing with a warning that says so, as it does
//     for one list over its own cap (a corrupt list).
//
// Each list's GET is streamed (store.GetStream): its body is read as it
// arrives, and the list whose turn it is to be decoded is decoded from it
// at once, while the rest of it is still on the wire; a list whose turn has
// not come is held (within its reservation) until it has. A body that
// fails midway is read again from its start, and the list decoded again
// into a fresh run.
var (
	// listBytesInFlight caps the compressed bytes of live lists an open
	// holds at once (read, not yet decoded).
	listBytesInFlight int64 = format.MaxEntryListsInFlight
	// maxLiveKeys caps the keys of all live lists of an open together.
	maxLiveKeys = format.MaxEntryListKeys
)

// errLiveKeys is an open whose live lists hold more keys together than
// maxLiveKeys.
var errLiveKeys = errors.New("the live lists hold more keys together than the cap of all live lists")

// listResult is how one list's GET ended (its decode's error included).
type listResult struct {
	err  error
	hold int64 // bytes reserved in the budget
}

// listBody is one attempt's body of a list, handed to the decode loop,
// which answers on done with the decode's error.
type listBody struct {
	body io.Reader
	done chan error
}

// loadLists reads lists and decodes each into a run of b as its GET
// streams it (see the top of this file). keys is how many keys b's set
// holds already (a refresh that adds lists to prev's); the lists' keys
// count on top of it against maxLiveKeys. A list whose GET finds nothing is
// a *listGoneError, returned once every other list was read (the caller
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
	bodies := make([]chan listBody, len(lists))
	for i := range results {
		results[i] = make(chan listResult, 1)
		bodies[i] = make(chan listBody)
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
				err := ix.getList(ctx, l, func(body io.Reader) error {
					lb := listBody{body: body, done: make(chan error, 1)}
					select {
					case bodies[i] <- lb:
					case <-ctx.Done():
						return ctx.Err()
					}
					return <-lb.done // the decode loop answers every body it takes
				})
				if errors.Is(err, store.ErrNotFound) {
					err = &listGoneError{name: l.Name}
				} else if err != nil {
					fail(fmt.Errorf("read entry list %q: %w", l.Name, err))
				}
				results[i] <- listResult{err: err, hold: hold}
			}()
		}
	}()
	defer wg.Wait()
	defer cancel()

	runs := make([]*run, 0, len(lists))
	var gone error
	for i, l := range lists {
		var (
			r      listResult
			run    *run
			decErr error // of the last body decoded
			src    uint8
			ended  bool
		)
		keys0, wait := b.keys, sent
		for !ended {
			select {
			case lb := <-bodies[i]:
				if gone != nil {
					lb.done <- nil // not decoded: a list before it is gone
					continue
				}
				if run == nil && decErr == nil {
					src = b.addSource("list " + l.Name)
				}
				b.keys = keys0 // a body read again starts the list over
				run, decErr = b.decodeList(src, l.Name, lb.body)
				lb.done <- decErr
			case r = <-results[i]:
				ended = true
			case <-wait:
				if i >= launched {
					// The producer stopped: ctx ended, or a GET failed.
					return nil, firstErr(firstFailure(), gone)
				}
				wait = nil // this one's GET was launched: wait for its end
			}
		}
		switch {
		case r.err != nil && decErr != nil && errors.Is(r.err, decErr):
			return nil, decErr // the list does not decode (ctx is canceled on return: the rest stop)
		case r.err != nil && !isGone(r.err):
			// Its GET or an earlier one failed (and canceled the rest):
			// the first failure is the one to report.
			return nil, firstFailure()
		case r.err != nil:
			gone = firstErr(gone, r.err)
		case gone == nil:
			runs = append(runs, run)
		}
		sem.Release(r.hold) // decoded (or dropped): the next GET may start
	}
	if gone != nil {
		return nil, gone
	}
	return runs, nil
}

// getList streams a live list (one GET) into fn, capped at the size the
// pack listing gave, which its reservation counted: a list whose GET
// brings more is corrupt (format.ErrCorrupt).
func (ix *Index) getList(ctx context.Context, l store.ListInfo, fn func(io.Reader) error) error {
	limit := int64(format.MaxEntryListBytes)
	if l.Size > 0 {
		limit = l.Size
	}
	err := ix.st.GetStream(ctx, l.Name, limit, fn)
	if l.Size > 0 && errors.Is(err, store.ErrTooLarge) {
		// A list's name fixes its bytes: this is not the list listed.
		return fmt.Errorf("%w: listed at %d bytes, its GET brings more (%v)", format.ErrCorrupt, l.Size, err) //nolint:errorlint // wraps ErrCorrupt alone, on purpose: ErrTooLarge is named, not wrapped
	}
	return err
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
