package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// What the concurrent reader keeps across operations (doc.go "Readers
// beside the operations"): readers it holds open — an OpenSig handle and a
// descriptor on the mount — while it opens the same keys anew, and slow
// reads whose GET holds the bytes it found until the operations after it
// end. With them the reader alone catches a new open handed a copy held
// readers keep after a forget and a put again (issue 37 item 1, the
// forget-held-shared mutation), and a read that joins a flight a refresh
// made stale (the stale-flight-joined mutation): scripts/simulate
// --skip-ops forget-reput-held,slow-read runs without the operations built
// for them.

// reopenAsk asks the reader for reopenHeld after an operation; armed: the
// operation had a fault (an error it meets is not a violation).
type reopenAsk struct {
	done  chan struct{}
	armed bool
}

// concHold is one reader the concurrent reader holds open.
type concHold struct {
	key  string
	sh   *index.SigHandle
	got  []byte   // sh's bytes when it opened (checked then)
	f    *os.File // a descriptor on the mount, or nil
	ok   [][]byte // the versions a reader of the mount could be shown when f opened
	ever int      // len(conc.ever[key]) when f opened: every later version may be read too
	mark int      // conc.writeMark(key) before f opened, and
	end  int      // conc.writeEnd(key) after: the states of the writes through the mount in [mark, end), which f's open overlapped, may be read too (mountwrite.go)
	op   int64    // the operation running when it opened
}

// Held readers: at most maxConcHeld at once, two thirds of them of the
// keys written last; one reader's read in holdEvery holds a new one, one in
// holdEvery ends one held since an earlier operation.
const (
	maxConcHeld = 6
	holdEvery   = 8
)

// noteRecent notes a key just written; c.mu is held.
func (c *concState) noteRecent(key string) {
	c.recent = slices.DeleteFunc(c.recent, func(k string) bool { return k == key })
	if c.recent = append(c.recent, key); len(c.recent) > maxConcHeld {
		c.recent = c.recent[1:]
	}
}

// tendHeld may hold a new reader, or end one (the reader goroutine; handleMu
// and faultMu are read-locked; armed: a fault is armed now).
func (s *sim) tendHeld(ctx context.Context, armed bool) {
	rd := s.rd
	switch n := rd.rng.IntN(holdEvery); {
	case n == 0 && len(rd.held) < maxConcHeld:
		s.concHoldOne(ctx, armed)
	case n == 1 && len(rd.held) > 0:
		i := rd.rng.IntN(len(rd.held))
		if s.conc.opNow.Load() > rd.held[i].op {
			h := rd.held[i]
			rd.held = slices.Delete(rd.held, i, i+1)
			s.concEndHeld(h, armed)
		}
	}
}

// concHoldOne opens a signature and keeps it open (two thirds of the time
// one of those written last, as a user's tool opens what was just signed).
func (s *sim) concHoldOne(ctx context.Context, armed bool) {
	c := &s.conc
	c.mu.Lock()
	if len(c.keys) == 0 {
		c.mu.Unlock()
		return
	}
	k := c.keys[s.rd.rng.IntN(len(c.keys))]
	if len(c.recent) > 0 && s.rd.rng.IntN(3) > 0 {
		k = c.recent[s.rd.rng.IntN(len(c.recent))]
	}
	c.mu.Unlock()
	s.concHoldKey(ctx, k, armed)
}

// concHoldKey opens k and keeps it open: through OpenSig (its bytes
// checked now, as any open's) and, with a mount and no fault armed, a
// descriptor on the mount.
func (s *sim) concHoldKey(ctx context.Context, k string, armed bool) {
	c := &s.conc
	c.mu.Lock()
	lo := s.bs.lo[k]
	before := slices.Clone(c.pending[k])
	mount := s.bs.mnt != nil && !armed && c.writing[k] == 0
	c.mu.Unlock()
	e, _ := format.ParseKey(k)
	sh, err := s.h.OpenSig(ctx, e)
	if err != nil {
		s.judge(k, viaOpenSig, lo, noMark, before, nil, err, armed)
		return
	}
	got := slices.Clone(sh.Bytes())
	s.judge(k, viaOpenSig, lo, noMark, before, got, nil, armed)
	h := &concHold{key: k, sh: sh, got: got, op: c.opNow.Load()}
	if mount {
		// No write through the mount of k was open at the check above;
		// one may begin before the open below all the same: the mark,
		// taken before the open, counts it in (mountwrite.go).
		c.mu.Lock()
		h.ok = append(slices.Clone(c.pending[k]), s.bs.hist[k][min(c.mountLo[k], len(s.bs.hist[k])):]...)
		h.ever = len(c.ever[k])
		h.mark = c.writeMark(k)
		c.mu.Unlock()
		f, err := os.Open(s.mountPath(k))
		c.mu.Lock()
		h.end = c.writeEnd(k)
		c.mu.Unlock()
		switch {
		case err == nil:
			h.f = f
		case !errors.Is(err, fs.ErrNotExist):
			s.judge(k, viaMountRead, 0, h.mark, nil, nil, err, armed)
		}
	}
	s.rd.held = append(s.rd.held, h)
}

