package fs

import (
	"bytes"
	"os"
	"testing"

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
