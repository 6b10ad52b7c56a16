package fs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestARefusedCreateCanBeCreatedAgainAtOnce (the byte simulation's seed 65,
// op 166): a new signature created, a write past the cap refused, closed
// (nothing written); at once the same name created again must open — the
// name the first create gave the kernel no longer stands for anything.
func TestARefusedCreateCanBeCreatedAgainAtOnce(t *testing.T) {
	st := storefixture.NewMem(t)
	srv, _ := testMount(t, openIndex(t, st), Options{AllowOverwrite: true})
	dir := filepath.Join(srv.Dir(), "sig/ab/cdef")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "bob")
	for i := range 200 {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatalf("round %d: create after a refused create: %v", i, err)
		}
		if _, err := f.WriteAt([]byte("fits"), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte{1}, MaxWriteBytes); !errors.Is(err, syscall.EFBIG) {
			t.Fatalf("round %d: write past the cap: %v, want EFBIG", i, err)
		}
		if err := f.Close(); !errors.Is(err, syscall.EFBIG) {
			t.Fatalf("round %d: close: %v, want EFBIG", i, err)
		}
	}
}
