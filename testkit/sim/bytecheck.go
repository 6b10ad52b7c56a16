package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/mapcopy"
	"github.com/oxyfs/oxyfs/web"
)

// Byte classes (Classes): which promise a byte violation breaks.
const (
	classNewOpen = "B1" // a new open or read shows other bytes than a version the model allows
	classHeld    = "B2" // a descriptor held across changes does not read one whole version
	classStat    = "B3" // stat's size is no allowed version's
	classRefused = "B4" // a refused write did not stay refused
)

// checkBytes holds every reader to the model's bytes after an operation
// (byte mode): the handle's ReadSig and OpenSig, serve's GET, and on a
// share of operations the mount (read, pread, mmap, stat); then every held
// reader, after a refresh.
func (s *sim) checkBytes() {
	s.settle()
	var keys []string
	if s.exactHandle != "" {
		// What the handle must show, as the entry check holds it
		// (handleWant): a key that only a failed fold's list covers may
		// be missing from a handle that has not seen that list yet, and
		// then serve and the mount rightly answer 404 and ENOENT.
		for k := range s.hs.want {
			if e, _ := format.ParseKey(k); e.Kind == format.KindSig {
				keys = append(keys, k)
			}
		}
	} else {
		for k := range s.bs.own {
			if s.m.e[k] != nil {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	if s.bs.mountOp && s.exactHandle != "" && len(keys) > 0 {
		s.res.MountOps++
	}
	for _, k := range keys {
		w := s.window(k)
		if len(w) == 0 {
			continue
		}
		s.readerBytes(k, w)
	}
	if s.exactHandle != "" {
		s.checkHeld()
	}
}

// matches reports whether got is one of the versions in w.
func matches(got []byte, w [][]byte) bool {
	return slices.ContainsFunc(w, func(v []byte) bool { return bytes.Equal(v, got) })
}

func sizes(w [][]byte) []int {
	out := make([]int, len(w))
	for i, v := range w {
		out[i] = len(v)
	}
	return out
}

func (s *sim) wrongBytes(kind, class, key string, got []byte, err error, w [][]byte) {
	s.violateClass(kind, class, "%s: %d bytes %q…, err %v; the model allows %d version(s) of sizes %v", key, len(got), got[:min(len(got), 24)], err, len(w), sizes(w))
}

// readerBytes reads key through every reader and compares with w.
func (s *sim) readerBytes(k string, w [][]byte) {
	e, _ := format.ParseKey(k)
	// OpenSig (and serve, which opens) before ReadSig: a ReadSig that
	// finds other bytes moves the version, after which no open could be
	// handed a copy held readers keep (issue 37 item 1), as a mount's
	// opens, which never ReadSig, were.
	stop := s.unstall(k)
	sh, err := s.h.OpenSig(s.ctx, e)
	stop()
	if err != nil {
		s.wrongBytes("bytes-handle-open", classNewOpen, k, nil, err, w)
	} else {
		got := sh.Bytes()
		s.res.BytesCompared += int64(len(got))
		if !matches(got, w) {
			s.wrongBytes("bytes-handle-open", classNewOpen, k, got, nil, w)
		}
		sh.Release()
	}
	defer func() {
		stop := s.unstall(k)
		got, err := s.h.ReadSig(s.ctx, e)
		stop()
		s.res.BytesCompared += int64(len(got))
		if err != nil || !matches(got, w) {
			s.wrongBytes("bytes-handle-read", classNewOpen, k, got, err, w)
		}
	}()
	rec := httptest.NewRecorder()
	stop = s.unstall(k)
	s.web.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/"+k, nil))
	stop()
	body := rec.Body.Bytes()
	s.res.BytesCompared += int64(len(body))
	if rec.Code != http.StatusOK || !matches(body, w) {
		s.wrongBytes("bytes-serve", classNewOpen, k, body, fmt.Errorf("status %d", rec.Code), w)
	}
	// The mount only after a refresh (and Invalidate): the index tells the
	// kernel of its own writes from a goroutine of its own, some time
	// after (index.Subscribe), so a stat just after a write made
	// elsewhere than the mount may still see the old size.
	if s.bs.mountOp && s.bs.mnt != nil && s.exactHandle != "" {
		// A write through the mount still open (its descriptor kept): a
		// new open may read its bytes (mountwrite.go).
		wm := append(slices.Clone(w), s.openWriteStates(k)...)
		stop := s.unstall(k)
		s.mountBytes(k, wm)
		stop()
	}
}

// mountBytes reads key through the mount: stat, read, pread, mmap.
func (s *sim) mountBytes(k string, w [][]byte) {
	p := s.mountPath(k)
	fi, err := os.Stat(p)
	if err != nil || !slices.Contains(sizes(w), int(fi.Size())) {
		size := int64(-1)
		if err == nil {
			size = fi.Size()
		}
		s.violateClass("bytes-mount-stat", classStat, "%s: stat size %d, err %v; the model allows sizes %v; %s", k, size, err, sizes(w), statAgain(p))
	}
	got, err := readFile(p)
	s.res.BytesCompared += int64(len(got))
	if err != nil || !matches(got, w) {
		s.wrongBytes("bytes-mount-read", classNewOpen, k, got, err, w)
	}
	f, err := os.Open(p)
	if err != nil {
		s.wrongBytes("bytes-mount-pread", classNewOpen, k, nil, err, w)
		return
	}
	defer f.Close()
	// pread in pieces from the end back, so the kernel cannot read ahead
	// what it is asked next.
	got, err = preadAll(f)
	s.res.BytesCompared += int64(len(got))
	if err != nil || !matches(got, w) {
		s.wrongBytes("bytes-mount-pread", classNewOpen, k, got, err, w)
	}
	fi, err = f.Stat()
	if err != nil || fi.Size() == 0 {
		return
	}
	got, err = s.copyMapping(&s.bs.maps, f, int(fi.Size()), false)
	if err != nil {
		s.wrongBytes("bytes-mount-mmap", classNewOpen, k, nil, err, w)
		return
	}
	s.res.BytesCompared += int64(len(got))
	if !matches(got, w) {
		s.wrongBytes("bytes-mount-mmap", classNewOpen, k, got, nil, w)
	}
	// A shared mapping too (MAP_SHARED, PROT_READ: Python's mmap default).
	got, err = s.readShared(p, &s.bs.maps)
	switch {
	case err != nil && errors.Is(err, syscall.ENODEV) && s.cfg.TolerateSharedENODEV:
	case err != nil || !matches(got, w):
		s.wrongBytes("bytes-mount-mmap-shared", classNewOpen, k, got, err, w)
	default:
		s.res.BytesCompared += int64(len(got))
	}
}

// statAgain says what a second stat of p, and an fstat and a read of a
// fresh open of it, answer — after a stat said a size no allowed version
// has: it tells a size the kernel kept (the second stat agrees, the open
// does not) from one the mount answered.
func statAgain(p string) string {
	var b strings.Builder
	if fi, err := os.Stat(p); err != nil {
		fmt.Fprintf(&b, "a second stat: %v", err)
	} else {
		fmt.Fprintf(&b, "a second stat: %d", fi.Size())
	}
	f, err := os.Open(p)
	if err != nil {
		fmt.Fprintf(&b, ", an open: %v", err)
		return b.String()
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		fmt.Fprintf(&b, ", its fstat: %v", err)
	} else {
		fmt.Fprintf(&b, ", its fstat: %d", fi.Size())
	}
	got, err := preadAll(f)
	fmt.Fprintf(&b, ", its read: %d bytes (%v)", len(got), err)
	return b.String()
}

// readFile reads p with read(2) to EOF, at most maxSigRead bytes.
func readFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSigRead+1))
	if err == nil && len(b) > maxSigRead {
		err = fmt.Errorf("no end found after %d bytes", len(b))
	}
	return b, err
}

