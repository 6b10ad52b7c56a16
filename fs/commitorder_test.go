package fs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestTwoWritersOfANameReadWhatTheStoreHolds: two processes write one
// signature through a mount that may replace signatures, at once, and the first one's PUT is answered
// only after the second's close returned. A read after both closes must
// return the bytes the store holds — the second's — and so must a read
// after the kernel released both writes. Before, the first write, landing
// last, superseded the second in the mount and its bytes were cached as
// the index's copy: the name stood for bytes the store no longer held.
func TestTwoWritersOfANameReadWhatTheStoreHolds(t *testing.T) {
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket})
	t.Cleanup(func() { st.Close() })
	ix := openIndex(t, st)
	srv, _ := testMount(t, ix, Options{AllowOverwrite: true})
	e := storefixture.Ent(format.KindSig, "ab12cd34", "gina")
	p := srv.path(e)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	first, second := bytes.Repeat([]byte("1"), 10), bytes.Repeat([]byte("2"), 20)

	held, release := drv.HoldFirstPut(e.Key()) // the first PUT landed and waits, until release
	// Both open and write before either closes: the kernel orders an
	// O_TRUNC open behind a close in flight on the name, not two closes.
	fa, fb := openWrite(t, p, first), openWrite(t, p, second)
	errs := make(chan error, 2)
	go func() { errs <- closeLabelled("the first write", fa) }()
	select {
	case <-held:
	case err := <-errs:
		t.Fatalf("the first close returned before its PUT was held: %v", err)
	}
	secondDone := make(chan error, 1)
	go func() { secondDone <- closeLabelled("the second write", fb) }()
	// The first write's response goes back once the second's close
	// returned (as it did before), or once the second has waited a while
	// (it waits for the first's commit).
	select {
	case err := <-secondDone:
		errs <- err
		secondDone = nil
	case <-time.After(time.Second):
	}
	release()
	if secondDone != nil {
		errs <- <-secondDone
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	want, err := st.Get(context.Background(), e.Key())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
		t.Errorf("read after both closes: %q, %v; the store holds %q", got, err, want)
	}
	// After the kernel's releases the name is the index's entry alone.
	for i := 0; ; i++ {
		srv.pending.mu.Lock()
		n := len(srv.pending.m[e.Key()])
		srv.pending.mu.Unlock()
		if n == 0 {
			break
		}
		if i == 2000 {
			t.Fatalf("%d writes of %s not released", n, e.Key())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
		t.Errorf("read after both releases: %q, %v; the store holds %q", got, err, want)
	}
	if n := srv.commits.Len(); n != 0 {
		t.Errorf("%d names' commit locks kept after the writes", n)
	}
}

// openWrite opens p for writing (created or truncated) and writes data,
// leaving it open.
func openWrite(t *testing.T, p string, data []byte) *os.File {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	return f
}

// closeLabelled closes f, its error naming which write it was.
func closeLabelled(what string, f *os.File) error {
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
