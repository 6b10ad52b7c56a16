package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/blobtest"
	"github.com/oxyfs/oxyfs/store"
)

// TestFailedReadShowsNoSecretAndNoControl: a read that fails with an SDK's
// error quoting the endpoint (user, password, a presigned signature) is
// 502 with the error redacted, and the log line is redacted too; a name
// holding ESC and BEL reaches neither raw.
func TestFailedReadShowsNoSecretAndNoControl(t *testing.T) {
	ctx := context.Background()
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, RequestTimeout: time.Second})
	t.Cleanup(func() { st.Close() })
	evil := store.Entry{Kind: store.KindSig, Object: objA, Value: "evil\x1b]0;pwned\x07"}
	if err := st.Put(ctx, evil.Key(), []byte("sig")); err != nil {
		t.Fatal(err)
	}
	if _, err := fold.Complete(ctx, st, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(ctx, st, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		if strings.HasPrefix(key, "sig/") {
			return fmt.Errorf(`Get "http://planted-user:***@127.0.0.1:1/b/%s?X-Amz-Signature=PLANTEDSIG": %w`, key, errors.New("connection refused"))
		}
		return nil
	}})
	var mu sync.Mutex
	var logged strings.Builder
	srv := httptest.NewServer(Handler(ix, Options{Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&logged, format+"\n", args...)
	}}))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/" + escapePath(evil.Key()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502: %s", resp.StatusCode, body)
	}
	mu.Lock()
	out := string(body) + logged.String()
	mu.Unlock()
	if !strings.Contains(out, `http://REDACTED@127.0.0.1:1/b/sig/ab/`) || !strings.Contains(out, `evil\x1b]0;pwned\x07?X-Amz-Signature=REDACTED`) {
		t.Errorf("the error is not shown redacted and escaped:\n%s", out)
	}
	for _, x := range []string{"planted-user", "PLANTEDSIG", "\x1b", "\x07"} {
		if strings.Contains(out, x) {
			t.Errorf("%q shown: %q", x, out)
		}
	}
}
