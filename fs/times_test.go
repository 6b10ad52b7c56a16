package fs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestTimesAreTheStoresLastChange: every node's mtime is the newest
// modification time of the keys the open's pack listing showed — the
// store's last change, read at no extra request — not the mount's start.
func TestTimesAreTheStoresLastChange(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	ctx := t.Context()
	var newest time.Time
	it := f.st.Bucket().List(&blob.ListOptions{Prefix: format.PackPrefix})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if o.ModTime.After(newest) {
			newest = o.ModTime
		}
	}
	if newest.IsZero() {
		t.Fatal("the fixture's pack keys report no times")
	}
	for _, p := range []string{"", "sig", f.all()[0].Key()} {
		fi, err := os.Stat(filepath.Join(srv.Dir(), p))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(newest) {
			t.Errorf("/%s: mtime %v, want the store's last change %v", p, fi.ModTime(), newest)
		}
	}
}