// concEndHeld ends a held reader: the OpenSig handle's bytes are still
// those it opened with; the descriptor (unless a fault is armed: its reads
// would be the kernel's, which the fault could meet) reads to its end with
// pread one whole version of those it could be shown when it opened or
// any later one.
func (s *sim) concEndHeld(h *concHold, armed bool) {
	c := &s.conc
	if !bytes.Equal(h.sh.Bytes(), h.got) {
		c.mu.Lock()
		c.found = append(c.found, Violation{Kind: "conc-held-handle", Class: classHeld, Detail: fmt.Sprintf("%s held since op %d (OpenSig): its bytes changed from %d to %d", h.key, h.op, len(h.got), len(h.sh.Bytes()))})
		c.mu.Unlock()
	}
	h.sh.Release()
	if h.f == nil {
		return
	}
	defer h.f.Close()
	if armed {
		return
	}
	got, err := preadAll(h.f)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	c.mountRds++
	c.bytes += int64(len(got))
	allowed := append(append(slices.Clone(h.ok), c.ever[h.key][min(h.ever, len(c.ever[h.key])):]...), c.pending[h.key]...)
	allowed = append(allowed, c.writeStatesIn(h.key, h.mark, h.end)...) // a write through the mount its open overlapped (mountwrite.go)
	switch {
	case err != nil:
		c.found = append(c.found, Violation{Kind: "conc-held-mount-error", Class: classReadFailed, Detail: fmt.Sprintf("%s held on the mount since op %d: %v", h.key, h.op, err)})
	case !matches(got, allowed):
		c.found = append(c.found, Violation{Kind: "conc-held-mount", Class: classHeld, Detail: fmt.Sprintf("%s held on the mount since op %d: %d bytes %q…, not one whole version of the %d it may read (sizes %v)", h.key, h.op, len(got), got[:min(len(got), 24)], len(allowed), sizes(allowed))})
	}
}

// dropConcHeld ends every held reader unchecked (before an unmount or a
// new handle: handleMu is write-locked, or the reader has stopped).
func (s *sim) dropConcHeld() {
	if s.rd == nil {
		return
	}
	for _, h := range s.rd.held {
		if h.f != nil {
			h.f.Close()
		}
		h.sh.Release()
	}
	s.rd.held = nil
}

// Slow reads: now and then (one read in slowEvery) the reader starts a
// ReadSig in a goroutine of its own whose GET (a signature's, not in the
// cache) holds the bytes it found back until an operation refreshes the
// handle, slowOps operations have ended, or slowMax has passed (an
// operation's own read may have joined it). At most maxSlow at once.
const (
	slowEvery = 8
	maxSlow   = 2
	slowOps   = 3
	slowMax   = 200 * time.Millisecond
	// probeWait bounds how long the probe waits for its own GET: a read
	// that sends none within it has joined the held flight (or been
	// answered from the cache, which it then has done).
	probeWait = 50 * time.Millisecond
)

// slowKey marks a slow read's context.
type slowKey struct{}

// slowFlight is one slow read's GET, holding back the bytes it found.
type slowFlight struct {
	key     string
	data    []byte // the bytes the GET found
	op      int64  // the operation running when it was held
	changed bool   // an operation wrote its key since (settleSlow; the operations' goroutine's)
	open    chan struct{}
	once    sync.Once
}

func (f *slowFlight) release() { f.once.Do(func() { close(f.open) }) }

// slowFlights are the held GETs, and the probe's watch for a GET of its
// own. Guarded by mu.
type slowFlights struct {
	mu       sync.Mutex
	held     []*slowFlight
	op       int64         // the operation running (step)
	probeKey string        // the key the probe reads now
	probeGET chan struct{} // closed when the probe's read sends a GET of probeKey
}

