package fs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestMappingOpenedBeforeAReSignKeepsItsVersion (issue 37 trial: a
// Python verifier's mmap.mmap(fd, 0, access=ACCESS_READ) died of SIGBUS
// when the same mount re-signed the signature, 10 of 10 runs): a
// MAP_SHARED mapping and a descriptor opened before this mount opens the
// name O_TRUNC to re-sign it keep the version they opened, whole, while
// the write is open and after it landed. Before, the write opened the
// readers' own node, whose size the kernel set to 0 at the truncating
// open (and dropped its pages): the mapping faulted past the new end, and
// reads found 0 bytes or the old bytes cut short. The same for an open
// without O_TRUNC that truncates after (ftruncate).
func TestMappingOpenedBeforeAReSignKeepsItsVersion(t *testing.T) {
	// A truncating open (cp, >, Python's "w"), and an open that truncates
	// after (Python's "r+b" then truncate(), rsync --inplace, truncate -s):
	// the kernel sizes the node the write is open on from the write.
	t.Run("O_TRUNC", func(t *testing.T) {
		mappingAcrossAReSign(t, func(p string) (*os.File, error) {
			return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		})
	})
	t.Run("ftruncate", func(t *testing.T) {
		mappingAcrossAReSign(t, func(p string) (*os.File, error) {
			w, err := os.OpenFile(p, os.O_RDWR, 0o644)
			if err != nil {
				return nil, err
			}
			if err := w.Truncate(0); err != nil {
				w.Close()
				return nil, err
			}
			return w, nil
		})
	})
}

func mappingAcrossAReSign(t *testing.T, open func(p string) (*os.File, error)) {
	f, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	old := f.sigs[alice.Key()]
	p := srv.path(alice)
	m, err := mapShared(t, p)
	if err != nil {
		t.Fatalf("MAP_SHARED: %v", err)
	}
	if got := m.read(); !bytes.Equal(got, old) {
		t.Fatalf("the mapping shows %d bytes, want the %d of the version", len(got), len(old))
	}
	held, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	w, err := open(p)
	if err != nil {
		t.Fatalf("open to re-sign: %v", err)
	}
	defer w.Close()
	if got := m.read(); !bytes.Equal(got, old) {
		t.Errorf("after the truncating open, the mapping shows %d bytes %.8q…, want the %d of its version", len(got), got, len(old))
	}
	checkHeldWhole(t, "held across the truncating open", held, old)
	written := bytes.Repeat([]byte("N"), len(old)/2)
	if _, err := w.Write(written); err != nil {
		t.Fatal(err)
	}
	if got := m.read(); !bytes.Equal(got, old) {
		t.Errorf("beside the write, the mapping shows %d bytes, want the %d of its version", len(got), len(old))
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close of the re-sign: %v", err)
	}
	if got := m.read(); !bytes.Equal(got, old) {
		t.Errorf("after the re-sign landed, the mapping shows %d bytes, want the %d of its version", len(got), len(old))
	}
	checkHeldWhole(t, "held across the re-sign", held, old)
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, written) {
		t.Errorf("a new read after the re-sign: %d bytes (%v), want the %d written", len(got), err, len(written))
	}
}

// A mapping made beside this mount's own write (it maps the write's bytes,
// live) keeps them once the write lands and a shorter write of the same
// name comes through the mount: the second write must not open the
// mapping's node, which the kernel would size by it (SIGBUS past 16 bytes).
// And a stat by path just after the second write's close says its size.
// (Issue 37's last user trial: 18 of 18 SIGBUS.)
func TestMappingBesideAnOwnWriteKeepsItsBytesAcrossTheNext(t *testing.T) {
	_, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	p := srv.path(storefixture.Ent(format.KindSig, "ab12cd34", "alice"))
	// Three rounds on one name: the later ones begin on the node the
	// earlier second write left.
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) { mappingBesideAnOwnWrite(t, p) })
	}
}

