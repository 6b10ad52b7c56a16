package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

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
	_, err := st.GetAdmitted(ctx, key, func(size int64) (func(), error) {
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
	got, err := st.GetAdmitted(ctx, key, func(size int64) (func(), error) {
		return func() { released++ }, nil
	})
	if err != nil || !bytes.Equal(got, data) || released != 1 {
		t.Fatalf("admitted: %d bytes %v, released %d times", len(got), err, released)
	}
}