// body is the handle's Body hook for the concurrent reader's GETs of
// signatures: a slow read's is held (a new slowFlight), and a GET of the
// key the probe reads tells it the probe sent one. nil: not held.
func (sl *slowFlights) body(ctx context.Context, key string, r io.Reader) io.Reader {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if key == sl.probeKey && sl.probeGET != nil {
		close(sl.probeGET)
		sl.probeGET = nil
	}
	if on, _ := ctx.Value(slowKey{}).(bool); !on || len(sl.held) >= maxSlow {
		return nil
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return io.MultiReader(bytes.NewReader(data), errReader{err})
	}
	f := &slowFlight{key: key, data: data, op: sl.op, open: make(chan struct{})}
	sl.held = append(sl.held, f)
	time.AfterFunc(slowMax, f.release)
	return &gatedBody{ctx: ctx, r: bytes.NewReader(data), open: f.open}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// take removes and returns the held flights keep does not keep.
func (sl *slowFlights) take(keep func(*slowFlight) bool) []*slowFlight {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	var out []*slowFlight
	sl.held = slices.DeleteFunc(sl.held, func(f *slowFlight) bool {
		if keep(f) {
			return false
		}
		out = append(out, f)
		return true
	})
	return out
}

// unstall is for a check's reads of key (the operations' goroutine): one
// that joins a held GET of key waits for it to be let go — a slow read's
// after slowMax (no operation runs meanwhile to release it), a late body
// after its wait — and nothing else happens meanwhile. After stallWait
// those GETs of key are let go at once instead: the check reads what it
// would have, sooner. (A slow read's GET stays in held: a refresh still
// probes it.) Call the returned stop when the reads are done.
func (s *sim) unstall(key string) (stop func()) {
	sl := &s.inj.slow
	t := time.AfterFunc(stallWait, func() {
		s.inj.hurryKey(key)
		sl.mu.Lock()
		defer sl.mu.Unlock()
		for _, f := range sl.held {
			if f.key == key {
				f.release()
			}
		}
	})
	return func() { t.Stop() }
}

// stallWait: longer than a check's reads of a key take when they join no
// held GET (well under a millisecond on memory), far shorter than slowMax
// and lateReadAheadMax.
const stallWait = 5 * time.Millisecond

// releaseAll lets every held GET go (a handle is replaced, the run ends).
func (sl *slowFlights) releaseAll() {
	for _, f := range sl.take(func(*slowFlight) bool { return false }) {
		f.release()
	}
}

// startSlowRead starts a slow read of a random key (the reader goroutine).
func (s *sim) startSlowRead(ctx context.Context) {
	rd := s.rd
	if rd.slowRunning >= maxSlow {
		return
	}
	s.conc.mu.Lock()
	if len(s.conc.keys) == 0 {
		s.conc.mu.Unlock()
		return
	}
	k := s.conc.keys[rd.rng.IntN(len(s.conc.keys))]
	s.conc.mu.Unlock()
	rd.slowRunning++
	rd.slowWG.Add(1)
	go func() {
		defer rd.slowWG.Done()
		defer func() { rd.slowDone <- struct{}{} }()
		s.slowRead(context.WithValue(ctx, slowKey{}, true), k)
	}()
}

// slowRead reads k through ReadSig and checks it as any read of the reader.
func (s *sim) slowRead(ctx context.Context, k string) {
	s.handleMu.RLock()
	defer s.handleMu.RUnlock()
	if s.h == nil {
		return
	}
	s.faultMu.RLock()
	armed, seq := s.faultArmed, s.conc.armSeq.Load()
	s.faultMu.RUnlock()
	c := &s.conc
	c.mu.Lock()
	lo := s.bs.lo[k]
	before := slices.Clone(c.pending[k])
	c.mu.Unlock()
	e, _ := format.ParseKey(k)
	got, err := s.h.ReadSig(ctx, e)
	// An error is the flight's of an operation the read joined if a fault
	// was armed at any time over it.
	s.judge(k, viaReadSig, lo, noMark, before, got, err, armed || c.armSeq.Load() != seq)
}

// afterOp is the concurrent reader's moment after an operation ended (step,
// the fault disarmed, before the checks): the windows move (settle), the
// held GETs end (settleSlow) and, after a refresh or an open, the reader
// opens anew each key it holds open (reopenHeld) — a new open after a
// change completed must see a version at least as new, before any other
// read of the key (a read that finds new bytes moves the key's version,
// after which no open shares a held copy: issue 37 item 1).
func (s *sim) afterOp() {
	s.settle()
	refreshed := s.exactHandle != ""
	s.settleSlow(refreshed)
	if !refreshed || s.rd == nil {
		return
	}
	ack := reopenAsk{done: make(chan struct{}), armed: s.opFault != nil}
	// The reader ends the read it is making first: its late GET would
	// land before anything else happens anyway (this goroutine waits), so
	// it lands at once (injector.hurry).
	s.inj.hurryReader(true)
	defer s.inj.hurryReader(false)
	select {
	case s.rd.reopen <- ack:
		<-ack.done
	case <-s.rd.done:
	}
}

// reopenHeld opens anew (the reader goroutine) every key the reader holds
// open: through OpenSig, and through the mount when it holds a descriptor
// there too (a new open and read(2) to its end). Then it holds the key
// written last, if it holds it not, as a tool that follows new signatures
// opens each once a refresh shows it.
func (s *sim) reopenHeld(ctx context.Context, armed bool) {
	s.handleMu.RLock()
	defer s.handleMu.RUnlock()
	if s.h == nil {
		return
	}
	c := &s.conc
	seen := map[string]bool{}
	for _, h := range s.rd.held {
		if seen[h.key] {
			continue
		}
		seen[h.key] = true
		c.mu.Lock()
		lo, mlo, mark := s.bs.lo[h.key], c.mountLo[h.key], c.writeMark(h.key)
		before := slices.Clone(c.pending[h.key])
		c.mu.Unlock()
		got, err := s.readVia(ctx, viaOpenSig, h.key)
		s.judge(h.key, viaReopen, lo, noMark, before, got, err, armed)
		if h.f != nil && s.bs.mnt != nil {
			got, err := readFile(s.mountPath(h.key))
			s.judge(h.key, viaReopenMount, mlo, mark, before, got, err, armed)
		}
	}
	c.mu.Lock()
	last := ""
	if n := len(c.recent); n > 0 {
		last = c.recent[n-1]
	}
	c.mu.Unlock()
	if last != "" && !seen[last] && len(s.rd.held) < maxConcHeld {
		s.concHoldKey(ctx, last, armed)
	}
}

// settleSlow ends the held GETs after an operation: after a refresh all
// of them, and first, for each whose bytes a reader may no longer be
// shown, the probe — a read that begins now, which must send a GET of its
// own and read a version it may be shown, not join the held one; otherwise
// those held slowOps operations.
func (s *sim) settleSlow(refreshed bool) {
	sl := &s.inj.slow
	op := int64(s.op)
	// Held across operations: a re-sign by another writer in one of them
	// and a refresh make it stale. The checks between may wait on it
	// (slowMax) when they read its key: the price of the catch.
	keep := func(f *slowFlight) bool { return !refreshed && op-f.op < slowOps }
	for _, f := range sl.take(keep) {
		if refreshed && s.staleFlight(f) {
			s.probe(f)
		}
		f.release()
	}
	sl.mu.Lock()
	sl.op = op + 1
	sl.mu.Unlock()
}

// staleFlight reports whether f found bytes no reader of the handle may be
// shown now.
func (s *sim) staleFlight(f *slowFlight) bool {
	s.conc.mu.Lock()
	defer s.conc.mu.Unlock()
	h := s.bs.hist[f.key]
	return !matches(f.data, h[min(s.bs.lo[f.key], len(h)):])
}

// probe reads f's key beside its held GET: it waits until the read sends
// a GET of its own, ends, or probeWait passes, then lets the held GET go.
func (s *sim) probe(f *slowFlight) {
	sl := &s.inj.slow
	sent := make(chan struct{})
	sl.mu.Lock()
	sl.probeKey, sl.probeGET = f.key, sent
	sl.mu.Unlock()
	defer func() {
		sl.mu.Lock()
		sl.probeKey, sl.probeGET = "", nil
		sl.mu.Unlock()
	}()
	c := &s.conc
	c.mu.Lock()
	lo := s.bs.lo[f.key]
	before := slices.Clone(c.pending[f.key])
	c.mu.Unlock()
	type result struct {
		got []byte
		err error
	}
	done := make(chan result, 1)
	e, _ := format.ParseKey(f.key)
	go func() {
		got, err := s.h.ReadSig(context.WithValue(s.ctx, concKey{}, true), e)
		done <- result{got, err}
	}()
	var r result
	ended := false
	t := time.NewTimer(probeWait)
	select {
	case <-sent:
	case r = <-done:
		ended = true
	case <-t.C:
	}
	t.Stop()
	f.release()
	if !ended {
		r = <-done
	}
	s.judge(f.key, viaStaleProbe, lo, noMark, before, r.got, r.err, s.opFault != nil)
}
