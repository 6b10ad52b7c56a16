package index

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
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

// loadLists reads lists and decodes each as its GET streams it (see the
// top of this file), or maps it from the list cache, and adopts them into
// b's runs (the biggest first: into a b that holds no value yet, its table
// is the base of b's, not copied). keys is how many keys b's set holds
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
	ld := ix.newListLoad(ctx, b, lists)
	defer ld.wg.Wait()
	defer ld.cancel()
	ld.fromCache()
	ld.wg.Add(1)
	go ld.fetch()
	decoded, err := ld.decodeAll()
	if err != nil {
		return nil, err
	}
	return ld.adoptAll(decoded), nil
}

// listLoad is one loadLists: the fetcher (fetch) starts each list's GET
// within the byte budget and hands its body over bodies[i]; the decode
// loop (decodeAll) decodes the lists in name order.
type listLoad struct {
	ix      *Index
	b       *builder
	lists   []store.ListInfo
	srcs    []uint8         // each list's source id, in name order
	cached  []*decodedList  // mapped from the list cache; nil: to read
	ctx     context.Context // canceled by the first failure
	cancel  context.CancelFunc
	budget  int64
	sem     *semaphore.Weighted
	results []chan listResult
	bodies  []chan listBody
	slots   chan struct{} // GETs in flight: listFetchParallel
	sent    chan struct{} // closed when fetch stops starting GETs
	wg      sync.WaitGroup

	launched int        // lists whose GET was started; set before sent is closed
	failMu   sync.Mutex // guards failed
	failed   error      // the first GET that failed (not gone)
	gone     error      // the first list found gone (decodeAll's)
}

func (ix *Index) newListLoad(ctx context.Context, b *builder, lists []store.ListInfo) *listLoad {
	ld := &listLoad{ix: ix, b: b, lists: lists, budget: max(listBytesInFlight, 1),
		results: make([]chan listResult, len(lists)), bodies: make([]chan listBody, len(lists)),
		cached: make([]*decodedList, len(lists)), slots: make(chan struct{}, listFetchParallel), sent: make(chan struct{})}
	ld.ctx, ld.cancel = context.WithCancel(ctx)
	ld.sem = semaphore.NewWeighted(ld.budget)
	for i, l := range lists {
		ld.results[i] = make(chan listResult, 1)
		ld.bodies[i] = make(chan listBody)
		ld.srcs = append(ld.srcs, b.addSource("list "+l.Name))
	}
	return ld
}

// fromCache maps the lists the list cache holds. A file that is not the
// list is reported once and the list read from the store.
func (ld *listLoad) fromCache() {
	c := ld.ix.lcache
	if c == nil {
		return
	}
	for i, l := range ld.lists {
		d, err := c.load(ld.cacheKey(l))
		if err != nil {
			ld.ix.listFrom.ignored.Add(1)
			ld.ix.warnOnce("listcache:"+err.Error(), fmt.Sprintf("list cache: ignored %v; reading the list from the store", err))
		}
		ld.cached[i] = d
	}
}

func (ld *listLoad) cacheKey(l store.ListInfo) listFileKey {
	return listFileKey{store: ld.ix.lcacheStore, name: l.Name, size: l.Size}
}

// fail records the first failure and stops the rest.
func (ld *listLoad) fail(err error) {
	ld.failMu.Lock()
	if ld.failed == nil {
		ld.failed = err
	}
	ld.failMu.Unlock()
	ld.cancel()
}

func (ld *listLoad) firstFailure() error {
	ld.failMu.Lock()
	defer ld.failMu.Unlock()
	return firstErr(ld.failed, ld.ctx.Err())
}

// fetch starts the GETs of the lists not cached. It reserves each list's
// bytes in name order, so the list the decoder waits for always holds its
// reservation: no deadlock.
func (ld *listLoad) fetch() {
	defer ld.wg.Done()
	defer close(ld.sent)
	for i, l := range ld.lists {
		if ld.cached[i] != nil {
			ld.launched++
			ld.results[i] <- listResult{}
			continue
		}
		// A size the listing did not give reserves the whole budget.
		hold := ld.budget
		if l.Size > 0 {
			hold = min(l.Size, ld.budget)
		}
		if ld.sem.Acquire(ld.ctx, hold) != nil {
			return
		}
		select {
		case ld.slots <- struct{}{}:
		case <-ld.ctx.Done():
			ld.sem.Release(hold)
			return
		}
		ld.launched++
		ld.wg.Add(1)
		go ld.get(i, hold)
	}
}

