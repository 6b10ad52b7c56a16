package store

// GetAdmittedBatch: several signatures read at once (the index's
// read-ahead), pipelined on one connection where the store's lean path has
// a pipeline (pipeline.go), else one GetAdmitted each. Each GET is what
// GetAdmitted's would be — one of the store's MaxRequests slots (held from
// before its request is written until its answer is read), one GET in
// Counts (and on S3 in the wire counts) once it goes on the wire, its
// answer's Date to the store clock, the observer told of it, the cap and
// the admission before its body, the checksum its answer carries checked,
// ErrNotFound on a 404 — but its answer is read on the caller's goroutine
// behind the answers before it. A GET whose answer did not come (the
// server closed the connection or fell silent with it owed) or failed
// transiently is sent again one at a time by GetAdmitted, with its
// retries, and counted in Retries; the caller sees only each key's final
// bytes or error.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// GetAdmittedBatch reads each of keys as GetAdmitted does and hands its
// bytes, Last-Modified and error (wrapped as GetAdmitted's) to each, with
// i its index in keys: exactly once a key, on the caller's goroutine, in
// no promised order. Where the store pipelines (Pipeline), up to its depth
// of GETs are written on one connection before their answers are read.
func (s *Store) GetAdmittedBatch(ctx context.Context, keys []string, admit func(size int64) (release func(), err error), each func(i int, data []byte, mod time.Time, err error)) {
	one := func(i int) {
		data, mod, err := s.GetAdmitted(ctx, keys[i], admit)
		each(i, data, mod, err)
	}
	lp := s.lean
	var piped []int
	for i, k := range keys {
		if lp != nil && lp.pipe != nil && s.leanReads(k) {
			piped = append(piped, i)
		} else {
			one(i)
		}
	}
	for len(piped) > 0 {
		// A batch is as deep as the pipeline and as the request slots
		// free now allow: the first slot is waited for, the others taken
		// only if free, so a batch never holds slots while it waits for
		// more (with a small --max-requests, workers holding some each
		// and waiting for the rest would wait for ever).
		held, err := s.takeSlots(ctx, min(len(piped), max(1, int(lp.pipe.depth.Load()))))
		if err != nil {
			for _, i := range piped {
				each(i, nil, time.Time{}, fmt.Errorf("get %q: %w", keys[i], err))
			}
			return
		}
		again, unsent := s.pipelined(ctx, keys, piped[:held], held, admit, each)
		piped = piped[held:]
		for _, i := range again {
			s.retries.Add(1)
			one(i)
		}
		for _, i := range unsent {
			one(i)
		}
	}
}

// pipelined sends the GETs of keys[idx...] on one connection of the
// pipeline, holding held request slots (one a GET, each given back as its
// answer is read), and hands their results to each; it returns the
// indexes to send again one at a time (owed, or failed transiently), and
// those never sent (a request that could not be made: sent one at a time,
// where the error is the GET's own, and not counted as retries).
func (s *Store) pipelined(ctx context.Context, keys []string, idx []int, held int, admit func(size int64) (release func(), err error), each func(i int, data []byte, mod time.Time, err error)) (again, unsent []int) {
	lp := s.lean
	defer func() { s.giveSlots(held) }()
	reqs := make([]*http.Request, len(idx))
	for j, i := range idx {
		r, err := lp.be.request(ctx, lp.prefix+keys[i])
		if err == nil && lp.authorize != nil {
			err = lp.authorize(r)
		}
		if err != nil {
			return nil, idx
		}
		reqs[j] = r
	}
	wrote := func(n int, resent bool) {
		s.n.get.Add(int64(n))
		lp.sent.Add(int64(n))
		if lp.wire != nil {
			lp.wire(n)
		}
		if resent {
			s.retries.Add(int64(n))
		}
	}
	began := time.Now()
	answer := func(j int, resp *http.Response, sent time.Time) {
		i := idx[j]
		now := time.Now()
		began = sent
		if lp.dates != nil {
			lp.dates.observeDate(resp.Header, sent, now)
		}
		g, err := lp.answer(resp, getOpts{limit: format.ReadCap(keys[i]), admit: admit, lean: true}) // leanget.go
		if err != nil {
			err = s.drv.mapErr(err)
		}
		if s.observe != nil {
			s.observe(s.n.kindOf(&s.n.get), now.Sub(sent), err)
		}
		s.giveSlots(1)
		held--
		switch {
		case err == nil:
			each(i, g.data, g.mod, nil)
		case transient(err) && ctx.Err() == nil:
			again = append(again, i)
		default:
			each(i, nil, time.Time{}, fmt.Errorf("get %q: %w", keys[i], err))
		}
	}
	n, err := lp.pipe.send(ctx, reqs, s.timeout, wrote, answer)
	if n == len(idx) {
		return again, nil
	}
	owed := idx[n:]
	if err == nil {
		err = errOwed
	}
	if s.observe != nil {
		for range owed {
			s.observe(s.n.kindOf(&s.n.get), time.Since(began), err)
		}
	}
	if ctx.Err() != nil {
		for _, i := range owed {
			each(i, nil, time.Time{}, fmt.Errorf("get %q: %w", keys[i], ctx.Err()))
		}
		return again, nil
	}
	return append(again, owed...), nil
}

// errOwed is the error of a pipelined GET whose answer did not come because
// an earlier answer ended the connection (Connection: close, an answer
// without framing, a body left unread).
var errOwed = errors.New("answer owed when the connection ended")

// takeSlots takes up to n (at least 1) of the store's MaxRequests slots
// (n when it has no cap): the first waited for as long as ctx allows, the
// others only while free. It returns how many it holds (0 with ctx's
// error).
func (s *Store) takeSlots(ctx context.Context, n int) (int, error) {
	if s.inFlight == nil {
		return n, nil
	}
	select {
	case s.inFlight <- struct{}{}:
	default:
		select {
		case s.inFlight <- struct{}{}:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	held := 1
	for held < n {
		select {
		case s.inFlight <- struct{}{}:
			held++
		default:
			return held, nil
		}
	}
	return held, nil
}

// giveSlots gives n slots back.
func (s *Store) giveSlots(n int) {
	if s.inFlight == nil {
		return
	}
	for range n {
		<-s.inFlight
	}
}

// Pipeline says what the store's pipelined GETs did; ok is false when it
// does not pipeline (ReadPath says why).
func (s *Store) Pipeline() (PipelineStats, bool) {
	if s.lean == nil || s.lean.pipe == nil {
		return PipelineStats{}, false
	}
	return s.lean.pipe.stats(), true
}
