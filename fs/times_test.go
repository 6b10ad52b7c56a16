package fs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestTimesAreTheStoresLastChange: every node's mtime but a signature's is
// the newest modification time of the keys the open's pack listing showed
// — the store's last change, read at no extra request — not the mount's
// start; a signature's mtime, ctime and atime are its key's own (issue 39),
// read by the GET its size costs.
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
	var entry, sig format.Entry
	for _, e := range f.all() {
		if e.Kind == format.KindSig {
			sig = e
		} else {
			entry = e
		}
	}
	for _, p := range []string{"", "sig", entry.Key()} {
		fi, err := os.Stat(filepath.Join(srv.Dir(), p))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(newest) {
			t.Errorf("/%s: mtime %v, want the store's last change %v", p, fi.ModTime(), newest)
		}
	}
	a, err := f.st.Bucket().Attributes(ctx, sig.Key())
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(srv.Dir(), sig.Key()), &st); err != nil {
		t.Fatal(err)
	}
	ts := func(s syscall.Timespec) time.Time { return time.Unix(s.Sec, s.Nsec) }
	if m := ts(st.Mtim); !m.Equal(a.ModTime) || !ts(st.Ctim).Equal(m) || !ts(st.Atim).Equal(m) {
		t.Errorf("/%s: mtime %v ctime %v atime %v, want the key's own %v", sig.Key(), m, ts(st.Ctim), ts(st.Atim), a.ModTime)
	}
}
