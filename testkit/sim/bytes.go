package sim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/fs"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/mapcopy"
)

// The byte level (Config.Bytes; see doc.go "Bytes"): the model keeps every
// signature's versions, readers are held to them byte for byte.

// byteOps are the operations byte mode adds to ops.
var byteOps = []opDef{
	{"resign", 12, true, (*sim).opResign},
	{"resign-other", 8, true, (*sim).opResignOther},
	{"forget-reput", 3, true, (*sim).opForgetReput},
	{"hold", 6, false, (*sim).opHold},
	{"mount-write-refused", 2, false, (*sim).opRefusedWrite},
	{"forget-reput-held", 2, false, (*sim).opForgetReputHeld},
	{"oxy-read", 3, false, (*sim).opOxyRead},
	{"slow-read", 3, false, (*sim).opSlowRead},
	{"path-held", 2, false, (*sim).opPathHeld},
}

// maxHeld bounds the descriptors held open at once.
const maxHeld = 4

// byteState is what byte mode knows beyond the model's current bytes.
type byteState struct {
	// hist: per signature key, every version it had since it last came into
	// being (a forgetting starts it again); lo: the first of them a reader
	// of the long-lived handle may still be shown (older versions are ones
	// no reader may show any more). A version the handle cannot know was
	// replaced (an older writer's re-sign, a write whose journal line may
	// not have landed) pins lo until a journaled write or a reopen.
	hist   map[string][][]byte
	lo     map[string]int
	pinned map[string]bool
	own    map[string]bool // keys this operation wrote through the handle and that landed
	held   []*heldReader

	mnt     *fs.Server
	mntDir  string
	mountOp bool           // this operation's byte check reads through the mount too
	maps    *mapcopy.Child // the byte check's mapping child (copyMapping), started at its first use, ended with the run (closeMaps)
	// lingering: a refused write's descriptor kept open (a dup) until the
	// next held-reader check, as a loaded kernel sends the write's RELEASE
	// late: its handle stays on the node, before any reader opened after
	// it, and go-fuse answers a GETATTR that names no file (fstat) with
	// the node's first open file.
	lingering    []*os.File
	lingerWrites []lingerWrite // their writes
}

// lingerWrite is a refused write whose descriptor is kept open.
type lingerWrite struct {
	key string
	w   *mountWrite
}

// heldReader is a signature kept open across operations: a descriptor on
// the mount (f, with the first bytes it read) and the index's own handle
// (sh). Either reads one whole version of ok.
type heldReader struct {
	key    string
	f      *os.File
	prefix []byte
	sh     *index.SigHandle
	ok     [][]byte // the versions it may read: those a reader could be shown when it opened, and every later one
	since  int      // the operation that opened it
	mark   int      // conc.writeMark(key) before f opened, and
	end    int      // conc.writeEnd(key) after: the states of the writes through the mount in [mark, end), which f's open overlapped, may be read too (mountwrite.go)
}

func (b *byteState) init() {
	b.hist, b.lo, b.pinned, b.own = map[string][][]byte{}, map[string]int{}, map[string]bool{}, map[string]bool{}
}

// noteWrite is the model's write hook: a key's bytes changed.
func (s *sim) noteWrite(key string, data []byte, journaled bool) {
	if data == nil || s.bs.hist == nil {
		return
	}
	h := s.bs.hist[key]
	if len(h) > 0 && bytes.Equal(h[len(h)-1], data) {
		return
	}
	s.conc.mu.Lock()
	s.bs.hist[key] = append(h, data)
	s.conc.ever[key] = append(s.conc.ever[key], data)
	s.conc.noteRecent(key)
	if len(h) == 0 {
		s.bs.lo[key] = 0
		s.conc.keys = append(s.conc.keys, key)
	}
	s.conc.mu.Unlock()
	// A write the handle's refresh cannot tell from the journal: an older
	// writer's, or one whose operation had a fault.
	s.bs.pinned[key] = !journaled || s.faulty()
	for _, hr := range s.bs.held {
		if hr.key == key {
			hr.ok = append(hr.ok, data)
		}
	}
}

// window is the versions of key a reader of the long-lived handle may be
// shown now.
func (s *sim) window(key string) [][]byte {
	h := s.bs.hist[key]
	return h[min(s.bs.lo[key], len(h)):]
}

