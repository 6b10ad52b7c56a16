package fs

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestOpenBesideAnOwnReSignIsOneVersion (trial of issue 37, scenario 3: a
// reader of mount A while mount A re-signs): an open for reading of a
// signature this mount is re-signing (open O_TRUNC, some bytes written,
// not closed yet) must be one version — its read(2), its fstat and a
// MAP_SHARED mapping sized by that fstat agree. Before: read(2) gave the
// store's old bytes while stat and fstat said the size of the bytes
// written so far (GETATTR names no descriptor; go-fuse lends the node's
// first open file, the write's), so a mapping sized by fstat read the old
// bytes cut to that size, or past them faulted (SIGBUS: a Python
// verifier's mmap killed it).
func TestOpenBesideAnOwnReSignIsOneVersion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		written func(old []byte) []byte
	}{
		{"longer", func(old []byte) []byte { return bytes.Repeat([]byte("L"), len(old)+3*4096) }},
		{"shorter", func(old []byte) []byte { return bytes.Repeat([]byte("S"), len(old)/2) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
			alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
			old := f.sigs[alice.Key()]
			p := srv.path(alice)
			w, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatalf("open for writing: %v", err)
			}
			defer w.Close()
			written := tc.written(old)
			if _, err := w.Write(written); err != nil {
				t.Fatal(err)
			}

			r, err := os.Open(p)
			if err != nil {
				t.Fatalf("open for reading beside the write: %v", err)
			}
			defer r.Close()
			fi, err := r.Stat()
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, old) && !bytes.Equal(got, written) {
				t.Errorf("read %d bytes %.8q…: neither the store's version (%d bytes) nor what was written (%d)", len(got), got, len(old), len(written))
			}
			if fi.Size() != int64(len(got)) {
				t.Errorf("fstat says %d bytes, read(2) returned %d (the store's %d, written so far %d)", fi.Size(), len(got), len(old), len(written))
			}
			m, err := mapShared(t, p)
			if err != nil {
				t.Fatalf("MAP_SHARED beside the write: %v", err)
			}
			if mm := m.read(); !bytes.Equal(mm, got) {
				t.Errorf("a MAP_SHARED mapping shows %d bytes %.8q…, read(2) %d bytes %.8q…", len(mm), mm, len(got), got)
			}
		})
	}
}

// TestStatAfterAnOwnReSignBesideAReader (trial of issue 37): once close
// of a re-sign through the mount returned 0, a stat of the name says the
// new size, though a descriptor opened (and read) during the write still
// holds the old version. Before: the first stat said the old size — the
// node, stale, answers its readers' size (cached for the attribute
// timeout) and its name had not been dropped yet.
func TestStatAfterAnOwnReSignBesideAReader(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	old := f.sigs[alice.Key()]
	p := srv.path(alice)
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatalf("open for writing: %v", err)
	}
	defer w.Close()
	written := bytes.Repeat([]byte("W"), len(old)+100)
	if _, err := w.Write(written[:10]); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatalf("open for reading beside the write: %v", err)
	}
	defer r.Close()
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(written[10:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close of the re-sign: %v", err)
	}
	if got := statSize(t, p); got != int64(len(written)) {
		t.Errorf("stat after the re-sign landed: %d bytes, want %d (the old version: %d)", got, len(written), len(old))
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, written) {
		t.Errorf("read after the re-sign landed: %d bytes (%v), want %d", len(got), err, len(written))
	}
}
