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

// TestReSignThroughTheMountShowsItsNewTime: a signature re-signed through
// the mount shows a later time at once, with its new size — the store's
// time when the write landed (the key's own Last-Modified is not read
// back: no GET) — not the time of the bytes it replaced.
func TestReSignThroughTheMountShowsItsNewTime(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	sig := f.firstSig(t)
	p := filepath.Join(srv.Dir(), sig.Key())
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("a new signature, longer than none")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := f.st.Bucket().Attributes(t.Context(), sig.Key())
	if err != nil {
		t.Fatal(err)
	}
	gets := ix.Store().Counts().Get
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != int64(len(data)) || !after.ModTime().After(before.ModTime()) || after.ModTime().Before(a.ModTime.Truncate(time.Millisecond)) {
		t.Errorf("after a re-sign through the mount: size %d mtime %v (before %v; the key's own %v), want %d bytes and a time after the old, not before the key's", after.Size(), after.ModTime(), before.ModTime(), a.ModTime, len(data))
	}
	if d := ix.Store().Counts().Get - gets; d != 0 {
		t.Errorf("stat after the re-sign sent %d GETs, want 0 (the bytes and their time are this mount's own)", d)
	}
}

// TestStatBetweenFlushAndReleaseShowsTheLandedTime: a re-sign's close
// lands it (FLUSH), but the handle stays until the kernel's RELEASE, which
// comes later — or never while another descriptor of the open file is
// open. A stat meanwhile says the landed signature's size and time, not
// the buffer's: before, the time answered then came before the key's own
// Last-Modified (the flake of TestReSignThroughTheMountShowsItsNewTime in
// CI, where RELEASE came just after the stat).
func TestStatBetweenFlushAndReleaseShowsTheLandedTime(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	sig := f.firstSig(t)
	p := filepath.Join(srv.Dir(), sig.Key())
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("landed while a descriptor stays open")
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	dup, err := dupCloexec(w)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil { // FLUSH: the write lands; no RELEASE while dup is open
		t.Fatal(err)
	}
	defer syscall.Close(dup)
	a, err := f.st.Bucket().Attributes(t.Context(), sig.Key())
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != int64(len(data)) || !after.ModTime().After(before.ModTime()) || after.ModTime().Before(a.ModTime.Truncate(time.Millisecond)) {
		t.Errorf("stat after the re-sign landed, its handle not released: size %d mtime %v (before %v; the key's own %v), want %d bytes and a time after the old, not before the key's", after.Size(), after.ModTime(), before.ModTime(), a.ModTime, len(data))
	}
}

// firstSig is the fixture's first signature.
func (f *fixture) firstSig(t *testing.T) format.Entry {
	t.Helper()
	for _, e := range f.all() {
		if e.Kind == format.KindSig {
			return e
		}
	}
	t.Fatal("the fixture has no signature")
	return format.Entry{}
}
