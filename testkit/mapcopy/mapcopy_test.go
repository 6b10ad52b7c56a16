//go:build unix

package mapcopy

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOutCopiesAMappingExactly: a private mapping of a file, copied out
// twice through one scratch file (the second shorter than the first), is
// each time exactly the file's bytes.
func TestOutCopiesAMappingExactly(t *testing.T) {
	dir := t.TempDir()
	scratch, err := os.CreateTemp(dir, "scratch-")
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	for _, want := range [][]byte{bytes.Repeat([]byte("long "), 2000), []byte("short")} {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, want, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		m, err := syscall.Mmap(int(f.Fd()), 0, len(want), syscall.PROT_READ, syscall.MAP_PRIVATE)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, err := Out(scratch, m)
		syscall.Munmap(m)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Out: %d bytes %v, want the %d of the file", len(got), err, len(want))
		}
	}
}
