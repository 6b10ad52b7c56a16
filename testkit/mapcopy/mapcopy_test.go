package mapcopy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestMain(m *testing.M) {
	MaybeChild()
	os.Exit(m.Run())
}

// A file's mapping, shared and private, copied in the child: the bytes of
// the file, from the caller's own open.
func TestCopyIsTheMappingOfTheCallersOpen(t *testing.T) {
	c, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	dir := t.TempDir()
	for i, want := range [][]byte{bytes.Repeat([]byte("long "), 2000), []byte("short")} {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, want, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		// The name now holds other bytes: the child maps the open it was
		// given, not the name.
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("other"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, shared := range []bool{true, false} {
			got, err := c.Copy(f, len(want), shared)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("file %d, shared %v: %d bytes %v, want the %d of the open file", i, shared, len(got), err, len(want))
			}
		}
		f.Close()
	}
}

// A mapping the kernel refuses keeps its errno: a directory cannot be
// mapped (ENODEV); the child serves the next request after it.
func TestCopyKeepsTheMappingsErrno(t *testing.T) {
	c := startChild(t)
	dir := t.TempDir()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := c.Copy(d, 4096, true); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("mapping a directory: %v, want ENODEV", err)
	}
	f := openWritten(t, filepath.Join(dir, "f"), "after")
	if got, err := c.Copy(f, 5, false); err != nil || string(got) != "after" {
		t.Errorf("after a refused mapping: %q %v, want \"after\"", got, err)
	}
}

// Past the end of a file a mapping has no pages: the copy fails with an
// error (EFAULT in write(2)), not a SIGBUS that kills the child.
func TestCopyPastTheEndFails(t *testing.T) {
	c := startChild(t)
	f := openWritten(t, filepath.Join(t.TempDir(), "f"), "tiny")
	if got, err := c.Copy(f, 3*4096, true); err == nil {
		t.Errorf("a copy of 3 pages of a 4-byte file: %d bytes, no error", len(got))
	}
	if got, err := c.Copy(f, 4, true); err != nil || string(got) != "tiny" {
		t.Errorf("after a copy past the end: %q %v, want \"tiny\"", got, err)
	}
}

// startChild starts a mapping child, closed at the test's end.
func startChild(t *testing.T) *Child {
	t.Helper()
	c, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// openWritten writes text to p and opens it, closed at the test's end.
func openWritten(t *testing.T, p, text string) *os.File {
	t.Helper()
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
