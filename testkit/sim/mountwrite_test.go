package sim

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// TestHeldMountReaderBesideAMountWrite is the model's side of the B2 the
// long run found (seed 8023 paged, after op 46: "sig/cd/0405/alice held on
// the mount since op 43: 0 bytes"): the concurrent reader held a
// descriptor of a signature on the mount (op 43), a refused write of it
// opened it through the mount with O_TRUNC (op 46), and the held
// descriptor, read then, read the write's bytes ("" after the truncation).
// The mount promises more (fs/doc.go: a reader opened before a write keeps
// its version; fs/TestHeldUnreadDescriptorAcrossAnOwnTruncatingWrite), so
// that stays a violation; only a descriptor whose open overlapped a write
// through the mount of its key may read that write's bytes
// (mountwrite.go). The descriptor here is a plain file holding the bytes
// the mount gave (the model's verdict on them is what is tested).
func TestHeldMountReaderBesideAMountWrite(t *testing.T) {
	testwatch.Arm(t) // no mount here (MountPercent 0), but Run's setup can mount
	s := newByteSim(t)
	e, k := s.twelveBytes(t, 32)
	data := []byte("the refused write's bytes")
	const (
		none   = iota // no write through the mount
		during        // a write open when the descriptor opened
		after         // a write begun after it opened
	)
	for _, c := range []struct {
		name  string
		write int
		read  []byte // what the held descriptor reads
		want  bool   // a violation
	}{
		{"the write's truncation, opened beside the write", during, []byte{}, false},
		{"the write's bytes, opened beside the write", during, data, false},
		{"the write's bytes twice, opened beside the write", during, append(append([]byte{}, data...), data...), false},
		{"the version held, a write begun after", after, []byte("twelve bytes"), false},
		{"the truncation of a write begun after (B2)", after, []byte{}, true},
		{"the bytes of a write begun after", after, data, true},
		{"the truncation, no write", none, []byte{}, true},
		{"other bytes, opened beside the write", during, []byte("no such version"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.op++
			s.conc.opNow.Store(int64(s.op))
			if c.write == during {
				mw := s.beginMountWrite(k, refusedWriteStates(data))
				defer s.doneWriting(k, mw)
			}
			h := s.heldForTest(t, e, c.read)
			if c.write == after {
				mw := s.beginMountWrite(k, refusedWriteStates(data))
				defer s.doneWriting(k, mw)
			}
			s.concEndHeld(h, false)
			s.drainReader()
			got := len(s.res.Violations) > 0
			if got != c.want || got && s.res.Violations[0].Class != classHeld {
				t.Errorf("held reader reading %q: violations %v, want a %s: %v", c.read, s.res.Violations, classHeld, c.want)
			}
			s.res.Violations = nil
		})
	}
}

// TestMountReadBesideAMountWriteUnchecked: a read of the concurrent reader
// through the mount that a write through the mount of its key overlapped
// (begun after the reader checked that none was open: a check, then a
// read, is no guard) is not checked — it may mix two states of the write's
// bytes; one no write overlapped still is.
func TestMountReadBesideAMountWriteUnchecked(t *testing.T) {
	testwatch.Arm(t) // no mount here (MountPercent 0), but Run's setup can mount
	s := newByteSim(t)
	_, k := s.twelveBytes(t, 1)
	s.conc.mu.Lock()
	mark := s.conc.writeMark(k)
	s.conc.mu.Unlock()
	s.judge(k, viaMountRead, 0, mark, nil, []byte("twelve"), nil, false) // no write: a torn read
	s.drainReader()
	if len(s.res.Violations) != 1 {
		t.Fatalf("a torn read through the mount, no write beside it: violations %v, want one", s.res.Violations)
	}
	s.res.Violations = nil
	mw := s.beginMountWrite(k, refusedWriteStates([]byte("the refused write's bytes")))
	s.judge(k, viaMountRead, 0, mark, nil, []byte("twelve"), nil, false)
	s.doneWriting(k, mw)
	s.drainReader()
	if len(s.res.Violations) != 0 || s.res.ConcurrentBesideWrite != 1 {
		t.Errorf("a read through the mount beside a write there: violations %v, %d unchecked; want none, 1", s.res.Violations, s.res.ConcurrentBesideWrite)
	}
}

