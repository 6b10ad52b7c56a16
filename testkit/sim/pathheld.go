package sim

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/oxyfs/oxyfs/store/format"
)

// opPathHeld plays a path descriptor held across re-signs (byte mode, with
// a mount): a program holds a signature by an O_PATH descriptor (no OPEN:
// no handle keeps the mount's node of it), and stats it now and then, as
// stat --cached=never (statx with AT_STATX_FORCE_SYNC: the kernel asks the
// mount) and plain fstat (the kernel answers from what it cached) do,
// while another writer re-signs it three times, each followed by a refresh.
//
// The descriptor holds the kernel's inode of the version it was opened on
// (v1), whose name the mount drops at every change: every stat of it
// reaches that node (with leaf ids, a GETATTR of the older version's leaf
// id — the only request from userspace that reaches one). The mount
// answers a node of a version that is no longer the signature's ESTALE,
// or — within the retry window of its lookup (fs/entry.go: retried) — the
// current size, not cached; its own version's size while that is current,
// cached. So a stat of it may show ESTALE, v1's size or the current one —
// never the size of a version that is neither, which only a node answered
// as current and cached would keep (the stale-node-kept mutation: v2's
// size after the second re-sign; caught here with leaf ids too, where the
// names are dropped on every change whatever the node's staleness says).
// Class B3 (bytes-path-held).
func (s *sim) opPathHeld() error {
	if s.bs.mnt == nil {
		s.logf("#%d path-held: no mount", s.op)
		return nil
	}
	// The concurrent reader waits meanwhile, as while the handle is
	// replaced: a LOOKUP of the name it sent while a change's notice went
	// out could leave the kernel a name of the older version (the kernel
	// installs a reply that crossed the notice), through which an open
	// could make the node take a later version (adopt) or hold one — all
	// fine for a reader, but not what this holds the node to.
	s.inj.slow.releaseAll() // a slow read holds handleMu read-locked
	s.handleMu.Lock()
	defer s.handleMu.Unlock()
	k := s.pathHeldKey()
	v1 := s.pathHeldData(0)
	if h := s.bs.hist[k]; len(h) > 0 {
		v1 = s.pathHeldData(len(h[len(h)-1]) + 1)
	}
	s.logf("#%d path-held %s: put (other writer, %d bytes), refresh, open O_PATH; three re-signs, each refreshed and stat'd", s.op, k, len(v1))
	if err := s.putOther(k, v1); err != nil {
		return err
	}
	if err := s.refreshMid(); err != nil {
		return err
	}
	s.exactHandle = "handle-refresh"
	s.res.MountOps++
	fd, err := unix.Open(s.mountPath(k), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		s.violateClass("bytes-path-held", classStat, "%s: open O_PATH on the mount after a refresh: %v", k, err)
		return nil
	}
	defer unix.Close(fd)
	// The size the node may answer as its own: v1's (nothing opens it:
	// it keeps its version).
	own := []int{len(v1)}
	s.pathStat(k, fd, true, own, len(v1), "after the open")
	for i := 2; i <= 4; i++ {
		vi := s.pathHeldData(len(v1) + 97*(i-1))
		if err := s.putOther(k, vi); err != nil {
			return err
		}
		if err := s.refreshMid(); err != nil {
			return err
		}
		when := fmt.Sprintf("after re-sign %d of 3 (%d bytes)", i-1, len(vi))
		s.pathStat(k, fd, false, own, len(vi), when)
		s.pathStat(k, fd, true, own, len(vi), when)
	}
	return nil
}

// pathStat stats the path descriptor fd of k (force: asking the mount,
// AT_STATX_FORCE_SYNC; else as fstat does, from the kernel's cache when it
// holds the attributes): ESTALE, a size of own, or cur, the current
// version's size.
func (s *sim) pathStat(k string, fd int, force bool, own []int, cur int, when string) {
	flags := unix.AT_EMPTY_PATH
	how := "fstat"
	if force {
		flags |= unix.AT_STATX_FORCE_SYNC
		how = "statx AT_STATX_FORCE_SYNC"
	}
	var stx unix.Statx_t
	err := unix.Statx(fd, "", flags, unix.STATX_BASIC_STATS, &stx)
	s.res.MountOps++
	switch {
	case errors.Is(err, unix.ESTALE):
	case err != nil:
		s.violateClass("bytes-path-held", classStat, "%s: %s of a path descriptor %s: %v; want ESTALE or sizes %v or %d", k, how, when, err, own, cur)
	case int(stx.Size) != cur && !slices.Contains(own, int(stx.Size)):
		s.violateClass("bytes-path-held", classStat, "%s: %s of a path descriptor %s: %d bytes; want ESTALE, the sizes %v of the version it was opened on (or took), or the current %d; %s", k, how, when, stx.Size, own, cur, s.pathNow(k))
	}
}

// pathHeldKey is a signature key with no write through the mount open or
// kept open (a write's node answers for its bytes), the model's if there
// is one.
func (s *sim) pathHeldKey() string {
	busy := func(k string) bool {
		s.conc.mu.Lock()
		defer s.conc.mu.Unlock()
		return s.conc.writing[k] > 0 || slices.ContainsFunc(s.bs.lingerWrites, func(lw lingerWrite) bool { return lw.key == k })
	}
	for range 8 {
		if k := s.drawSig().Key(); !busy(k) {
			return k
		}
	}
	for _, o := range objects {
		for _, v := range values {
			if k := keyOf(format.KindSig, o, v); !busy(k) {
				return k
			}
		}
	}
	return s.drawSig().Key()
}

// pathHeldData is signature bytes of length n (at least 16), of their own.
func (s *sim) pathHeldData(n int) []byte {
	s.sigN++
	pat := fmt.Appendf(nil, "path-held %d|", s.sigN)
	n = max(n, 16)
	return bytes.Repeat(pat, n/len(pat)+1)[:n]
}

// pathNow says what the handle and a stat by name show of k now (a
// violation's detail).
func (s *sim) pathNow(k string) string {
	e, _ := format.ParseKey(k)
	st := s.h.SigState(e)
	var b strings.Builder
	fmt.Fprintf(&b, "the handle's version %d", st.Version)
	if sh, err := s.h.OpenSig(s.ctx, e); err != nil {
		fmt.Fprintf(&b, ", OpenSig: %v", err)
	} else {
		fmt.Fprintf(&b, ", OpenSig: %d bytes (version %d)", len(sh.Bytes()), sh.Version())
		sh.Release()
	}
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, s.mountPath(k), unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &stx)
	fmt.Fprintf(&b, ", statx by name: %d bytes (%v)", stx.Size, err)
	return b.String()
}
