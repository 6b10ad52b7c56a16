package fs

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestStatAfterACreateBesideAReader (trial of issue 37): a file created
// through the mount and read while it was being written (the reader sees
// what was written so far) says its whole size in stat once close
// returned. Before: stat said the size the reader had seen — go-fuse
// answers a GETATTR naming no descriptor from the node's open file, the
// reader's, which answered its snapshot's size cached for the attribute
// timeout (an hour by default): ls -l and tar saw 10 bytes of a 237-byte
// signature that cat read whole, even after the reader closed.
func TestStatAfterACreateBesideAReader(t *testing.T) {
	_, _, srv, _ := mountFixture(t, Options{})
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "zoe")
	p := srv.path(alice)
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	defer w.Close()
	written := bytes.Repeat([]byte("Z"), 237)
	if _, err := w.Write(written[:10]); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatalf("open for reading beside the create: %v", err)
	}
	defer r.Close()
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(written[10:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close of the create: %v", err)
	}
	if got := statSize(t, p); got != int64(len(written)) {
		t.Errorf("stat after the create landed, the reader open: %d bytes, want %d", got, len(written))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := statSize(t, p); got != int64(len(written)) {
		t.Errorf("stat after the create landed and the reader closed: %d bytes, want %d", got, len(written))
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, written) {
		t.Errorf("read after the create landed: %d bytes (%v), want %d", len(got), err, len(written))
	}
}
