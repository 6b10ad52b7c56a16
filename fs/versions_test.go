package fs

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// otherWriter is a second handle on the fixture's store: another writer.
func otherWriter(t *testing.T, f *fixture) *index.Index {
	return openIndex(t, store.New(f.st.Bucket(), f.st.Backend(), "", store.Options{Layout: store.LayoutBucket}))
}

// statSize is the size stat(2) reports for p.
func statSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	return fi.Size()
}

// mmapPrivate maps p privately, as a program that mmaps a file to read it
// does, and returns a copy of what the mapping shows up to the size fstat
// reports. The mapping is made and read in a child process (mapIn), never
// in this one: a page fault here is served by this test's own mount (a
// test binary hung in CI, one thread in folio_wait_bit_common).
func mmapPrivate(t *testing.T, p string) []byte {
	t.Helper()
	m, err := mapIn(t, p, true)
	if err != nil {
		t.Fatalf("mmap %s: %v", p, err)
	}
	defer m.close()
	return m.read()
}

// TestHeldDescriptorReadsItsVersionWhole (issue 22, item 3): a descriptor
// opened before another writer replaces a signature reads the bytes it
// opened, whole, after the refresh and Invalidate, with pread and read to
// its end, and fstat on it says their size; a fresh open, stat and mmap
// see the new signature.
func TestHeldDescriptorReadsItsVersionWhole(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{})
	ctx := context.Background()
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	old := f.sigs[alice.Key()]
	p := srv.path(alice)
	fd, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	head := make([]byte, 8)
	if _, err := fd.ReadAt(head, 0); err != nil || !bytes.Equal(head, old[:8]) {
		t.Fatalf("pread of 8 bytes: %q %v", head, err)
	}
	shorter := bytes.Repeat([]byte("N"), 30)
	if err := otherWriter(t, f).Put(ctx, alice, shorter); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Invalidate()

	if fi, err := fd.Stat(); err != nil || fi.Size() != int64(len(old)) {
		t.Errorf("fstat of the held descriptor: %v %v, want the size it opened, %d", fi, err, len(old))
	}
	rest, err := io.ReadAll(io.NewSectionReader(fd, 8, 1<<20))
	if err != nil || !bytes.Equal(rest, old[8:]) {
		t.Errorf("pread of the held descriptor to its end: %d bytes %q… %v, want the %d it opened", len(rest), rest[:min(len(rest), 8)], err, len(old)-8)
	}
	if _, err := fd.Seek(8, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rest, err = io.ReadAll(fd)
	if err != nil || !bytes.Equal(rest, old[8:]) {
		t.Errorf("read of the held descriptor to EOF: %d bytes %v, want the %d it opened", len(rest), err, len(old)-8)
	}
	readEvery(t, p, shorter)
	if got := statSize(t, p); got != int64(len(shorter)) {
		t.Errorf("stat: %d, want the new %d", got, len(shorter))
	}
	if got := mmapPrivate(t, p); !bytes.Equal(got, shorter) {
		t.Errorf("mmap: %q, want %q", got, shorter)
	}
	// The held descriptor still reads its version after the new one was read.
	rest, err = io.ReadAll(io.NewSectionReader(fd, 0, 1<<20))
	if err != nil || !bytes.Equal(rest, old) {
		t.Errorf("held descriptor after the new version was read: %d bytes %v, want %d", len(rest), err, len(old))
	}
}

// TestReplacedBytesFoundByAReadReachTheKernel (issue 22, item 2): with a
// signature cache too small to keep a signature, its bytes are replaced in
// the store with no journal line the reader sees (an older writer, or a
// re-sign the lines cannot tell): the kernel holds the old size for an
// hour. The open that reads the new bytes makes a new version, and the
// kernel is told: stat, a private mmap and reads all see the new
// signature whole, not cut to the old size.
func TestReplacedBytesFoundByAReadReachTheKernel(t *testing.T) {
	f := buildFixture(t)
	ix, err := index.Open(context.Background(), f.st, index.Options{Warn: func(string) {}, ReadAhead: -1, SigCacheBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	srv, _ := testMount(t, ix, Options{})
	ctx := context.Background()
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	old := f.sigs[alice.Key()]
	p := srv.path(alice)
	readEvery(t, p, old)
	if got := statSize(t, p); got != int64(len(old)) {
		t.Fatalf("stat before: %d, want %d", got, len(old))
	}
	// The kernel's RELEASE of readEvery's last descriptor comes after its
	// close returns: an open while it is held shares its copy of the old
	// bytes (one copy a version, index.OpenSig) and reads nothing.
	waitNoReaders(t, ix)
	longer := bytes.Repeat([]byte("L"), 3*len(old))
	if err := f.st.Put(ctx, alice.Key(), longer); err != nil {
		t.Fatal(err)
	}
	// The first to open it is a private mmap: its open reads the new bytes.
	if got := mmapPrivate(t, p); !bytes.Equal(got, longer) {
		t.Errorf("mmap of the replaced signature: %d bytes, want %d", len(got), len(longer))
	}
	if got := statSize(t, p); got != int64(len(longer)) {
		t.Errorf("stat after a read found the new bytes: %d, want %d", got, len(longer))
	}
	if got := mmapPrivate(t, p); !bytes.Equal(got, longer) {
		t.Errorf("mmap again: %d bytes, want %d", len(got), len(longer))
	}
	readEvery(t, p, longer)
}

// TestAReadElsewhereTellsTheKernel (issue 22, item 2): the kernel holds a
// signature's size for an hour; its bytes are replaced with no journal
// line, and a read that does not go through the kernel (read-ahead, or
// serve on the same index) finds them. The kernel is told (the index's
// watcher drops the name), so stat, with no Invalidate and no open, says
// the new size.
func TestAReadElsewhereTellsTheKernel(t *testing.T) {
	f := buildFixture(t)
	ctx := context.Background()
	ix, err := index.Open(ctx, f.st, index.Options{Warn: func(string) {}, ReadAhead: -1, SigCacheBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	srv, _ := testMount(t, ix, Options{})
	bob := storefixture.Ent(format.KindSig, "ab12cd34", "bob")
	p := srv.path(bob)
	if got := statSize(t, p); got != int64(len(f.sigs[bob.Key()])) {
		t.Fatalf("stat before: %d", got)
	}
	longer := bytes.Repeat([]byte("B"), 1000)
	if err := f.st.Put(ctx, bob.Key(), longer); err != nil {
		t.Fatal(err)
	}
	if got, err := ix.ReadSig(ctx, bob); err != nil || !bytes.Equal(got, longer) {
		t.Fatalf("the index's read: %d bytes %v", len(got), err)
	}
	// The watcher runs in a goroutine of its own: wait for it a while.
	got := statSize(t, p)
	for i := 0; i < 300 && got != int64(len(longer)); i++ {
		time.Sleep(10 * time.Millisecond)
		got = statSize(t, p)
	}
	if got != int64(len(longer)) {
		t.Errorf("stat after a read elsewhere found the new bytes: %d, want %d", got, len(longer))
	}
}

// waitNoReaders waits (bounded) until no open reader holds a signature's
// bytes: the kernel's RELEASEs come after close(2) returns.
func waitNoReaders(t *testing.T, ix *index.Index) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ix.ReadersStats().HeldBytes != 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := ix.ReadersStats().HeldBytes; n != 0 {
		t.Fatalf("open readers still hold %d bytes 10 s after every close", n)
	}
}
