package fs

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// The descriptor held open across what else can happen to its signature
// (the byte simulation's class B2, fs/doc.go "Versions"): one whole
// version, the one it opened, by pread, by read to EOF, and by fstat —
// which the kernel sends without the file (go-fuse answers it with one of
// the node's open files).

// holdSig opens e on the mount and reads its first 8 bytes, as the byte
// simulation's hold does.
func holdSig(t *testing.T, srv *Server, e format.Entry) *os.File {
	t.Helper()
	fd, err := os.Open(srv.path(e))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fd.Close() })
	if _, err := fd.ReadAt(make([]byte, 8), 0); err != nil {
		t.Fatalf("pread of 8 bytes: %v", err)
	}
	return fd
}

// refreshed refreshes the handle and tells the kernel, as the mount's
// refresh loop does.
func refreshed(t *testing.T, ix *index.Index, srv *Server) {
	t.Helper()
	if err := ix.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Invalidate()
}

// checkHeldWhole reads fd whole by pread, by read from byte 8 to EOF, and
// fstats it: each must be want.
func checkHeldWhole(t *testing.T, what string, fd *os.File, want []byte) {
	t.Helper()
	whole, err := io.ReadAll(io.NewSectionReader(fd, 0, 1<<20))
	if err != nil || !bytes.Equal(whole, want) {
		t.Errorf("%s: pread of the held descriptor: %d bytes %q… %v, want the %d it opened", what, len(whole), whole[:min(len(whole), 12)], err, len(want))
	}
	if _, err := fd.Seek(8, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(fd)
	if err != nil || !bytes.Equal(rest, want[8:]) {
		t.Errorf("%s: read of the held descriptor to EOF: %d bytes %v, want %d", what, len(rest), err, len(want)-8)
	}
	// go-fuse picks one of the node's open files for a GETATTR that names
	// none: ask more than once.
	for range 4 {
		if fi, err := fd.Stat(); err != nil || fi.Size() != int64(len(want)) {
			t.Errorf("%s: fstat of the held descriptor: %v %v, want size %d", what, fi, err, len(want))
			break
		}
	}
}

// TestHeldDescriptorAcrossAForget: a collection forgets the object of a
// signature held open (and another writer puts it again, with other
// bytes): the descriptor reads and fstats the version it opened.
func TestHeldDescriptorAcrossAForget(t *testing.T) {
	for _, reput := range []bool{false, true} {
		f, ix, srv, _ := mountFixture(t, Options{})
		ctx := context.Background()
		alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
		fd := holdSig(t, srv, alice)
		if _, err := fold.Collect(ctx, f.st, fold.CollectOptions{ForgetObjects: []fold.ForgetObject{{Object: alice.Object}}, Apply: true, Warn: func(string) {}}); err != nil {
			t.Fatal(err)
		}
		if reput {
			if err := otherWriter(t, f).Put(ctx, alice, bytes.Repeat([]byte("N"), 30)); err != nil {
				t.Fatal(err)
			}
		}
		refreshed(t, ix, srv)
		what := "forgotten"
		if reput {
			what = "forgotten and put again"
		}
		checkHeldWhole(t, what, fd, f.sigs[alice.Key()])
	}
}

// TestHeldDescriptorAfterItsAttributesExpire: the kernel keeps the held
// file's attributes for AttrTimeout (an hour by default: here 200 ms);
// after that its fstat reaches the mount, where the node is of a version
// replaced since — and must still answer the descriptor's size.
func TestHeldDescriptorAfterItsAttributesExpire(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{AttrTimeout: 200 * time.Millisecond})
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	fd := holdSig(t, srv, alice)
	if err := otherWriter(t, f).Put(context.Background(), alice, bytes.Repeat([]byte("N"), 30)); err != nil {
		t.Fatal(err)
	}
	refreshed(t, ix, srv)
	time.Sleep(500 * time.Millisecond)
	if fi, err := fd.Stat(); err != nil || fi.Size() != int64(len(f.sigs[alice.Key()])) {
		t.Errorf("fstat of the held descriptor after its attributes expired: %v %v, want %d", fi, err, len(f.sigs[alice.Key()]))
	}
	checkHeldWhole(t, "replaced, attributes expired", fd, f.sigs[alice.Key()])
}

