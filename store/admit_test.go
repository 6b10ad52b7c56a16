package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"

	"github.com/oxyfs/oxyfs/store"
)

// TestGetAdmittedAsksBeforeTheBody: admit is called once with the body's
// size before it is read; its refusal is the read's error (sent once, not
// retried); an admitted read calls release once.
func TestGetAdmittedAsksBeforeTheBody(t *testing.T) {
	ctx := context.Background()
	st := store.New(memblob.OpenBucket(nil), "mem", "", store.Options{Layout: store.LayoutBucket})
	const key = "sig/ab/12/alice"
	data := bytes.Repeat([]byte("x"), 1000)
	if err := st.Put(ctx, key, data); err != nil {
		t.Fatal(err)
	}
	busy := errors.New("busy")
	var sizes []int64
	before := st.Counts()
	_, _, err := st.GetAdmitted(ctx, key, func(size int64) (func(), error) {
		sizes = append(sizes, size)
		return nil, busy
	})
	if !errors.Is(err, busy) || len(sizes) != 1 || sizes[0] != int64(len(data)) {
		t.Fatalf("refused: %v, admit called with %v, want busy and [%d]", err, sizes, len(data))
	}
	if d := st.Counts().Sub(before); d.Get != 1 {
		t.Errorf("a refused read sent %v, want 1 GET", d)
	}
	released := 0
	got, _, err := st.GetAdmitted(ctx, key, func(size int64) (func(), error) {
		return func() { released++ }, nil
	})
	if err != nil || !bytes.Equal(got, data) || released != 1 {
		t.Fatalf("admitted: %d bytes %v, released %d times", len(got), err, released)
	}
}

// TestGetAdmittedSaysTheKeysTime: the time GetAdmitted returns is the
// key's own modification time as the backend keeps it (here a file store,
// whose file's mtime the test sets), taken from the one GET that reads it.
func TestGetAdmittedSaysTheKeysTime(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "file://"+dir, store.Options{Layout: store.LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const key = "sig/ab/12/alice"
	if err := st.Put(ctx, key, []byte("signature")); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(key)), want, want); err != nil {
		t.Fatal(err)
	}
	before := st.Counts()
	data, mod, err := st.GetAdmitted(ctx, key, func(int64) (func(), error) { return func() {}, nil })
	if err != nil || string(data) != "signature" {
		t.Fatalf("read %q, %v", data, err)
	}
	if !mod.Equal(want) {
		t.Errorf("time %v, want the file's mtime %v", mod, want)
	}
	if d := st.Counts().Sub(before); d.Get != 1 || d.Head != 0 {
		t.Errorf("read sent %v, want 1 GET and nothing else", d)
	}
}
