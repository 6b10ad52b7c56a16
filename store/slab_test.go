package store_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/oxyfs/oxyfs/internal/lib/hugepage"
	"github.com/oxyfs/oxyfs/store"
)

// Every buffer a streamed body was read into is released once GetStream
// returns, whether fn read the whole body, stopped halfway, or the body
// failed midway and was read again; none is released twice (the count
// would go below where it started, or a mapped one be unmapped while read).
func TestGetStreamReleasesEveryBuffer(t *testing.T) {
	var cuts atomic.Int32
	st := bodyStore(t, func(_ context.Context, key string, r io.Reader) io.Reader {
		if key == "pack-cut" && cuts.Add(1) == 1 {
			return &cutBody{r: r, after: 5 << 20}
		}
		return r
	})
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB: several slabs
	for _, key := range []string{"pack-x", "pack-cut"} {
		if err := st.Put(context.Background(), key, want); err != nil {
			t.Fatal(err)
		}
	}
	held := store.SpoolBufsHeld()
	stop := errors.New("enough")
	for _, c := range []struct {
		key  string
		read int64 // bytes fn reads; -1: all
		want error
	}{{"pack-x", -1, nil}, {"pack-x", 3<<20 + 7, stop}, {"pack-x", 0, stop}, {"pack-cut", -1, nil}} {
		var got []byte
		err := st.GetStream(context.Background(), c.key, int64(len(want)), func(body io.Reader) (err error) {
			if c.read < 0 {
				got, err = io.ReadAll(body)
				return err
			}
			got, err = io.ReadAll(io.LimitReader(body, c.read))
			if err != nil {
				return err
			}
			return stop
		})
		if !errors.Is(err, c.want) {
			t.Fatalf("GetStream %s reading %d bytes = %v, want %v", c.key, c.read, err, c.want)
		}
		if n := c.read; n < 0 && !bytes.Equal(got, want) || n >= 0 && !bytes.Equal(got, want[:n]) {
			t.Fatalf("GetStream %s reading %d bytes: got %d bytes, not the body's", c.key, c.read, len(got))
		}
		if now := store.SpoolBufsHeld(); now != held {
			t.Fatalf("GetStream %s reading %d bytes left %d buffers held, want %d", c.key, c.read, now, held)
		}
	}
}

// A streamed body of several slabs leaves none mapped once read, whole or
// in part.
func TestGetStreamUnmapsItsSlabs(t *testing.T) {
	st := bodyStore(t, nil)
	want := make([]byte, 9<<20)
	if err := st.Put(context.Background(), "pack-x", want); err != nil {
		t.Fatal(err)
	}
	mapped := hugepage.Mapped()
	for _, read := range []int64{-1, 5 << 20} {
		_ = st.GetStream(context.Background(), "pack-x", int64(len(want)), func(body io.Reader) error {
			var first [1]byte
			if _, err := io.ReadFull(body, first[:]); err != nil {
				return err
			}
			if hugepage.Mode() != "" && hugepage.Mapped() <= mapped {
				t.Errorf("reading a 9 MiB body: %d slabs mapped, no more than before it (%d)", hugepage.Mapped(), mapped)
			}
			var err error
			if read < 0 {
				_, err = io.Copy(io.Discard, body)
			} else {
				_, err = io.CopyN(io.Discard, body, read)
			}
			return err
		})
		if got := hugepage.Mapped(); got != mapped {
			t.Fatalf("GetStream reading %d bytes of 9 MiB left %d slabs mapped, want %d", read, got, mapped)
		}
	}
}
