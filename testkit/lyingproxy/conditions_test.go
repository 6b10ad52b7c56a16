package lyingproxy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
	"github.com/oxyfs/oxyfs/testkit/testservers"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// TestStripConditionsAndFlood: through the real servers, a create-only
// write over an existing key is refused while the proxy is honest and
// lands once StripConditions drops its condition (and the proxy counts
// it); FloodBody sends a body past its size with no length, which the
// store refuses at the cap.
func TestStripConditionsAndFlood(t *testing.T) {
	for _, kind := range []string{"s3", "gcs", "azure"} {
		t.Run(kind, func(t *testing.T) {
			srv := testservers.Start(t, kind)
			p := lyingproxy.Start(t, srv.Kind, srv.URL)
			ctx := context.Background()
			st, err := store.Open(ctx, p.StoreURL(srv.NewBucket(t)), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			const key = "strip/k"
			if err := st.Put(ctx, key, []byte("first")); err != nil {
				t.Fatal(err)
			}
			createOnly := func(data string) error {
				return st.Bucket().Upload(ctx, key, bytes.NewReader([]byte(data)), &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true})
			}
			if err := createOnly("second"); gcerrors.Code(err) != gcerrors.FailedPrecondition {
				t.Fatalf("honest: a create-only write over an existing key: %v, want a failed precondition", err)
			}
			if p.Stripped() != 0 {
				t.Fatalf("honest: %d writes stripped", p.Stripped())
			}
			p.Set(lyingproxy.StripConditions())
			if err := createOnly("third"); err != nil {
				t.Fatalf("stripped: a create-only write over an existing key: %v, want it to land", err)
			}
			if got, err := st.Get(ctx, key); err != nil || string(got) != "third" {
				t.Fatalf("stripped: the key holds %q, %v; want the write that lost its condition", got, err)
			}
			if p.Stripped() == 0 {
				t.Fatalf("stripped: the proxy counted no stripped write")
			}
			if err := st.Put(ctx, "strip/plain", []byte("x")); err != nil {
				t.Fatalf("stripped: an unconditional put: %v", err)
			}

			p.Set(lyingproxy.FloodBody(1<<20, key))
			if err := st.GetStream(ctx, key, 4096, func(body io.Reader) error { _, err := io.Copy(io.Discard, body); return err }); !errors.Is(err, store.ErrTooLarge) {
				t.Fatalf("FloodBody: a 4 KiB-capped GET: %v, want ErrTooLarge", err)
			}
			if got, err := st.Get(ctx, "strip/plain"); err != nil || string(got) != "x" {
				t.Fatalf("FloodBody(%s): another key read %q, %v", key, got, err)
			}
		})
	}
}
