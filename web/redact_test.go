package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
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
	evil := format.Entry{Kind: format.KindSig, Object: objA, Value: "evil\x1b]0;pwned\x07"}
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

// TestHeadersAreEscaped: a signer named with ESC, BEL, DEL and a C1 CSI
// reaches no response header raw — X-Oxy-Key is escaped as bodies are
// (termsafe.Escape), the download's filename and the redirects' Location
// encode it. The headers are read off the wire. Before, X-Oxy-Key held the
// key's bytes as they were.
func TestHeadersAreEscaped(t *testing.T) {
	evil := format.Entry{Kind: format.KindSig, Object: objA, Value: "evil\x1b]0;pwned\x07\x7f\u009b"}
	f := newFixtureOf(t, Options{}, []format.Entry{evil})
	for _, target := range []string{
		"GET " + keyURL(evil),
		"HEAD " + keyURL(evil),
		"GET " + keyURL(evil) + "?download=1",
		"GET " + keyURL(evil) + "?view=page",
		"GET " + escapePath("/by-signer/"+evil.Value+"/"+evil.Object),
		"GET " + escapePath("/sig/ab/"+objA[2:]+"/"+evil.Value) + "/",
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", target)
		resp, err := io.ReadAll(conn)
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		head, _, ok := strings.Cut(string(resp), "\r\n\r\n")
		if !ok || !strings.HasPrefix(head, "HTTP/1.1 ") {
			t.Fatalf("%s: %q", target, resp)
		}
		for _, line := range strings.Split(head, "\r\n") {
			if !termsafe.Safe(line) {
				t.Errorf("%s: the header %q is not safe on a terminal", target, line)
			}
		}
		if strings.HasSuffix(strings.Fields(target)[1], keyURL(evil)) && !strings.Contains(head, "\r\nX-Oxy-Key: "+termsafe.Escape(evil.Key())+"\r\n") {
			t.Errorf("%s: no X-Oxy-Key %s in\n%s", target, termsafe.Escape(evil.Key()), head)
		}
	}
}
