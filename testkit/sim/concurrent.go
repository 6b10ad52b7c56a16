package sim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/mapcopy"
)

// The concurrent reader (byte mode; doc.go "Readers beside the
// operations"): one goroutine reads signatures through the long-lived
// handle (ReadSig, OpenSig), serve's handler and the mount (read(2), pread,
// a MAP_SHARED mapping) while the operations run — writes, re-signs,
// forgets, refreshes, folds — and holds each read to one whole version
// that existed over the read's window: from the oldest version a reader
// could be shown when the read began (the window's lo, bytes.go) to the
// newest written, or being written, when it ended.

// concState is what the reader shares with the operations. Guarded by mu;
// the operations' goroutine writes byteState.hist and lo under it too
// (noteWrite, settle), and reads them without it (it is their only writer).
type concState struct {
	mu      sync.Mutex
	mountLo map[string]int      // lo for reads through the mount: moved only after a refresh or an open (the kernel hears of own writes some time after)
	pending map[string][][]byte // bytes an operation is writing now (they may be read before the model learns they landed)
	writing map[string]int      // keys with a write open through the mount: a reader of the mount may see its bytes (no isolation, as on any filesystem)
	// mountWrites: per key, every write through the mount, in the order
	// they began (mountwrite.go): what a reader of the mount whose life
	// overlapped one may read.
	mountWrites map[string][]*mountWrite
	keys        []string            // every signature key with a version, in the order they came
	ever        map[string][][]byte // every version each key had, forgettings and all (a held reader's bound, concheld.go)
	recent      []string            // the keys written last, newest last (at most maxConcHeld): the reader holds these most

	// The reader's findings and counts, handed to the run after each
	// operation (drain).
	found    []Violation
	reads    int64
	bytes    int64
	mountRds int64
	notFound int64
	faulted  int64
	estale   int64 // ESTALE let pass (Config.TolerateOpenESTALE)
	// besideWrite: reads through the mount left unchecked, as a write
	// through the mount of their key overlapped them (mountwrite.go).
	besideWrite int64

	opNow  atomic.Int64 // the operation running (step)
	armSeq atomic.Int64 // faults armed so far (step)
}

// concReader is the reader goroutine's own state.
type concReader struct {
	stop chan struct{}
	done chan struct{}
	rng  *rand.Rand     // the goroutine's: its draws are not the seed's (its timing is not either)
	maps *mapcopy.Child // readShared's mapping child, started at its first use

	held        []*concHold    // readers held open (concheld.go); written by the reader goroutine under handleMu read-locked, by others under it write-locked
	slowRunning int            // slow reads under way (the reader goroutine's)
	slowDone    chan struct{}  // a slow read ended
	slowWG      sync.WaitGroup // the slow reads' goroutines
	reopen      chan reopenAsk // afterOp asks for reopenHeld, and waits for it
}

// concKey marks the reader's requests (the blobtest hooks): beside the
// operation, they neither meet nor spend its fault, and a share of their
// signature GETs hold the bytes they found back, as read-ahead's do.
type concKey struct{}

func isConcReader(ctx context.Context) bool {
	on, _ := ctx.Value(concKey{}).(bool)
	return on
}

func (c *concState) init() {
	c.mountLo, c.pending, c.writing, c.ever = map[string]int{}, map[string][][]byte{}, map[string]int{}, map[string][][]byte{}
	c.mountWrites = map[string][]*mountWrite{}
}

// pend notes bytes about to be written to key (before the write is sent).
func (s *sim) pend(key string, data []byte) {
	if s.bs.hist == nil || data == nil {
		return
	}
	s.conc.mu.Lock()
	s.conc.pending[key] = append(s.conc.pending[key], data)
	s.conc.mu.Unlock()
}

// unpend forgets the pending writes once the operation is done: what
// landed is in hist.
func (s *sim) unpend() {
	s.conc.mu.Lock()
	clear(s.conc.pending)
	s.conc.mu.Unlock()
}

// startReader starts the reader goroutine (byte mode, Config.ConcurrentReader).
func (s *sim) startReader() {
	s.rd = &concReader{stop: make(chan struct{}), done: make(chan struct{}), rng: rand.New(rand.NewPCG(s.cfg.Seed, 0xc0c0)), slowDone: make(chan struct{}, maxSlow), reopen: make(chan reopenAsk)}
	go s.readLoop()
}

