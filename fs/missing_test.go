package fs

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestListedButMissingIsENOENT (issue 42 item 1): a signature the complete
// list names whose key is gone answers stat and open with ENOENT — not
// ESTALE, which the kernel retried with the same answer and which points
// at NFS — every time, while its directory still lists it; the index
// counts it once.
func TestListedButMissingIsENOENT(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{})
	var gone format.Entry
	for _, e := range f.listed {
		if e.Kind == format.KindSig {
			gone = e
			break
		}
	}
	if err := f.st.Delete(t.Context(), gone.Key()); err != nil {
		t.Fatal(err)
	}
	p := srv.path(gone)
	for range 2 {
		if _, err := os.Stat(p); !isErrno(err, syscall.ENOENT) {
			t.Errorf("stat of a listed signature whose key is gone: %v, want ENOENT", err)
		}
		if _, err := os.ReadFile(p); !isErrno(err, syscall.ENOENT) {
			t.Errorf("read of a listed signature whose key is gone: %v, want ENOENT", err)
		}
	}
	names, err := os.ReadDir(srv.Dir() + "/sig/" + gone.Object[:2] + "/" + gone.Object[2:])
	if err != nil || len(names) == 0 {
		t.Errorf("its directory: %v %v, want it listed still", names, err)
	}
	if n := ix.Status().ListedMissing; n != 1 {
		t.Errorf("listed_missing %d, want 1", n)
	}
}

// isErrno reports whether err carries errno e.
func isErrno(err error, e syscall.Errno) bool {
	var got syscall.Errno
	return errors.As(err, &got) && got == e
}