// get streams list i's GET to the decode loop.
func (ld *listLoad) get(i int, hold int64) {
	defer ld.wg.Done()
	defer func() { <-ld.slots }()
	l := ld.lists[i]
	err := ld.ix.getList(ld.ctx, l, func(body io.Reader) error {
		lb := listBody{body: body, done: make(chan error, 1)}
		select {
		case ld.bodies[i] <- lb:
		case <-ld.ctx.Done():
			return ld.ctx.Err()
		}
		return <-lb.done // the decode loop answers every body it takes
	})
	if errors.Is(err, store.ErrNotFound) {
		err = &listGoneError{name: l.Name}
	} else if err != nil {
		ld.fail(fmt.Errorf("read entry list %q: %w", l.Name, err))
	}
	ld.results[i] <- listResult{err: err, hold: hold}
}

// decodeAll decodes the lists in name order, each from its body as it
// streams (a body read again starts the list over), and caches each list
// it decoded.
func (ld *listLoad) decodeAll() ([]*decodedList, error) {
	out := make([]*decodedList, 0, len(ld.lists))
	for i := range ld.lists {
		d, r, err := ld.decodeOne(i)
		if err != nil {
			return nil, err
		}
		switch {
		case r.err != nil:
			ld.gone = firstErr(ld.gone, r.err)
		case ld.gone == nil:
			out = append(out, d)
		}
		ld.sem.Release(r.hold) // decoded (or dropped): the next GET may start
	}
	if ld.gone != nil {
		return nil, ld.gone
	}
	return out, nil
}

// decodeOne waits for list i's end: its decoded copy (cached, or of its
// last body) and how its GET ended. An error ends the load.
func (ld *listLoad) decodeOne(i int) (*decodedList, listResult, error) {
	l := ld.lists[i]
	var (
		r      listResult
		d      *decodedList
		decErr error // of the last body decoded
		wait   = ld.sent
	)
	for ended := false; !ended; {
		select {
		case lb := <-ld.bodies[i]:
			if ld.gone != nil {
				lb.done <- nil // not decoded: a list before it is gone
				continue
			}
			d, decErr = decodeEntryListWith(ld.srcs[i], l.Name, lb.body, ld.b.keys, ld.b.maxKeys, ld.ix.buildWorkers)
			lb.done <- decErr
		case r = <-ld.results[i]:
			ended = true
		case <-wait:
			if i >= ld.launched {
				// fetch stopped: ctx ended, or a GET failed.
				return nil, r, firstErr(ld.firstFailure(), ld.gone)
			}
			wait = nil // this one's GET was launched: wait for its end
		}
	}
	switch {
	case r.err != nil && decErr != nil && errors.Is(r.err, decErr):
		return nil, r, decErr // the list does not decode (ctx is canceled on return: the rest stop)
	case r.err != nil && !isGone(r.err):
		// Its GET or an earlier one failed (and canceled the rest):
		// the first failure is the one to report.
		return nil, r, ld.firstFailure()
	case r.err != nil:
		return nil, r, nil
	}
	if c := ld.cached[i]; c != nil {
		d = c
		ld.ix.listFrom.hits.Add(1)
		ld.ix.listFrom.hitBytes.Add(max(l.Size, 0))
	} else {
		ld.ix.listFrom.misses.Add(1)
		ld.ix.listFrom.missBytes.Add(max(l.Size, 0))
		if ld.gone == nil && ld.ix.lcache != nil {
			ld.ix.lcache.put(ld.cacheKey(l), d, ld.ix.warn, &ld.ix.listFrom.written)
		}
	}
	if ld.gone == nil {
		if ld.b.keys += d.keys; ld.b.keys > ld.b.maxKeys {
			return nil, r, fmt.Errorf("read entry list %q: %w: more than %d", l.Name, errLiveKeys, ld.b.maxKeys)
		}
	}
	return d, r, nil
}

// adoptAll adopts the decoded lists into b, the one with the most values
// first (into a b without values, its table is the base, not copied), each
// with its source id in name order.
func (ld *listLoad) adoptAll(decoded []*decodedList) []*run {
	order := slices.Clone(decoded)
	slices.SortStableFunc(order, func(x, y *decodedList) int { return y.vt.n() - x.vt.n() })
	runs := make([]*run, 0, len(order))
	for _, d := range order {
		runs = append(runs, ld.b.adopt(d, ld.srcs[slices.Index(decoded, d)]))
	}
	return runs
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