// stopReader stops it and waits for its last read.
func (s *sim) stopReader() {
	if s.rd == nil {
		return
	}
	close(s.rd.stop)
	<-s.rd.done
	s.inj.slow.releaseAll()
	s.rd.slowWG.Wait()
	s.handleMu.Lock()
	s.dropConcHeld()
	s.handleMu.Unlock()
	if s.rd.maps != nil {
		s.rd.maps.Close()
	}
	s.rd = nil
	s.drainReader()
}

// drainReader hands the reader's findings and counts to the run.
func (s *sim) drainReader() {
	c := &s.conc
	c.mu.Lock()
	found := c.found
	c.found = nil
	s.res.ConcurrentReads += c.reads
	s.res.BytesCompared += c.bytes
	s.res.MountOps += int(c.mountRds)
	s.res.ConcurrentNotFound += c.notFound
	s.res.ConcurrentESTALE += c.estale
	s.res.ConcurrentBesideWrite += c.besideWrite
	c.reads, c.bytes, c.mountRds, c.notFound, c.estale, c.besideWrite = 0, 0, 0, 0, 0, 0
	c.mu.Unlock()
	for _, v := range found {
		v.Op = s.op
		s.res.Violations = append(s.res.Violations, v)
		s.logf("   VIOLATION %s", v)
	}
}

// Ways the reader reads.
const (
	viaReadSig = iota
	viaOpenSig
	viaServe
	viaMountRead
	viaMountPread
	viaMountShared
	viaCount
	// The reader's reads at an operation's end (concheld.go).
	viaStaleProbe  = viaCount     // the probe beside a held GET: ReadSig
	viaReopen      = viaCount + 1 // a held key opened anew after a refresh: OpenSig
	viaReopenMount = viaCount + 2 // the same through the mount: open, read(2)
)

var viaNames = [viaCount + 3]string{"handle-read", "handle-open", "serve", "mount-read", "mount-pread", "mount-mmap-shared", "stale-flight-probe", "reopen-held", "reopen-held-mount"}

// isMountVia reports whether a way reads through the mount.
func isMountVia(via int) bool {
	return via >= viaMountRead && via < viaCount || via == viaReopenMount
}

func (s *sim) readLoop() {
	defer close(s.rd.done)
	ctx := context.WithValue(s.ctx, concKey{}, true)
	for {
		select {
		case <-s.rd.stop:
			return
		case ask := <-s.rd.reopen:
			s.reopenHeld(ctx, ask.armed)
			close(ask.done)
			continue
		default:
		}
		s.readOnce(ctx)
		for drained := false; !drained; {
			select {
			case <-s.rd.slowDone:
				s.rd.slowRunning--
			default:
				drained = true
			}
		}
		if s.rd.rng.IntN(slowEvery) == 0 {
			s.startSlowRead(ctx)
		}
		// A pause: the reader shares the machine with the operations. An
		// operation that asks for reopenHeld meanwhile waits on it: the
		// pause ends.
		t := time.NewTimer(time.Duration(50+s.rd.rng.IntN(250)) * time.Microsecond)
		select {
		case <-t.C:
		case <-s.rd.stop:
			t.Stop()
			return
		case ask := <-s.rd.reopen:
			t.Stop()
			s.reopenHeld(ctx, ask.armed)
			close(ask.done)
		}
	}
}

// readOnce reads one signature one way and checks it; now and then it
// holds a reader open, or ends one it held (concheld.go), and half its
// reads are of a key it holds open.
func (s *sim) readOnce(ctx context.Context) {
	c := &s.conc
	s.handleMu.RLock()
	defer s.handleMu.RUnlock()
	if s.h == nil {
		return
	}
	s.faultMu.RLock()
	locked := true
	defer func() {
		if locked {
			s.faultMu.RUnlock()
		}
	}()
	armed := s.faultArmed
	s.tendHeld(ctx, armed)
	c.mu.Lock()
	if len(c.keys) == 0 {
		c.mu.Unlock()
		return
	}
	k := c.keys[s.rd.rng.IntN(len(c.keys))]
	if len(s.rd.held) > 0 && s.rd.rng.IntN(2) == 0 {
		k = s.rd.held[s.rd.rng.IntN(len(s.rd.held))].key // a new open while one is held
	}
	via := s.rd.rng.IntN(viaCount)
	mount := via >= viaMountRead
	if mount && (s.bs.mnt == nil || c.writing[k] > 0 || armed) {
		via, mount = s.rd.rng.IntN(viaMountRead), false
	}
	lo, mark := s.bs.lo[k], noMark
	if mount {
		lo, mark = c.mountLo[k], c.writeMark(k)
	}
	allowed := slices.Clone(c.pending[k])
	c.mu.Unlock()
	if !mount {
		// Its requests are marked (concKey): they never meet the fault, so
		// the operation need not wait for this read to arm one. An error
		// is the flight's of an operation the read joined if a fault was
		// armed at any time over it (armSeq).
		seq := c.armSeq.Load()
		s.faultMu.RUnlock()
		locked = false
		got, err := s.readVia(ctx, via, k)
		s.judge(k, via, lo, mark, allowed, got, err, armed || c.armSeq.Load() != seq)
		return
	}
	got, err := s.readVia(ctx, via, k)
	s.judge(k, via, lo, mark, allowed, got, err, armed)
}