// settle moves every key's window after an operation: to the last version
// for the handle's own writes, and after a refresh or open for every key
// whose last version a journal line tells of.
func (s *sim) settle() {
	s.conc.mu.Lock() // the concurrent reader reads lo
	defer s.conc.mu.Unlock()
	for k := range s.bs.own {
		if n := len(s.bs.hist[k]); n > 0 {
			s.bs.lo[k] = n - 1
		}
	}
	if s.exactHandle == "" {
		return
	}
	reopen := s.exactHandle == "handle-open"
	for k, h := range s.bs.hist {
		if reopen {
			s.bs.pinned[k] = false
		}
		if !s.bs.pinned[k] && len(h) > 0 {
			s.bs.lo[k] = len(h) - 1
		}
	}
	// The mount's window moves only here, after a refresh (and
	// Invalidate) or an open: it hears of the handle's own writes from a
	// goroutine of the index, some time after (index.Subscribe).
	for k := range s.bs.hist {
		s.conc.mountLo[k] = s.bs.lo[k]
	}
}

// resignData returns new bytes for a signature that was old: longer,
// shorter, the same length, or the same length with one byte changed.
func (s *sim) resignData(old []byte) []byte {
	s.sigN++
	fill := func(n int) []byte {
		pat := fmt.Appendf(nil, "re-sign %d|", s.sigN)
		return bytes.Repeat(pat, n/len(pat)+1)[:n]
	}
	switch s.rng.IntN(4) {
	case 0: // longer, past a page now and then
		n := len(old) + 1 + s.rng.IntN(64)
		if s.rng.IntN(4) == 0 {
			n += 4096 + s.rng.IntN(8192)
		}
		return fill(n)
	case 1: // shorter
		return fill(max(1, len(old)/2))
	case 2: // same length, other bytes
		if len(old) == 0 {
			return fill(16)
		}
		d := fill(len(old))
		if bytes.Equal(d, old) {
			d[0] ^= 1
		}
		return d
	default: // same length, one byte changed
		if len(old) == 0 {
			return fill(16)
		}
		d := slices.Clone(old)
		d[s.rng.IntN(len(d))] ^= 0x20 | byte(1+s.rng.IntN(31))
		return d
	}
}

// drawSig draws a signature key the model holds (a re-sign), or a new one.
func (s *sim) drawSig() format.Entry {
	var sigs []string
	for k := range s.m.e {
		if e, _ := format.ParseKey(k); e.Kind == format.KindSig {
			sigs = append(sigs, k)
		}
	}
	slices.Sort(sigs)
	if len(sigs) > 0 && s.rng.IntN(5) != 0 {
		e, _ := format.ParseKey(sigs[s.rng.IntN(len(sigs))])
		return e
	}
	return format.Entry{Kind: format.KindSig, Object: objects[s.rng.IntN(len(objects))], Value: values[s.rng.IntN(len(values))]}
}

func (s *sim) resignWrite() index.Write {
	e := s.drawSig()
	var old []byte
	if en := s.m.e[e.Key()]; en != nil {
		old = en.data
	}
	return index.Write{Entry: e, Data: s.resignData(old)}
}

// opResign: the signer signs again through the long-lived handle.
func (s *sim) opResign() error {
	w := s.resignWrite()
	s.logf("#%d resign (handle) %s %d bytes", s.op, w.Entry.Key(), len(w.Data))
	return s.putThroughHandle([]index.Write{w})
}

// opResignOther: another writer signs again (put --force: store.Put, then
// journal.Append).
func (s *sim) opResignOther() error {
	w := s.resignWrite()
	k := w.Entry.Key()
	s.logf("#%d resign (other writer) %s %d bytes", s.op, k, len(w.Data))
	s.pend(k, w.Data)
	if err := s.st.Put(s.ctx, k, w.Data); err != nil {
		return errors.Join(err, s.deriveKeys([]string{k}))
	}
	s.attempted[k]++
	if _, err := journal.Append(s.ctx, s.st, []string{k}); err != nil {
		return errors.Join(err, s.deriveKeys([]string{k}))
	}
	s.m.written(k, w.Data, true)
	return nil
}

