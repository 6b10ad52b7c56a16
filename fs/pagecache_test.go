package fs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/hanwen/go-fuse/v2/splice"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// readEvery reads p the ways programs do: os.ReadFile (fstat, then reads
// to the end), reads of one byte with no stat, and one read of exactly the
// size the caller expects.
func readEvery(t *testing.T, p string, want []byte) {
	t.Helper()
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
		t.Errorf("ReadFile %s: %d bytes %v, want %d", p, len(got), err, len(want))
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	one := make([]byte, 1)
	for {
		n, err := f.Read(one)
		got = append(got, one[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
	}
	f.Close()
	if !bytes.Equal(got, want) {
		t.Errorf("byte by byte %s: %d bytes, want %d", p, len(got), len(want))
	}
	f, err = os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, len(want)+10)
	n, err := io.ReadFull(f, buf)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(buf[:n], want) {
		t.Errorf("one read of %s: %d bytes %v, want %d and EOF", p, n, err, len(want))
	}
}

// TestCatOfASignatureIsOneReadAndNoFlush: on a fresh mount, a signature
// whose size the lookup did not know (0, not cached) reads whole through
// the page cache — the kernel asks its size before reading past 0 — with
// one READ (the end is the kernel's to find) and no FLUSH at close.
func TestCatOfASignatureIsOneReadAndNoFlush(t *testing.T) {
	st, srv := mountGenerated(t, 200)
	sigs, _, _, _ := walk(t, srv.Dir())
	ctx := context.Background()
	for _, p := range sigs[:10] {
		want, err := st.Get(ctx, p[len(srv.Dir())+1:])
		if err != nil {
			t.Fatal(err)
		}
		before := srv.Ops()
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("cat %s: %q %v, want %q", p, got, err, want)
		}
		after := srv.Ops()
		if d := after["read"] - before["read"]; d != 1 {
			t.Errorf("cat %s: %d READs, want 1", p, d)
		}
		if d := after["flush"] - before["flush"]; d != 0 {
			t.Errorf("cat %s: %d FLUSHes, want 0", p, d)
		}
		if d := after["open"] - before["open"]; d != 1 {
			t.Errorf("cat %s: %d OPENs, want 1", p, d)
		}
	}
	for _, p := range sigs[10:20] {
		want, err := st.Get(ctx, p[len(srv.Dir())+1:])
		if err != nil {
			t.Fatal(err)
		}
		readEvery(t, p, want)
	}
}

// TestReplacedSignatureReadsWholeBeforeInvalidate: the kernel holds a
// signature's size for an hour; another writer replaces it with longer
// bytes and the index refreshes, but the kernel has not been told yet
// (Invalidate runs after the refresh, and a read can come between). A read
// returns every new byte: a signature that changed within the attribute
// timeout is read with direct I/O, which does not stop at the size the
// kernel holds. Then Invalidate, and the size is the new one too.
func TestReplacedSignatureReadsWholeBeforeInvalidate(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{})
	ctx := context.Background()
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	old := f.sigs[alice.Key()]
	readEvery(t, srv.path(alice), old)
	if fi, err := os.Lstat(srv.path(alice)); err != nil || fi.Size() != int64(len(old)) {
		t.Fatalf("stat before: %v %v", fi, err)
	}
	longer := append(bytes.Repeat([]byte("z"), 3*len(old)), '\n')
	other := openIndex(t, store.New(f.st.Bucket(), f.st.Backend(), "", store.Options{Layout: store.LayoutBucket}))
	if err := other.Put(ctx, alice, longer); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	readEvery(t, srv.path(alice), longer)
	srv.Invalidate()
	if fi, err := os.Lstat(srv.path(alice)); err != nil || fi.Size() != int64(len(longer)) {
		t.Errorf("stat after Invalidate: %v %v, want %d", fi, err, len(longer))
	}
	readEvery(t, srv.path(alice), longer)
}

// TestOwnRewriteReadsWhole: a signature rewritten through the mount (with
// --allow-overwrite) to a longer one reads whole at once, and so does one
// rewritten shorter.
func TestOwnRewriteReadsWhole(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	bob := storefixture.Ent(format.KindSig, "ab12cd34", "bob")
	readEvery(t, srv.path(bob), f.sigs[bob.Key()])
	for _, data := range [][]byte{bytes.Repeat([]byte("L"), 700), []byte("short")} {
		if err := os.WriteFile(srv.path(bob), data, 0o644); err != nil {
			t.Fatal(err)
		}
		readEvery(t, srv.path(bob), data)
		if fi, err := os.Lstat(srv.path(bob)); err != nil || fi.Size() != int64(len(data)) {
			t.Errorf("stat after the rewrite: %v %v, want %d", fi, err, len(data))
		}
	}
}

// TestSecondReadOfASignatureSendsNoRead: the pages a read filled are the
// node's, and a node is one version, so they are kept across opens
// (FOPEN_KEEP_CACHE): reading a signature again sends an OPEN and no READ,
// and gets every byte.
func TestSecondReadOfASignatureSendsNoRead(t *testing.T) {
	st, srv := mountGenerated(t, 200)
	sigs, _, _, _ := walk(t, srv.Dir())
	ctx := context.Background()
	for _, p := range sigs[:10] {
		want, err := st.Get(ctx, p[len(srv.Dir())+1:])
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("first cat %s: %q %v, want %q", p, got, err, want)
		}
		before := srv.Ops()
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("second cat %s: %q %v, want %q", p, got, err, want)
		}
		after := srv.Ops()
		if d := after["read"] - before["read"]; d != 0 {
			t.Errorf("second cat %s: %d READs, want 0 (the kernel holds its pages)", p, d)
		}
		if d := after["open"] - before["open"]; d != 1 {
			t.Errorf("second cat %s: %d OPENs, want 1", p, d)
		}
	}
}

// TestReadsAreNotSpliced: a READ's reply is written to the FUSE device
// as it is, with no pipe between (MountOptions.DisableSplice): every
// answer is bytes in memory, which go-fuse cannot splice, and trying cost
// three system calls a READ. go-fuse's pipe pool stays empty.
func TestReadsAreNotSpliced(t *testing.T) {
	st, srv := mountGenerated(t, 200)
	sigs, _, _, _ := walk(t, srv.Dir())
	ctx := context.Background()
	for _, p := range sigs[:5] {
		want, err := st.Get(ctx, p[len(srv.Dir())+1:])
		if err != nil {
			t.Fatal(err)
		}
		readEvery(t, p, want)
	}
	if n := splice.Total(); n != 0 {
		t.Fatalf("%d pipes made for READ replies, want 0", n)
	}
}
