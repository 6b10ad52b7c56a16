package fs

import (
	"bytes"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestReadOfAFileBeingCreated (integration/TestManyHandlesOnOneBucket's
// "open …/m0: no such file or directory"): a file created through the
// mount and not yet closed is listed and looked up, so an open for
// reading of it must not be ENOENT: it shows what was written so far, as
// a local filesystem does.
func TestReadOfAFileBeingCreated(t *testing.T) {
	_, _, srv, _ := mountFixture(t, Options{})
	dir := filepath.Join(srv.Dir(), "sig", "ab", "12cd34")
	p := filepath.Join(dir, "dave")
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	data := []byte("signature being written")
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, de := range names {
		listed = listed || de.Name() == "dave"
	}
	got, err := os.ReadFile(p)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		t.Errorf("read of a file being created (listed %v): %v", listed, err)
	case err != nil:
		t.Errorf("read of a file being created: %v", err)
	case !bytes.Equal(got, data) && len(got) != 0:
		t.Errorf("read of a file being created: %q, want what was written (%q)", got, data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
		t.Errorf("read after close: %q %v, want %q", got, err, data)
	}
}
