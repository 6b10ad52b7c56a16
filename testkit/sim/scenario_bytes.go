package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"sync"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
)

// classOxy: a debug view of the layout (.oxy/journal, .oxy/retired) shows
// other than the store holds right after a refresh.
const classOxy = "O1"

// opForgetReputHeld plays issue 37 item 1 (byte mode): a signature whose
// only journal line is the last one (another writer's put, after a fold),
// held open (OpenSig, and a descriptor on the mount) across a forget of
// its object's signatures and another writer's put again — the same length
// half the time — then a refresh. The journal and the lists then read as
// the held version's view saw them; only the forget record tells. Every
// new open after the refresh (the check's, the concurrent reader's) must
// read the new bytes, and the held readers keep the old.
func (s *sim) opForgetReputHeld() error {
	if len(s.bs.held) >= maxHeld {
		s.logf("#%d forget-reput-held: skipped, %d held", s.op, len(s.bs.held))
		return nil
	}
	k := s.freshSigKey()
	e, _ := format.ParseKey(k)
	s.logf("#%d forget-reput-held %s: fold, put (other writer), refresh, hold, forget, put again, refresh", s.op, k)
	if err := s.opFold(); err != nil {
		return err
	}
	if err := s.putOther(k, s.resignData(nil)); err != nil {
		return err
	}
	if err := s.refreshMid(); err != nil {
		return err
	}
	s.exactHandle = "handle-refresh"
	s.holdKey(k)
	f := fold.ForgetObject{Object: e.Object, Kinds: []format.Kind{format.KindSig}}
	if err := s.forgetOne(f); err != nil {
		return err
	}
	var old []byte
	if h := s.bs.hist[k]; len(h) > 0 {
		old = h[len(h)-1]
	}
	again := s.resignData(nil)
	if len(old) > 0 && s.rng.IntN(2) == 0 {
		again = bytes.Repeat([]byte{'A' + byte(s.sigN%26)}, len(old)) // the same length
	}
	if err := s.putOther(k, again); err != nil {
		return err
	}
	err := s.h.Refresh(s.ctx)
	s.logf("#%d   put again %d bytes (was %d), refresh", s.op, len(again), len(old))
	if err != nil {
		return err
	}
	s.exactHandle = "handle-refresh"
	// A new open at once, as a mount's open of the name is (the check's
	// reads come later, and a read by anyone that finds the new bytes
	// first moves the version, after which no open shares the held copy).
	sh, err := s.h.OpenSig(s.ctx, e)
	if err != nil {
		s.wrongBytes("bytes-forget-held-open", classNewOpen, k, nil, err, [][]byte{again})
		return nil
	}
	if got := sh.Bytes(); !bytes.Equal(got, again) {
		s.wrongBytes("bytes-forget-held-open", classNewOpen, k, got, nil, [][]byte{again})
	}
	sh.Release()
	return nil
}

// freshSigKey is a signature key of an object with no signature the model
// holds, if there is one (its forget then takes no other key's line), else
// any.
func (s *sim) freshSigKey() string {
	for _, i := range s.rng.Perm(len(objects)) {
		obj, taken := objects[i], false
		for k := range s.m.e {
			if e, _ := format.ParseKey(k); e.Kind == format.KindSig && e.Object == obj {
				taken = true
				break
			}
		}
		if !taken {
			return keyOf(format.KindSig, obj, values[s.rng.IntN(len(values))])
		}
	}
	return s.drawSig().Key()
}

// putOther is another writer's put (put --force): the key, then its line.
func (s *sim) putOther(k string, data []byte) error {
	s.pend(k, data)
	if err := s.st.Put(s.ctx, k, data); err != nil {
		return errors.Join(err, s.deriveKeys([]string{k}))
	}
	s.attempted[k]++
	if _, err := journal.Append(s.ctx, s.st, []string{k}); err != nil {
		return errors.Join(err, s.deriveKeys([]string{k}))
	}
	s.m.written(k, data, true)
	return nil
}

// refreshMid refreshes the handle within an operation, and tells the
// mount, as its refresh loop does.
func (s *sim) refreshMid() error {
	if err := s.h.Refresh(s.ctx); err != nil {
		return err
	}
	if s.bs.mnt != nil {
		s.bs.mnt.Invalidate()
	}
	return nil
}

