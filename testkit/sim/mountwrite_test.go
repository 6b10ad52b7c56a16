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
// A reader of the mount whose life overlapped a write through the mount of
// its key may read any bytes that write held (mountwrite.go) — and no
// other bytes: a held reader no write overlapped is still held to whole
// versions. The descriptor here is a plain file holding the bytes the
// mount gave (the kernel's timing decides when it shows them; the model's
// verdict on them is what is tested).
func TestHeldMountReaderBesideAMountWrite(t *testing.T) {
	testwatch.Arm(t) // no mount here (MountPercent 0), but Run's setup can mount
	s := newByteSim(t)
	e := format.Entry{Kind: format.KindSig, Object: "cd0405", Value: "alice"}
	k := e.Key()
	s.op = 32
	if err := s.putThroughHandle([]index.Write{{Entry: e, Data: []byte("twelve bytes")}}); err != nil {
		t.Fatal(err)
	}
	s.unpend()
	s.settle()
	data := []byte("the refused write's bytes")

	for _, c := range []struct {
		name  string
		write bool   // a write through the mount of k began after the hold
		read  []byte // what the held descriptor reads
		want  bool   // a violation
	}{
		{"the write's truncation, beside the write", true, []byte{}, false},
		{"the write's bytes, beside the write", true, data, false},
		{"the write's bytes twice, beside the write", true, append(append([]byte{}, data...), data...), false},
		{"the version held, beside the write", true, []byte("twelve bytes"), false},
		{"the truncation, no write", false, []byte{}, true},
		{"other bytes, beside the write", true, []byte("no such version"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.op++
			s.conc.opNow.Store(int64(s.op))
			h := s.heldForTest(t, e, c.read)
			if c.write {
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
	e := format.Entry{Kind: format.KindSig, Object: "cd0405", Value: "alice"}
	k := e.Key()
	s.op = 1
	if err := s.putThroughHandle([]index.Write{{Entry: e, Data: []byte("twelve bytes")}}); err != nil {
		t.Fatal(err)
	}
	s.unpend()
	s.settle()
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
	return h
}

// TestHeldCheckBesideAMountWrite: the checks' own held readers (opHold,
// read after each refresh by checkHeld) the same way: one whose life
// overlapped a write through the mount of its key may read that write's
// bytes (its first bytes another version's); one no write overlapped may
// not.
func TestHeldCheckBesideAMountWrite(t *testing.T) {
	testwatch.Arm(t) // no mount here (MountPercent 0), but Run's setup can mount
	s := newByteSim(t)
	e := format.Entry{Kind: format.KindSig, Object: "cd0405", Value: "alice"}
	k := e.Key()
	s.op = 1
	if err := s.putThroughHandle([]index.Write{{Entry: e, Data: []byte("twelve bytes")}}); err != nil {
		t.Fatal(err)
	}
	s.unpend()
	s.settle()
	for _, write := range []bool{true, false} {
		h := s.heldForTest(t, e, []byte{})
		s.bs.held = []*heldReader{{key: k, f: h.f, prefix: []byte("twelve b"), sh: h.sh, ok: h.ok, since: s.op, mark: h.mark}}
		if write {
			mw := s.beginMountWrite(k, refusedWriteStates([]byte("the refused write's bytes")))
			s.checkHeld()
			s.doneWriting(k, mw)
		} else {
			s.checkHeld()
		}
		s.dropHeld()
		if got := len(s.res.Violations) > 0; got == write {
			t.Errorf("a held reader reading the truncation, a write through the mount beside it %v: violations %v", write, s.res.Violations)
		}
		s.res.Violations = nil
	}
}