// newByteSim is a byte-mode sim on mem with no mount and no reader
// goroutine (a test calls the reader's steps itself).
func newByteSim(t *testing.T) *sim {
	t.Helper()
	cfg := Config{Seed: 1, Backend: BackendMem, Bytes: true, TempDir: t.TempDir()}
	s, err := newSim(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.res = &Result{Config: cfg, OpCounts: map[string]int{}, OpTime: map[string]time.Duration{}}
	s.bs.init()
	s.conc.init()
	s.m.onWrite = s.noteWrite
	if err := s.setup(); err != nil {
		t.Fatal(err)
	}
	s.rd = &concReader{rng: rand.New(rand.NewPCG(1, 2)), stop: make(chan struct{}), done: make(chan struct{})}
	close(s.rd.done)
	t.Cleanup(s.close)
	s.attempted = map[string]int{}
	return s
}

// heldForTest is a reader held as concHoldKey holds one — an OpenSig
// handle, and a descriptor (here a plain file holding read) — noting the
// model's bounds now.
func (s *sim) heldForTest(t *testing.T, e format.Entry, read []byte) *concHold {
	t.Helper()
	k := e.Key()
	sh, err := s.h.OpenSig(s.ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "held-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(read); err != nil {
		t.Fatal(err)
	}
	h := &concHold{key: k, sh: sh, got: sh.Bytes(), f: f, op: s.conc.opNow.Load()}
	s.conc.mu.Lock()
	defer s.conc.mu.Unlock()
	h.ok = append([][]byte{}, s.bs.hist[k][min(s.conc.mountLo[k], len(s.bs.hist[k])):]...)
	h.ever = len(s.conc.ever[k])
	h.mark = s.conc.writeMark(k)
	h.end = s.conc.writeEnd(k)
	return h
}

// TestHeldCheckBesideAMountWrite: the checks' own held readers (opHold,
// read after each refresh by checkHeld) the same way: one whose open
// overlapped a write through the mount of its key may read that write's
// bytes (its first bytes another version's); one opened before the write
// began, or with no write, may not.
func TestHeldCheckBesideAMountWrite(t *testing.T) {
	testwatch.Arm(t) // no mount here (MountPercent 0), but Run's setup can mount
	s := newByteSim(t)
	e, k := s.twelveBytes(t, 1)
	for _, c := range []struct {
		name          string
		during, after bool // a write open when it opened; one begun after
		want          bool // a violation
	}{
		{"opened beside a write", true, false, false},
		{"a write begun after it opened", false, true, true},
		{"no write", false, false, true},
	} {
		var mw *mountWrite
		if c.during {
			mw = s.beginMountWrite(k, refusedWriteStates([]byte("the refused write's bytes")))
		}
		h := s.heldForTest(t, e, []byte{})
		s.bs.held = []*heldReader{{key: k, f: h.f, prefix: []byte("twelve b"), sh: h.sh, ok: h.ok, since: s.op, mark: h.mark, end: h.end}}
		if c.after {
			mw = s.beginMountWrite(k, refusedWriteStates([]byte("the refused write's bytes")))
		}
		s.checkHeld()
		if mw != nil {
			s.doneWriting(k, mw)
		}
		s.dropHeld()
		if got := len(s.res.Violations) > 0; got != c.want {
			t.Errorf("%s: a held reader reading the truncation: violations %v, want one: %v", c.name, s.res.Violations, c.want)
		}
		s.res.Violations = nil
	}
}

// twelveBytes puts sig/cd/0405/alice ("twelve bytes") through the handle
// as operation op, landed and settled: the key the B2 of seed 8023 read.
func (s *sim) twelveBytes(t *testing.T, op int) (format.Entry, string) {
	t.Helper()
	e := format.Entry{Kind: format.KindSig, Object: "cd0405", Value: "alice"}
	s.op = op
	if err := s.putThroughHandle([]index.Write{{Entry: e, Data: []byte("twelve bytes")}}); err != nil {
		t.Fatal(err)
	}
	s.unpend()
	s.settle()
	return e, e.Key()
}