// opForgetReput forgets a signature's object's signatures (gc
// --forget-objects sig --apply), then puts the signature again, through the
// handle or by another writer. Half the time the signature is one of those
// written last (a signer who takes back what they just signed, and signs
// again), which readers are likely to hold open.
func (s *sim) opForgetReput() error {
	e := s.drawSig()
	if s.rng.IntN(2) == 0 {
		s.conc.mu.Lock()
		if n := len(s.conc.recent); n > 0 {
			e, _ = format.ParseKey(s.conc.recent[s.rng.IntN(n)])
		}
		s.conc.mu.Unlock()
	}
	f := fold.ForgetObject{Object: e.Object, Kinds: []format.Kind{format.KindSig}}
	s.noteForget([]fold.ForgetObject{f})
	rep, err := fold.Collect(s.ctx, s.st, fold.CollectOptions{ForgetObjects: []fold.ForgetObject{f}, Apply: true, Warn: nopWarn})
	s.logf("#%d forget %s then re-put %s → %s", s.op, f, e.Key(), gcSummary(&rep))
	if err != nil {
		return s.forgetDone([]fold.ForgetObject{f}, nil, err)
	}
	if err := s.forgetDone([]fold.ForgetObject{f}, &rep, nil); err != nil {
		return err
	}
	if s.rng.IntN(2) == 0 {
		return s.opResignOtherOf(e)
	}
	return s.putThroughHandle([]index.Write{{Entry: e, Data: s.resignData(nil)}})
}

func (s *sim) opResignOtherOf(e format.Entry) error {
	return s.putOther(e.Key(), s.resignData(nil))
}

// opHold opens a signature the handle shows and keeps it open: through the
// mount (reading its first bytes now) and through OpenSig.
func (s *sim) opHold() error {
	if len(s.bs.held) >= maxHeld {
		s.logf("#%d hold: skipped, %d held", s.op, len(s.bs.held))
		return nil
	}
	var keys []string
	for k := range s.m.expected() {
		if e, _ := format.ParseKey(k); e.Kind == format.KindSig && len(s.window(k)) > 0 && s.shown(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		s.logf("#%d hold: nothing to hold", s.op)
		return nil
	}
	slices.Sort(keys)
	s.holdKey(keys[s.rng.IntN(len(keys))])
	return nil
}

// holdKey opens k and keeps it open: through OpenSig and a descriptor on
// the mount (its first bytes read now).
func (s *sim) holdKey(k string) {
	e, _ := format.ParseKey(k)
	hr := &heldReader{key: k, ok: slices.Clone(s.window(k)), since: s.op}
	sh, err := s.h.OpenSig(s.ctx, e)
	if err != nil {
		s.violate("bytes-held-open", "OpenSig %s: %v", k, err)
		return
	}
	hr.sh = sh
	if s.bs.mnt != nil {
		s.conc.mu.Lock()
		hr.mark = s.conc.writeMark(k)
		s.conc.mu.Unlock()
		f, err := os.Open(s.mountPath(k))
		s.conc.mu.Lock()
		hr.end = s.conc.writeEnd(k)
		s.conc.mu.Unlock()
		if err != nil && errors.Is(err, os.ErrNotExist) {
			// Between refreshes a name written elsewhere may not be on the
			// mount yet (the kernel keeps the listings it read).
			sh.Release()
			s.logf("#%d hold %s: not on the mount yet", s.op, k)
			return
		}
		if err != nil {
			sh.Release()
			s.violate("bytes-held-open", "open %s on the mount: %v", k, err)
			return
		}
		hr.f = f
		buf := make([]byte, 8)
		n, err := f.ReadAt(buf, 0)
		if err != nil && !isEOF(err) {
			f.Close()
			sh.Release()
			s.violate("bytes-held-open", "pread %s on the mount: %v", k, err)
			return
		}
		hr.prefix = buf[:n]
		s.res.MountOps++
	}
	s.bs.held = append(s.bs.held, hr)
	s.logf("#%d hold %s (%d held)", s.op, k, len(s.bs.held))
}

// shown reports whether the long-lived handle shows key now.
func (s *sim) shown(key string) bool {
	_, err := s.h.Stat(s.ctx, key)
	return err == nil
}

// opRefusedWrite writes a signature through the mount, has a write refused
// (EFBIG: past fs.MaxWriteBytes), writes again what fits, and closes: the
// close must report the refusal and write nothing.
func (s *sim) opRefusedWrite() error {
	if s.bs.mnt == nil {
		s.logf("#%d mount-write-refused: no mount", s.op)
		return nil
	}
	e := s.drawSig()
	k := e.Key()
	s.logf("#%d mount-write-refused %s", s.op, k)
	// A write open through the mount: a reader of the mount may see its
	// bytes until it is closed (no isolation, as on any filesystem:
	// mountwrite.go). Its bytes are drawn before it opens, so a reader
	// that opens beside it knows every state it may read.
	data := s.resignData(nil)
	mw := s.beginMountWrite(k, refusedWriteStates(data))
	lingers := false
	defer func() {
		if !lingers {
			s.doneWriting(k, mw)
		}
	}()
	s.res.MountOps++
	if err := os.MkdirAll(path.Dir(s.mountPath(k)), 0o755); err != nil {
		s.violateClass("refused-write", classRefused, "mkdir for %s on the mount: %v", k, err)
		return nil
	}
	f, err := os.OpenFile(s.mountPath(k), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		s.violateClass("refused-write", classRefused, "open %s for writing on the mount: %v", k, err)
		return nil
	}
	_, err1 := f.WriteAt(data, 0)
	_, err2 := f.WriteAt([]byte{1}, fs.MaxWriteBytes)
	_, err3 := f.WriteAt(data, int64(len(data)))
	if s.rng.IntN(2) == 0 {
		// F_DUPFD_CLOEXEC: a plain dup(2) is inherited by every child
		// started while it is open (the mapping child, mapcopy), which then
		// holds the mount busy.
		if nfd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0); err == nil {
			s.bs.lingering = append(s.bs.lingering, os.NewFile(uintptr(nfd), k+" (refused write, kept open)"))
			s.bs.lingerWrites = append(s.bs.lingerWrites, lingerWrite{k, mw})
			lingers = true
		}
	}
	errc := f.Close()
	switch {
	case err1 != nil || err3 != nil:
		s.violateClass("refused-write", classRefused, "%s: writes that fit failed: %v, %v", k, err1, err3)
	case err2 == nil:
		s.violateClass("refused-write", classRefused, "%s: a write past %d bytes was not refused", k, fs.MaxWriteBytes)
	case errc == nil:
		s.violateClass("refused-write", classRefused, "%s: close after a refused write succeeded (it must report the refusal and write nothing)", k)
	}
	// Nothing written: the store holds the model's bytes.
	got, err := s.inner.ReadAll(s.ctx, k)
	var want []byte
	if en := s.m.e[k]; en != nil {
		want = en.data
	}
	switch {
	case err != nil && !isNotFound(err):
		return fmt.Errorf("read %s: %w", k, err)
	case (err == nil) != (s.m.e[k] != nil) || !bytes.Equal(got, want):
		s.violateClass("refused-write", classRefused, "%s: a close after a refused write left %d bytes in the store (%v), the model %d", k, len(got), err, len(want))
	}
	return nil
}