// maxSigRead bounds what preadAll reads: far more than any signature the
// simulation writes (a read past it is a reader that never finds the end).
const maxSigRead = 1 << 20

// copyMapping maps size bytes of f (MAP_SHARED if shared, else
// MAP_PRIVATE; read-only) in a child process and returns their copy
// (mapcopy: a page fault on a mapping of this process's own mount, served
// by this process, can hang the runtime). The child is started at the
// first use and kept in *child until unmount.
func (s *sim) copyMapping(child **mapcopy.Child, f *os.File, size int, shared bool) ([]byte, error) {
	if *child == nil {
		c, err := mapcopy.Start()
		if err != nil {
			return nil, err
		}
		*child = c
	}
	return (*child).Copy(f, size, shared)
}

// preadAll reads f to its end with pread, from offset 0 in pieces of 1000.
func preadAll(f *os.File) ([]byte, error) {
	var out []byte
	buf := make([]byte, 1000)
	for off := int64(0); ; {
		if off > maxSigRead {
			return out, fmt.Errorf("no end found after %d bytes", off)
		}
		n, err := f.ReadAt(buf, off)
		out = append(out, buf[:n]...)
		off += int64(n)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if n == 0 {
			return out, io.ErrNoProgress
		}
	}
}

// checkHeld reads every held reader to its end, after a refresh: one whole
// version it may read. Half of them are closed then; the others are kept
// across later changes.
func (s *sim) checkHeld() {
	kept := s.bs.held[:0]
	for _, hr := range s.bs.held {
		got := hr.sh.Bytes()
		s.res.BytesCompared += int64(len(got))
		if !matches(got, hr.ok) {
			s.violateClass("bytes-held-handle", classHeld, "%s held since op %d (OpenSig): %d bytes %q…, not one of the %d versions of sizes %v", hr.key, hr.since, len(got), got[:min(len(got), 24)], len(hr.ok), sizes(hr.ok))
		}
		if hr.f != nil {
			s.res.MountOps++
			// A write through the mount of its key its open overlapped:
			// it may read that write's bytes (mountwrite.go), its first
			// bytes another's.
			s.conc.mu.Lock()
			beside := s.conc.writeStatesIn(hr.key, hr.mark, hr.end)
			s.conc.mu.Unlock()
			ok := append(slices.Clone(hr.ok), beside...)
			whole, err := preadAll(hr.f)
			s.res.BytesCompared += int64(len(whole))
			if _, serr := hr.f.Seek(int64(len(hr.prefix)), io.SeekStart); serr == nil && err == nil {
				rest, rerr := io.ReadAll(hr.f)
				if rerr != nil || !bytes.Equal(rest, whole[min(len(whole), len(hr.prefix)):]) {
					s.violateClass("bytes-held-mount", classHeld, "%s held since op %d: read to EOF after its first %d bytes gave %d bytes (%v), pread %d", hr.key, hr.since, len(hr.prefix), len(rest), rerr, len(whole))
				}
			}
			switch {
			case err != nil || !matches(whole, ok):
				s.violateClass("bytes-held-mount", classHeld, "%s held since op %d: %d bytes %q… (err %v), not one of the %d versions of sizes %v", hr.key, hr.since, len(whole), whole[:min(len(whole), 24)], err, len(ok), sizes(ok))
			case len(beside) == 0 && !bytes.HasPrefix(whole, hr.prefix):
				s.violateClass("bytes-held-mount", classHeld, "%s held since op %d: its first bytes %q were of another version than the rest (%q…)", hr.key, hr.since, hr.prefix, whole[:min(len(whole), 24)])
			}
			if fi, err := hr.f.Stat(); err != nil || fi.Size() != int64(len(whole)) {
				s.violateClass("bytes-held-mount", classHeld, "%s held since op %d: fstat %v (%v), its bytes %d", hr.key, hr.since, fi, err, len(whole))
			}
		}
		if s.rng.IntN(2) == 0 {
			kept = append(kept, hr)
			continue
		}
		if hr.f != nil {
			hr.f.Close()
		}
		hr.sh.Release()
	}
	clear(s.bs.held[len(kept):])
	s.bs.held = kept
	s.dropLingering()
}

func (s *sim) violateClass(kind, class, format string, args ...any) {
	v := Violation{Kind: kind, Op: s.op, Detail: fmt.Sprintf(format, args...), Class: class}
	s.res.Violations = append(s.res.Violations, v)
	s.logf("   VIOLATION %s", v)
}

// newWeb is serve's handler on the long-lived handle.
func (s *sim) newWeb() { s.web = web.Handler(s.h, web.Options{Logf: func(string, ...any) {}}) }
