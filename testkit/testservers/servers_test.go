package testservers_test

import (
	"bytes"
	"context"
	"net/url"
	"testing"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	"github.com/oxyfs/oxyfs/testkit/testservers"
)

func TestMain(m *testing.M) { testservers.Main(m) }

var kinds = []string{"s3", "azure", "gcs"}

func openBucket(t *testing.T, u string) *blob.Bucket {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := blob.OpenBucket(ctx, u)
	if err != nil {
		t.Fatalf("OpenBucket(%q): %v", u, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// writeIfNotExist writes key only if it does not exist yet. Azure goes through
// Upload: gocloud's azureblob panics when a NewWriter/WriteAll write fails its
// precondition.
func writeIfNotExist(ctx context.Context, kind string, b *blob.Bucket, key string, data []byte) error {
	opts := &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true}
	if kind == "azure" {
		return b.Upload(ctx, key, bytes.NewReader(data), opts)
	}
	return b.WriteAll(ctx, key, data, opts)
}

func TestServers(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			s := testservers.Start(t, kind)
			t.Logf("%s: %s (%s) started in %v, env %v", kind, s.URL, s.Binary(), s.StartupTime(), s.Environ())
			if again := testservers.Start(t, kind); again != s {
				t.Fatalf("second Start returned a different server")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			u1, u2 := s.NewBucket(t), s.NewBucket(t)
			if u1 == u2 {
				t.Fatalf("NewBucket returned the same URL twice: %s", u1)
			}
			t.Logf("bucket URL: %s", u1)
			b1, b2 := openBucket(t, u1), openBucket(t, u2)

			const key = "dir/hello.txt"
			want := []byte("hello, " + kind)
			if err := b1.WriteAll(ctx, key, want, nil); err != nil {
				t.Fatalf("WriteAll: %v", err)
			}
			got, err := b1.ReadAll(ctx, key)
			if err != nil {
				t.Fatalf("ReadAll: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("ReadAll = %q, want %q", got, want)
			}

			objs, _, err := b1.ListPage(ctx, blob.FirstPageToken, 100, nil)
			if err != nil {
				t.Fatalf("ListPage: %v", err)
			}
			if len(objs) != 1 || objs[0].Key != key || objs[0].Size != int64(len(want)) {
				t.Fatalf("ListPage = %+v, want just %q of size %d", objs, key, len(want))
			}
			objs, _, err = b2.ListPage(ctx, blob.FirstPageToken, 100, nil)
			if err != nil {
				t.Fatalf("ListPage of second bucket: %v", err)
			}
			if len(objs) != 0 {
				t.Fatalf("second bucket not empty: %+v", objs)
			}

			err = writeIfNotExist(ctx, kind, b1, key, []byte("overwritten"))
			if gcerrors.Code(err) != gcerrors.FailedPrecondition {
				t.Fatalf("IfNotExist write over existing key: err = %v (code %v), want FailedPrecondition", err, gcerrors.Code(err))
			}
			if got, err := b1.ReadAll(ctx, key); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("after refused write: ReadAll = %q, %v; want %q", got, err, want)
			}
			if err := writeIfNotExist(ctx, kind, b1, "new-key", []byte("x")); err != nil {
				t.Fatalf("IfNotExist write of a new key: %v", err)
			}
		})
	}
}

func TestKillRestart(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			s := testservers.Start(t, kind)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			u := s.NewBucket(t)
			b := openBucket(t, u)
			want := []byte("survives a restart")
			if err := b.WriteAll(ctx, "persist", want, nil); err != nil {
				t.Fatalf("WriteAll: %v", err)
			}

			s.Kill(t)
			short, cancelShort := context.WithTimeout(ctx, time.Second)
			_, err := b.ReadAll(short, "persist")
			cancelShort()
			if err == nil {
				t.Fatalf("ReadAll succeeded while the server was killed")
			}

			t0 := time.Now()
			s.Restart(t)
			t.Logf("%s restarted in %v", kind, time.Since(t0))
			got, err := b.ReadAll(ctx, "persist")
			if err != nil {
				t.Fatalf("ReadAll after restart: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("ReadAll after restart = %q, want %q", got, want)
			}
			// Buckets made before the kill keep working, and new ones can be made.
			if err := b.WriteAll(ctx, "after", []byte("x"), nil); err != nil {
				t.Fatalf("WriteAll after restart: %v", err)
			}
			b2 := openBucket(t, s.NewBucket(t))
			if err := b2.WriteAll(ctx, "k", []byte("y"), nil); err != nil {
				t.Fatalf("WriteAll to a bucket made after restart: %v", err)
			}
		})
	}
}

func TestBucketURLHost(t *testing.T) {
	s := testservers.Start(t, "gcs")
	u, err := url.Parse(s.BucketURL("some-bucket"))
	if err != nil || u.Host != "some-bucket" {
		t.Fatalf("BucketURL = %v, %v; want host some-bucket", u, err)
	}
}