func (s *sim) mountPath(key string) string { return s.bs.mntDir + "/" + key }

// mount mounts the long-lived handle (byte mode with MountPercent > 0).
func (s *sim) mount() error {
	m, err := fs.Mount(s.bs.mntDir, s.h, fs.Options{AllowOverwrite: true, LeafIDs: s.cfg.LeafIDs, Logf: func(string, ...any) {}})
	if err != nil {
		return fmt.Errorf("sim: mount %s: %w", s.bs.mntDir, err)
	}
	s.bs.mnt = m
	return nil
}

func (s *sim) unmount() error {
	s.dropHeld()
	s.dropConcHeld()
	s.dropLingering()
	if s.bs.mnt == nil {
		return nil
	}
	m := s.bs.mnt
	s.bs.mnt = nil
	// A child started by another simulation of this process (-j) holds a
	// copy of every descriptor between its fork and its exec, for
	// microseconds on a quiet machine: busy then is tried again, for five
	// seconds at most (one second was too little once, seed 20026, with
	// the load average at 5–12); a descriptor this simulation left open
	// stays busy.
	var err error
	for try := 0; try < 100; try++ {
		if err = m.Unmount(); !errors.Is(err, fs.ErrMountBusy) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("sim: unmount %s: %w", s.bs.mntDir, err)
	}
	return nil
}

// closeMaps ends the byte check's mapping child (at the end of a run).
func (s *sim) closeMaps() {
	if s.bs.maps != nil {
		s.bs.maps.Close()
		s.bs.maps = nil
	}
}

func (s *sim) dropHeld() {
	for _, hr := range s.bs.held {
		if hr.f != nil {
			hr.f.Close()
		}
		hr.sh.Release()
	}
	s.bs.held = nil
}

// dropLingering closes the refused writes' descriptors kept open: their
// RELEASE comes now.
func (s *sim) dropLingering() {
	for _, f := range s.bs.lingering {
		f.Close()
	}
	s.bs.lingering = nil
	for _, lw := range s.bs.lingerWrites {
		s.doneWriting(lw.key, lw.w)
	}
	s.bs.lingerWrites = nil
}
