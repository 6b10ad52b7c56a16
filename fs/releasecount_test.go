package fs

import (
	"os"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestEveryReleaseIsCounted: fuse_ops.release counts the RELEASE of every
// file the mount opened — a signature read, an index entry read — not only
// writes' (it counted writes' alone, so opens and releases never matched).
func TestEveryReleaseIsCounted(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	var sig, other format.Entry
	for _, e := range f.listed {
		if e.Kind == format.KindSig && sig.Object == "" {
			sig = e
		}
		if e.Kind != format.KindSig && other.Object == "" {
			other = e
		}
	}
	opens, releases := srv.Ops()["open"], srv.Ops()["release"]
	for _, e := range []format.Entry{sig, other} {
		if _, err := os.ReadFile(srv.path(e)); err != nil {
			t.Fatal(err)
		}
	}
	opened := srv.Ops()["open"] - opens
	if opened != 2 {
		t.Fatalf("%d opens counted for 2 files read", opened)
	}
	// The kernel's RELEASE comes after close returns.
	for deadline := time.Now().Add(10 * time.Second); srv.Ops()["release"]-releases < opened; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			break
		}
	}
	if got := srv.Ops()["release"] - releases; got != opened {
		t.Errorf("%d releases counted for %d files opened and closed", got, opened)
	}
}