// opOxyRead is a debug session on .oxy/ (byte mode): a stat of each
// (ls -l), a refresh, then .oxy/journal and .oxy/retired read through the
// mount (or, with no mount,
// the handle's JournalText and RetiredText), each of which must be the
// record the store holds, with a stat that says its length. Before issue
// 37 the mount kept the text rendered before the refresh for 10 s
// (Config.TolerateOxyHold lets that pass).
func (s *sim) opOxyRead() error {
	if s.bs.mnt != nil {
		// ls -l .oxy before the refresh: a stat renders each text.
		for _, name := range []string{"journal", "retired"} {
			_, _ = os.Stat(path.Join(s.bs.mntDir, ".oxy", name))
		}
	}
	err := s.refreshMid()
	s.logf("#%d oxy-read: refresh, .oxy/journal and .oxy/retired", s.op)
	if err != nil {
		return err
	}
	s.exactHandle = "handle-refresh"
	for _, rec := range []struct{ name, key string }{{"journal", format.JournalKey}, {"retired", format.RetiredKey}} {
		want, _, err := s.clean.ReadRecord(s.ctx, rec.key)
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("read %s: %w", rec.key, err)
		}
		var got []byte
		size := int64(-1)
		if s.bs.mnt != nil {
			p := path.Join(s.bs.mntDir, ".oxy", rec.name)
			got, err = os.ReadFile(p)
			if fi, serr := os.Stat(p); serr == nil {
				size = fi.Size()
			}
			s.res.MountOps++
		} else {
			var text string
			if rec.name == "journal" {
				text, err = s.h.JournalText(s.ctx)
			} else {
				text, err = s.h.RetiredText(s.ctx)
			}
			got, size = []byte(text), int64(len(text))
		}
		s.res.BytesCompared += int64(len(got))
		switch {
		case err != nil:
			s.violateClass("oxy-"+rec.name, classOxy, "read .oxy/%s after a refresh: %v", rec.name, err)
		case !bytes.Equal(got, want) && !s.cfg.TolerateOxyHold:
			s.violateClass("oxy-"+rec.name, classOxy, ".oxy/%s after a refresh: %d bytes, the store's %s %d bytes", rec.name, len(got), rec.key, len(want))
		case size != int64(len(got)) && !s.cfg.TolerateOxyHold:
			s.violateClass("oxy-"+rec.name, classOxy, ".oxy/%s after a refresh: stat says %d bytes, a read gave %d", rec.name, size, len(got))
		}
	}
	return nil
}

// opSlowRead plays a slow GET racing a re-sign and a refresh (byte mode;
// the stale flight, d705985): a background read of a signature (the
// concurrent reader's kind) sends its GET, which finds the current bytes
// and holds them back (injector.gate); another writer re-signs the key and
// the handle refreshes; a read that begins then must read the new bytes,
// not join the read in flight the refresh made stale. The held GET is
// let go 50 ms after that read began (it waits for it only if it joined),
// or a second after it was held, whichever comes first.
func (s *sim) opSlowRead() error {
	e := s.drawSig()
	k := e.Key()
	// Put (or re-sign) and refresh first: the refresh drops the key's
	// cached bytes, so the background read sends a GET.
	if err := s.putOther(k, s.resignData(nil)); err != nil {
		return err
	}
	if err := s.refreshMid(); err != nil {
		return err
	}
	s.exactHandle = "handle-refresh"
	g := &gate{key: k, open: make(chan struct{}), started: make(chan struct{})}
	s.inj.mu.Lock()
	s.inj.gate = g
	s.inj.mu.Unlock()
	defer func() {
		s.inj.mu.Lock()
		s.inj.gate = nil
		s.inj.mu.Unlock()
	}()
	var release sync.Once
	open := func() { release.Do(func() { close(g.open) }) }
	defer open()
	// Opened in a second whatever happens: a lookup on the mount (the
	// concurrent reader's) that joined the held GET holds its directory,
	// which the refresh's Invalidate below waits for.
	safety := time.AfterFunc(time.Second, open)
	defer safety.Stop()
	// The bytes are drawn before the race, and the re-sign happens
	// whether a GET was held or not: the operations after it draw the
	// same numbers either way, so a seed run again replays them.
	data := s.resignData(s.m.e[k].data)
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		_, _ = s.h.ReadSig(context.WithValue(s.ctx, concKey{}, true), e)
	}()
	held := true
	select {
	case <-g.started:
	case <-bgDone: // answered from the cache (read again since the refresh): nothing to race
		held = false
		s.logf("#%d slow-read %s: no GET held", s.op, k)
	case <-time.After(5 * time.Second):
		open()
		<-bgDone
		held = false
		s.logf("#%d slow-read %s: no GET held within 5 s", s.op, k)
	}
	if err := s.putOther(k, data); err != nil {
		open()
		<-bgDone
		return err
	}
	if err := s.refreshMid(); err != nil {
		open()
		<-bgDone
		return err
	}
	s.exactHandle = "handle-refresh"
	timer := time.AfterFunc(50*time.Millisecond, open)
	defer timer.Stop()
	got, err := s.h.ReadSig(s.ctx, e)
	open()
	<-bgDone
	if !held {
		s.logf("#%d slow-read %s: re-sign (other writer) %d bytes, refresh, read", s.op, k, len(data))
	} else {
		s.logf("#%d slow-read %s: a background GET held, re-sign (other writer) %d bytes, refresh, read", s.op, k, len(data))
	}
	if err != nil || !bytes.Equal(got, data) {
		s.wrongBytes("bytes-stale-flight", classNewOpen, k, got, err, [][]byte{data})
	}
	return nil
}