// TestHeldDescriptorAcrossARefusedWrite: the signature held open is opened
// for writing on the same node (O_TRUNC, which empties the kernel's pages
// of it and sets its size), written past what fits (refused) and closed,
// its RELEASE kept back by a dup'ed descriptor (as a loaded kernel sends it
// late); another writer replaces it and a refresh shows that. The held
// descriptor reads and fstats the version it opened — with the write's
// handle still open on its node.
func TestHeldDescriptorAcrossARefusedWrite(t *testing.T) {
	for _, c := range []struct {
		keep, writeFirst bool
	}{{false, false}, {true, false}, {true, true}} {
		keep := c.keep
		f, ix, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
		alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
		var fd *os.File
		if !c.writeFirst {
			fd = holdSig(t, srv, alice)
		}
		w, err := os.OpenFile(srv.path(alice), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		// 1,200 bytes in all: past the held version's 137 and past the
		// 1,000 of the first pread, so that the kernel's size, not a
		// read past it, decides.
		data := bytes.Repeat([]byte("W"), 600)
		if _, err := w.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteAt([]byte{1}, MaxWriteBytes); err == nil {
			t.Fatal("a write past MaxWriteBytes was not refused")
		}
		if _, err := w.WriteAt(data, int64(len(data))); err != nil {
			t.Fatal(err)
		}
		if keep {
			nfd, err := dupCloexec(w)
			if err != nil {
				t.Fatal(err)
			}
			dup := os.NewFile(uintptr(nfd), "dup")
			defer dup.Close()
		}
		if err := w.Close(); err == nil {
			t.Error("close after a refused write succeeded")
		}
		if c.writeFirst {
			fd = holdSig(t, srv, alice)
		}
		if err := otherWriter(t, f).Put(context.Background(), alice, bytes.Repeat([]byte("N"), 30)); err != nil {
			t.Fatal(err)
		}
		refreshed(t, ix, srv)
		what := "refused write released"
		if keep {
			what = "refused write still open"
		}
		if c.writeFirst {
			what += ", opened before the held descriptor"
		}
		checkHeldWhole(t, what, fd, f.sigs[alice.Key()])
	}
}

// TestAWriteThatEndsUnlandedAfterARefreshDropsTheName: a reader holds a
// signature, a write of it is in progress (so the node stays current and
// a refresh's Invalidate leaves its name alone), another writer replaces
// it and a refresh shows that; a second reader opens then, beside the
// write, and reads the write's bytes so far (beside.go). Then the write is
// refused: the node is of an older version from then on, so its name must
// go (a stat by path shows the new size, without an open to look it up
// again), the first reader still reads and fstats the version it opened,
// and the second reader's bytes do not change what the first one's fstat
// says. A reader opened after the write began (writeFirst) is one beside
// it: it keeps reading what the write held, whole.
func TestAWriteThatEndsUnlandedAfterARefreshDropsTheName(t *testing.T) {
	for _, writeFirst := range []bool{false, true} {
		f, ix, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
		alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
		p := srv.path(alice)
		old, newer := f.sigs[alice.Key()], bytes.Repeat([]byte("N"), 30)
		var fd *os.File
		if !writeFirst {
			fd = holdSig(t, srv, alice)
		}
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		partial := []byte("partial write")
		if _, err := w.WriteAt(partial, 0); err != nil {
			t.Fatal(err)
		}
		if writeFirst {
			fd = holdSig(t, srv, alice)
		}
		if err := otherWriter(t, f).Put(context.Background(), alice, newer); err != nil {
			t.Fatal(err)
		}
		refreshed(t, ix, srv)
		// Someone looks meanwhile: the kernel now holds the node's size
		// (the write's node, current while the write is in progress).
		statSize(t, p)
		second, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer second.Close()
		if got, err := io.ReadAll(second); err != nil || !bytes.Equal(got, partial) {
			t.Errorf("write first %v: a reader opened after the refresh, beside the write: %q %v, want the write's %q", writeFirst, got, err, partial)
		}
		statSize(t, p)
		if _, err := w.WriteAt([]byte{1}, MaxWriteBytes); err == nil {
			t.Fatal("a write past MaxWriteBytes was not refused")
		}
		// The name is dropped by a notice sent from a goroutine (not
		// from inside the refused WRITE): wait for it, within a bound.
		deadline := time.Now().Add(10 * time.Second)
		for statSize(t, p) != int64(len(newer)) {
			if time.Now().After(deadline) {
				t.Fatalf("write first %v: stat by path after the write was refused: %d bytes 10 s later, want the new %d", writeFirst, statSize(t, p), len(newer))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if writeFirst {
			if got, err := io.ReadAll(io.NewSectionReader(fd, 0, 1<<20)); err != nil || !bytes.Equal(got, partial) {
				t.Errorf("a descriptor opened beside the write, after it was refused: %q %v, want what the write held, %q", got, err, partial)
			}
			continue
		}
		checkHeldWhole(t, "beside a write refused after the refresh", fd, old)
	}
}
