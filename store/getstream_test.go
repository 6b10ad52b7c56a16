package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"syscall"
	"testing"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// cutBody fails with a connection reset once it has passed after bytes on.
type cutBody struct {
	r     io.Reader
	after int
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.after <= 0 {
		return 0, fmt.Errorf("read: %w", syscall.ECONNRESET)
	}
	n, err := c.r.Read(p[:min(len(p), c.after)])
	c.after -= n
	return n, err
}

// bodyStore is a mem store whose GET bodies body wraps.
func bodyStore(t *testing.T, body func(ctx context.Context, key string, r io.Reader) io.Reader) *store.Store {
	t.Helper()
	drv := blobtest.New(nil)
	drv.SetHooks(blobtest.Hooks{Body: body})
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket})
	t.Cleanup(func() { st.Close() })
	return st
}

// A body that fails midway is read again from its start: fn is called
// again, and what it reads the second time is the whole body.
func TestGetStreamReadsABodyThatFailedMidwayAgain(t *testing.T) {
	var cuts atomic.Int32
	st := bodyStore(t, func(_ context.Context, _ string, r io.Reader) io.Reader {
		if cuts.Add(1) == 1 {
			return &cutBody{r: r, after: 3 << 20}
		}
		return r
	})
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB
	if err := st.Put(context.Background(), "pack-x", want); err != nil {
		t.Fatal(err)
	}
	before := st.Counts()
	var calls int
	var got []byte
	err := st.GetStream(context.Background(), "pack-x", int64(len(want)), func(body io.Reader) (err error) {
		calls++
		got, err = io.ReadAll(body)
		return err
	})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("GetStream: %d bytes, %v; want the %d bytes", len(got), err, len(want))
	}
	if d := st.Counts().Sub(before); calls != 2 || d.Get != 2 {
		t.Fatalf("fn called %d times, %d GETs; want 2 and 2 (the body that failed, then the whole one)", calls, d.Get)
	}
}

// fn's own error ends the GET and is not retried, even one that wraps an
// error a failed request would (a truncated zstd stream's io.ErrUnexpectedEOF).
func TestGetStreamDoesNotRetryFnsError(t *testing.T) {
	st := bodyStore(t, nil)
	if err := st.Put(context.Background(), "pack-x", []byte("some bytes")); err != nil {
		t.Fatal(err)
	}
	before := st.Counts()
	calls := 0
	mine := fmt.Errorf("decode: %w", io.ErrUnexpectedEOF)
	err := st.GetStream(context.Background(), "pack-x", 100, func(io.Reader) error { calls++; return mine })
	if !errors.Is(err, mine) || calls != 1 || st.Counts().Sub(before).Get != 1 {
		t.Fatalf("GetStream = %v after %d calls, %v; want fn's error after one call and one GET", err, calls, st.Counts().Sub(before))
	}
}

// A body over the limit is refused before fn is called.
func TestGetStreamRefusesABodyOverTheLimit(t *testing.T) {
	st := bodyStore(t, nil)
	if err := st.Put(context.Background(), "pack-x", make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	called := false
	err := st.GetStream(context.Background(), "pack-x", 999, func(io.Reader) error { called = true; return nil })
	if !errors.Is(err, store.ErrTooLarge) || called {
		t.Fatalf("GetStream of 1000 bytes capped at 999 = %v (fn called: %v); want ErrTooLarge before fn", err, called)
	}
}
