package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"gocloud.dev/blob"
)

// errBodyFailed is the error of a body that fails midway.
var errBodyFailed = errors.New("storetest: the body failed midway")

// failingBody yields the first half of data in pieces, then fails: before
// failing it calls abort (nil: none).
type failingBody struct {
	data  []byte
	sent  int
	abort func()
}

func (b *failingBody) Read(p []byte) (int, error) {
	half := len(b.data) / 2
	if b.sent >= half {
		if b.abort != nil {
			b.abort()
		}
		return 0, errBodyFailed
	}
	n := copy(p[:min(len(p), 16<<10)], b.data[b.sent:half])
	b.sent += n
	return n, nil
}

// testFailedPut checks that a PUT aborted midway (its context canceled
// while the body is being sent: gocloud's way to abort a write, and what a
// request timeout does) leaves the key as it was: an existing key keeps its
// old bytes, a new key is not made (no empty or cut key). A body whose
// reader fails with the context still live is not a case: gocloud's GCS and
// mem drivers then commit what they got, and the store never sends such a
// body (its bodies are in memory). The file driver's own write failing
// (ENOSPC, EIO) is: the tmpfs test of package store fills a disk.
func testFailedPut(t *testing.T, h Harness) {
	s := h.NewStore(t)(t)
	body := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB
	for _, tc := range []struct {
		name   string
		cancel bool
	}{{"context canceled midway", true}} {
		for _, old := range [][]byte{nil, []byte("the old bytes")} {
			key := "sig/fa/il/" + map[bool]string{true: "canceled", false: "failed"}[tc.cancel] + map[bool]string{true: "-new", false: "-old"}[old == nil]
			ctx, cancel := context.WithCancel(context.Background())
			if old != nil {
				must(t, s.Put(ctx, key, old))
			}
			b := &failingBody{data: body}
			if tc.cancel {
				b.abort = cancel
			}
			err := s.Bucket().Upload(ctx, key, b, &blob.WriterOptions{ContentType: "application/octet-stream"})
			cancel()
			if err == nil {
				t.Errorf("%s, %s: the upload succeeded", tc.name, key)
			}
			got, err := s.Get(context.Background(), key)
			switch {
			case old == nil && !errors.Is(err, store.ErrNotFound):
				t.Errorf("%s: new key %s after the failed PUT: %d bytes, %v; want it absent", tc.name, key, len(got), err)
			case old != nil && (err != nil || !bytes.Equal(got, old)):
				t.Errorf("%s: key %s after the failed PUT: %d bytes, %v; want its old %d bytes", tc.name, key, len(got), err, len(old))
			}
		}
	}
	var left []string
	must(t, s.List(context.Background(), "sig/fa/", "", func(it store.ListItem) error {
		left = append(left, it.Key)
		return nil
	}))
	want := 1 // the old key
	if len(left) != want {
		t.Errorf("after the failed PUTs the store lists %q, want only the %d keys written whole", left, want)
	}
}

var _ io.Reader = (*failingBody)(nil)