func mappingBesideAnOwnWrite(t *testing.T, p string) {
	first := bytes.Repeat([]byte("A"), 128<<10)
	w1 := openReSign(t, p)
	if _, err := w1.Write(first); err != nil {
		t.Fatal(err)
	}
	m, err := mapShared(t, p)
	if err != nil {
		t.Fatalf("MAP_SHARED beside the write: %v", err)
	}
	if got := m.read(); !bytes.Equal(got, first) {
		t.Fatalf("the mapping beside the write shows %d bytes, want the %d written", len(got), len(first))
	}
	held, err := os.Open(p) // a read beside the write too: its fstat and its reads agree
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := w1.Close(); err != nil {
		t.Fatalf("close of the first write: %v", err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() != int64(len(first)) {
		t.Errorf("stat after the first write landed: %v %v, want %d bytes", fi.Size(), err, len(first))
	}
	second := []byte("BBBBBBBBBBBBBBBB")
	w2 := openReSign(t, p)
	if _, err := w2.Write(second); err != nil {
		t.Fatal(err)
	}
	// While the second write is open, the read beside the first keeps
	// what it read, its fstat too.
	checkHeldWhole(t, "a read opened beside the first write, during the second", held, first)
	if err := w2.Close(); err != nil {
		t.Fatalf("close of the second write: %v", err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() != int64(len(second)) {
		t.Errorf("stat just after the second write's close: %v %v, want %d bytes", fi.Size(), err, len(second))
	}
	if got := m.read(); !bytes.Equal(got, first) {
		t.Errorf("after a shorter write, the mapping shows %d bytes, want the %d it mapped", len(got), len(first))
	}
	// Its fstat and its reads agree: the first write's bytes. (From the
	// second round on, the second write's bytes are the node's own
	// version's, the first round's second write's: the node must not take
	// that version while reads beside a write hold it.)
	checkHeldWhole(t, "a read opened beside the first write, after the second", held, first)
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, second) {
		t.Errorf("a new read: %q %v, want %q", got, err, second)
	}
}

// TestFstatBesideAWriteWhoseReleaseComesLate: a read opened beside this
// mount's write keeps that write's size in fstat while the next write of
// the name is in progress — also when the first write's RELEASE, which
// the kernel sends after close returns, has not come yet. go-fuse then
// lends that ended write's handle (the node's first open file) to fstat's
// GETATTR, which names no file; the node answered the other write's live
// size (16 bytes for 131,072: 1 in 60–150 runs of
// TestMappingBesideAnOwnWriteKeepsItsBytesAcrossTheNext, every time here).
func TestFstatBesideAWriteWhoseReleaseComesLate(t *testing.T) {
	_, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	p := srv.path(storefixture.Ent(format.KindSig, "ab12cd34", "alice"))
	first := bytes.Repeat([]byte("A"), 128<<10)
	w1 := openReSign(t, p)
	if _, err := w1.Write(first); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(p) // beside the write
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// Hold the first write's RELEASE until the check below is done.
	released, letGo := holdWriteRelease(t)
	defer letGo()
	if err := w1.Close(); err != nil {
		t.Fatalf("close of the first write: %v", err)
	}
	second := []byte("BBBBBBBBBBBBBBBB")
	w2 := openReSign(t, p)
	if _, err := w2.Write(second); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		fi, err := held.Stat()
		if err != nil {
			t.Fatalf("fstat of a read opened beside the first write, during the second: %v", err)
		}
		if fi.Size() != int64(len(first)) {
			t.Fatalf("fstat of a read opened beside the first write, during the second, the first's RELEASE not come: size %d, want %d", fi.Size(), len(first))
		}
	}
	letGo()
	select {
	case <-released:
	case <-time.After(30 * time.Second):
		t.Fatal("the first write's RELEASE never came")
	}
	if err := w2.Close(); err != nil {
		t.Fatalf("close of the second write: %v", err)
	}
	checkHeldWhole(t, "a read opened beside the first write, after the second", held, first)
}

// TestReadOpenedAsAWriteBeginsKeepsItsSize: a read whose open has fetched
// the signature but not yet counted itself among the node's readers when
// a write of the name opens through the mount (the trial's S3 mount with
// --sig-cache-size 1, where that GET is slow: fstat 0, 16 or the write's
// size so far for a read of the old version, and SIGBUS in a mapping
// sized so). The write then opened on the read's node. Now the read
// either is counted first (the write reserves a node of its own) or sees
// the write and opens as a read during it: its fstat is what it reads.
func TestReadOpenedAsAWriteBeginsKeepsItsSize(t *testing.T) {
	_, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	p := srv.path(storefixture.Ent(format.KindSig, "ab12cd34", "alice"))
	old, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	opened, release := holdFirst(t, &testHookOpenedSig)
	res := openAsync(p, os.O_RDONLY)
	select {
	case <-opened:
	case <-time.After(30 * time.Second):
		t.Fatal("the read's open never reached the signature")
	}
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		release()
		t.Fatalf("open for writing: %v", err)
	}
	defer w.Close()
	second := bytes.Repeat([]byte("W"), 3*len(old)+100)
	if _, err := w.Write(second); err != nil {
		release()
		t.Fatal(err)
	}
	release()
	var r openResult
	select {
	case r = <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("the read's open never returned")
	}
	if r.err != nil {
		t.Fatalf("the read's open: %v", r.err)
	}
	defer r.f.Close()
	got, err := io.ReadAll(io.NewSectionReader(r.f, 0, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		fi, err := r.f.Stat()
		if err != nil {
			t.Fatalf("fstat of the read: %v", err)
		}
		if fi.Size() != int64(len(got)) {
			t.Fatalf("fstat of the read says %d bytes, its reads give %d (the version before the write: %d, the write so far: %d)", fi.Size(), len(got), len(old), len(second))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close of the write: %v", err)
	}
}

// TestReadOpenedAsATruncatingWriteOpensSeesItsSize: a read opened while a
// truncating write of the name is being opened through the mount, between
// the write's OPEN and its reply (the trial's last defect: first fstat
// 131,072, then 0 bytes read, and a mapping sized so faulted). The write
// opened on the version's node, which the kernel sizes by the write only
// once the write's open returns; a read opened there meanwhile was told the
// version's size while it read the write's bytes. Now a write never opens
// a version's node: the read gets the write's node, whose size is the
// write's, or the version's node with nothing of the write in it.
func TestReadOpenedAsATruncatingWriteOpensSeesItsSize(t *testing.T) {
	_, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	p := srv.path(storefixture.Ent(format.KindSig, "ab12cd34", "alice"))
	fi, err := os.Stat(p) // the kernel holds the name and its size; no descriptor holds the node
	if err != nil || fi.Size() == 0 {
		t.Fatalf("stat: %v (%v); want a signature with bytes", err, fi)
	}
	opened, release := holdFirst(t, &testHookWriteOpened)
	res := openAsync(p, os.O_WRONLY|os.O_TRUNC)
	select {
	case <-opened:
	case <-time.After(30 * time.Second):
		t.Fatal("the write's open never reached the mount")
	}
	r, err := os.Open(p)
	if err != nil {
		release()
		t.Fatalf("open for reading during the write's open: %v", err)
	}
	defer r.Close()
	rfi, serr := r.Stat() // as the trial's reader: fstat, then read
	got, rerr := io.ReadAll(io.NewSectionReader(r, 0, 1<<20))
	release()
	var w openResult
	select {
	case w = <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("the write's open never returned")
	}
	if w.err != nil {
		t.Fatalf("open for writing: %v", w.err)
	}
	if rerr != nil || serr != nil {
		t.Fatalf("the read: %v; its fstat: %v", rerr, serr)
	}
	if rfi.Size() != int64(len(got)) {
		t.Errorf("fstat of a read opened during the write's open says %d bytes, its reads give %d (the version: %d)", rfi.Size(), len(got), fi.Size())
	}
	if _, err := w.f.Write([]byte("the write's bytes")); err != nil {
		t.Fatal(err)
	}
	if err := w.f.Close(); err != nil {
		t.Fatalf("close of the write: %v", err)
	}
}

// holdFirst makes hook (one of the mount's test hooks) hold its first call
// until release is called (or the test ends); opened is closed when that
// call comes.
func holdFirst(t *testing.T, hook *atomic.Pointer[func(string)]) (opened <-chan struct{}, release func()) {
	held, came := make(chan struct{}), make(chan struct{})
	var first, freed sync.Once
	release = func() { freed.Do(func() { close(held) }) }
	fn := func(string) {
		first.Do(func() {
			close(came)
			<-held
		})
	}
	hook.Store(&fn)
	t.Cleanup(func() {
		release()
		hook.Store(nil)
	})
	return came, release
}

// openResult is what openAsync's open returned.
type openResult struct {
	f   *os.File
	err error
}

// openAsync opens p with flag in a goroutine of its own.
func openAsync(p string, flag int) <-chan openResult {
	res := make(chan openResult, 1)
	go func() {
		f, err := os.OpenFile(p, flag, 0o644)
		res <- openResult{f, err}
	}()
	return res
}

// TestFstatBesideTheNextWriteOnTheLastWritesNode: a write lands and its
// RELEASE comes late (the kernel sends it when it will), the next write of
// the name opens on the same node, and a read opens beside that next
// write. go-fuse lends the ended write's handle — the node's first open
// file — to the read's fstat; it answered the landed write's size (the
// trial U37e: "fstat 70000, read 0 bytes, fstat 70000", 13 of 3,968 opens
// beside one writer) while the read gave the next write's bytes. The node
// is the next write's now: its size.
func TestFstatBesideTheNextWriteOnTheLastWritesNode(t *testing.T) {
	_, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	p := srv.path(storefixture.Ent(format.KindSig, "ab12cd34", "alice"))
	released, letGo := holdWriteRelease(t)
	defer letGo()
	first := bytes.Repeat([]byte("A"), 70000)
	w1 := openReSign(t, p)
	if _, err := w1.Write(first); err != nil {
		t.Fatal(err)
	}
	if err := w1.Close(); err != nil {
		t.Fatalf("close of the first write: %v", err)
	}
	w2 := openReSign(t, p)
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	check := func(when string) {
		t.Helper()
		fi, err := r.Stat()
		if err != nil {
			t.Fatalf("%s: fstat: %v", when, err)
		}
		got, err := io.ReadAll(io.NewSectionReader(r, 0, 1<<20))
		if err != nil {
			t.Fatalf("%s: read: %v", when, err)
		}
		if fi.Size() != int64(len(got)) {
			t.Errorf("%s: fstat of a read beside the next write says %d bytes, its read gives %d (the landed write: %d)", when, fi.Size(), len(got), len(first))
		}
	}
	check("before the next write wrote")
	second := []byte("the second write")
	if _, err := w2.Write(second); err != nil {
		t.Fatal(err)
	}
	check("after the next write wrote")
	letGo()
	select {
	case <-released:
	case <-time.After(30 * time.Second):
		t.Fatal("the first write's RELEASE never came")
	}
	if err := w2.Close(); err != nil {
		t.Fatalf("close of the second write: %v", err)
	}
}

// holdWriteRelease holds the first RELEASE of a write (write-only flags; a
// read's comes through) until letGo is called (or the test ends);
// released is closed when that RELEASE goes on.
func holdWriteRelease(t *testing.T) (released <-chan struct{}, letGo func()) {
	late, done := make(chan struct{}), make(chan struct{})
	var once, lateOnce sync.Once
	letGo = func() { lateOnce.Do(func() { close(late) }) }
	hook := func(in *fuse.ReleaseIn) {
		if in.Flags&syscall.O_ACCMODE != syscall.O_WRONLY {
			return
		}
		once.Do(func() {
			<-late
			close(done)
		})
	}
	testHookRelease.Store(&hook)
	t.Cleanup(func() {
		letGo()
		testHookRelease.Store(nil)
	})
	return done, letGo
}

// TestRefusedProcFdWriteLeavesTheNameItsVersion: an open for writing
// through /proc/self/fd/N of a descriptor of a version is refused (its
// retry does not look the name up, so it finds the version's node again:
// reserveWrite). The name then stands for its version at once — its size,
// its bytes — not for the reservation nothing will claim (a user trial:
// size 0 for reserveClaim, 2 s).
func TestRefusedProcFdWriteLeavesTheNameItsVersion(t *testing.T) {
	// Nothing cached: every stat and open after the refused one looks the
	// name up, as another process's would once the kernel's cache lapsed.
	_, _, srv, l := mountFixture(t, Options{AllowOverwrite: true, EntryTimeout: -1, AttrTimeout: -1})
	p := srv.path(storefixture.Ent(format.KindSig, "ab12cd34", "alice"))
	want, err := os.ReadFile(p)
	if err != nil || len(want) == 0 {
		t.Fatalf("read: %v (%d bytes); want a signature with bytes", err, len(want))
	}
	r, err := os.Open(p) // a descriptor of the version: a write opens a node of its own
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", r.Fd()), os.O_WRONLY|os.O_TRUNC, 0)
	if err == nil {
		w.Close()
		t.Fatal("an open for writing through /proc/self/fd/N of a version's descriptor was not refused")
	}
	if !errors.Is(err, syscall.ESTALE) {
		t.Errorf("the refused open: %v, want ESTALE", err)
	}
	for _, look := range []string{"stat", "read"} {
		var n int
		switch look {
		case "stat":
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			n = int(fi.Size())
		case "read":
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if n = len(got); string(got) != string(want) {
				t.Errorf("read after the refused open: %q, want the version's %q", got, want)
			}
		}
		if n != len(want) {
			t.Errorf("%s after the refused open: %d bytes, want the version's %d", look, n, len(want))
		}
	}
	if l.count("nothing written") == 0 {
		t.Errorf("the refused write was not logged:\n%s", strings.Join(l.all(), "\n"))
	}
}