// judge checks one read of k by the reader: got (or err) must be one whole
// version of those from lo (as of the read's start) to the newest written
// or being written at its end; before are the bytes pending at its start.
// armed: a fault was armed over the read (an error is then not its own).
// mark: for a read through the mount, writeMark at its start — a read that
// overlapped a write through the mount is not checked (mountwrite.go);
// noMark otherwise.
func (s *sim) judge(k string, via, lo, mark int, before [][]byte, got []byte, err error, armed bool) {
	c := &s.conc
	mount := isMountVia(via)
	c.mu.Lock()
	defer c.mu.Unlock()
	h := s.bs.hist[k]
	allowed := append(append(before, h[min(lo, len(h)):]...), c.pending[k]...)
	c.reads++
	c.bytes += int64(len(got))
	if mount {
		c.mountRds++
	}
	if mark != noMark && len(c.writeStates(k, mark)) > 0 {
		c.besideWrite++
		return
	}
	kind := "conc-" + viaNames[via]
	switch {
	case err != nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotFoundStatus)):
		c.notFound++ // forgotten, or not shown yet: the entry checks hold existence
	case err != nil && errors.Is(err, syscall.ENODEV) && via == viaMountShared && s.cfg.TolerateSharedENODEV:
	case err != nil && errors.Is(err, syscall.ESTALE) && mount && s.cfg.TolerateOpenESTALE:
		c.estale++
	case err != nil && armed:
		c.faulted++ // a flight the operation started, failed by its fault
	case err != nil:
		c.found = append(c.found, Violation{Kind: kind + "-error", Class: classReadFailed, Detail: fmt.Sprintf("%s while operations ran: %v", k, err)})
	case !matches(got, allowed):
		c.found = append(c.found, Violation{Kind: kind, Class: classNewOpen, Detail: fmt.Sprintf("%s while operations ran: %d bytes %q…, not one whole version of the %d that existed over the read (sizes %v)", k, len(got), got[:min(len(got), 24)], len(allowed), sizes(allowed))})
	}
}

// noMark: judge's mark for a read not through the mount.
const noMark = -1

// classReadFailed: a read beside the operations failed, not for want of
// the entry (ESTALE on an open through the mount, ENODEV on a shared
// mapping, an I/O error).
const classReadFailed = "E1"

// errNotFoundStatus is serve's 404.
var errNotFoundStatus = errors.New("serve: 404")

// readVia reads key one way. handleMu is read-locked.
func (s *sim) readVia(ctx context.Context, via int, k string) ([]byte, error) {
	e, _ := format.ParseKey(k)
	switch via {
	case viaReadSig:
		return s.h.ReadSig(ctx, e)
	case viaOpenSig:
		sh, err := s.h.OpenSig(ctx, e)
		if err != nil {
			return nil, err
		}
		defer sh.Release()
		return slices.Clone(sh.Bytes()), nil
	case viaServe:
		rec := httptest.NewRecorder()
		s.web.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/"+k, nil).WithContext(ctx))
		switch rec.Code {
		case http.StatusOK:
			return rec.Body.Bytes(), nil
		case http.StatusNotFound:
			return nil, errNotFoundStatus
		}
		return nil, fmt.Errorf("serve: status %d", rec.Code)
	case viaMountRead:
		return readFile(s.mountPath(k))
	case viaMountPread:
		f, err := os.Open(s.mountPath(k))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return preadAll(f)
	default:
		return s.readShared(s.mountPath(k), &s.rd.maps)
	}
}

// readShared reads p through a MAP_SHARED, PROT_READ mapping (the default
// of Python's mmap and many tools), made and copied out in a child
// process (copyMapping: never touched by this process, whose FUSE server
// serves its page faults). A mapping of a file that changed within the
// hour fails with ENODEV today (direct I/O); Config.TolerateSharedENODEV
// lets it pass.
func (s *sim) readShared(p string, child **mapcopy.Child) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() == 0 {
		return []byte{}, nil
	}
	return s.copyMapping(child, f, int(fi.Size()), true)
}
