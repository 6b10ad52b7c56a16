package web

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// TestFailSaysWhatWentWrong: an error of a lookup or read is answered by
// what it is — not found 404, over a size cap 500, refused for now 503
// with Retry-After, a deadline 504, the store failing 502 — each but 404
// logged once; a client who left gets 499 and no log line. Before, all but
// not-found were 502, "the store did not answer".
func TestFailSaysWhatWentWrong(t *testing.T) {
	key := `sig/ab/01/evil` + "\x1b[2J"
	gone, leave := context.WithCancel(context.Background())
	leave()
	for _, c := range []struct {
		name  string
		ctx   context.Context
		err   error
		code  int
		logs  bool
		retry bool
	}{
		{"not found", nil, fmt.Errorf("read signature %q: %w", key, fs.ErrNotExist), http.StatusNotFound, false, false},
		{"not a directory", nil, fmt.Errorf("readdir %q: %w", key, index.ErrNotDir), http.StatusNotFound, false, false},
		{"too large", nil, fmt.Errorf("read signature %q: 70000000 bytes, over the cap: %w", key, store.ErrTooLarge), http.StatusInternalServerError, true, false},
		{"over budget", nil, fmt.Errorf("read signature %q: readers hold their budget: %w", key, syscall.EAGAIN), http.StatusServiceUnavailable, true, true},
		{"busy", nil, fmt.Errorf("open signature %q: %w", key, index.ErrBusy), http.StatusServiceUnavailable, true, true},
		{"bad key", nil, fmt.Errorf("read signature %q: %w", key, format.ErrBadKey), http.StatusBadRequest, true, false},
		{"read-only", nil, fmt.Errorf("put %q: %w", key, store.ErrReadOnly), http.StatusForbidden, true, false},
		{"corrupt", nil, fmt.Errorf("read journal %q: %w", key, format.ErrCorrupt), http.StatusBadGateway, true, false},
		{"deadline", nil, fmt.Errorf("read signature %q: %w", key, context.DeadlineExceeded), http.StatusGatewayTimeout, true, false},
		{"store", nil, fmt.Errorf("read signature %q: %w", key, errors.New("connection refused")), http.StatusBadGateway, true, false},
		{"client left", gone, fmt.Errorf("read signature %q: %w", key, context.Canceled), StatusClientClosedRequest, false, false},
		{"client left, other error", gone, fmt.Errorf("read signature %q: %w", key, errors.New("connection refused")), StatusClientClosedRequest, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logged []string
			h := &handler{opts: Options{Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }}}
			r := httptest.NewRequest(http.MethodGet, "/sig/ab/01/evil", nil)
			if c.ctx != nil {
				r = r.WithContext(c.ctx)
			}
			w := httptest.NewRecorder()
			h.fail(w, r, c.err)
			body := w.Body.String()
			if w.Code != c.code {
				t.Errorf("status %d, want %d (%s)", w.Code, c.code, body)
			}
			if got := w.Header().Get("Retry-After"); (got != "") != c.retry || c.retry && got != RetryAfter {
				t.Errorf("Retry-After %q", got)
			}
			if (len(logged) == 1) != c.logs || len(logged) > 1 {
				t.Errorf("logged %q", logged)
			}
			switch {
			case c.code == StatusClientClosedRequest && body != "":
				t.Errorf("a client who left is sent %q", body)
			case c.code != StatusClientClosedRequest && c.code != http.StatusNotFound && !strings.Contains(body, `evil\x1b[2J`):
				t.Errorf("the body does not say the error, escaped: %q", body)
			}
			if strings.Contains(body, "\x1b") {
				t.Errorf("the body holds ESC: %q", body)
			}
		})
	}
}

// TestOversizedSignatureIs500: a signature over format.MaxEntryBytes in the
// store (another writer's, past the cap every oxyfs write keeps) is
// refused before its body is read; serve answers 500 saying it is over its
// cap, not 502 as if the store had not answered.
func TestOversizedSignatureIs500(t *testing.T) {
	ctx := context.Background()
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, RequestTimeout: time.Minute})
	t.Cleanup(func() { st.Close() })
	big := format.Entry{Kind: format.KindSig, Object: objA, Value: "big"}
	if err := st.Put(ctx, big.Key(), []byte("small at first")); err != nil {
		t.Fatal(err)
	}
	f := serveStore(t, st, index.Options{ReadAhead: -1}, Options{})
	// Then replaced, behind oxyfs' back, by more than the cap.
	if err := blob.NewBucket(drv).WriteAll(ctx, big.Key(), make([]byte, format.MaxEntryBytes+1), nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{keyURL(big), keyURL(big) + "?view=page", keyURL(big) + "?download=1"} {
		_, body := f.get(t, p, http.StatusInternalServerError)
		if !strings.Contains(string(body), store.ErrTooLarge.Error()) || !strings.Contains(string(body), fmt.Sprint(format.MaxEntryBytes)) {
			t.Errorf("GET %s: %s", p, body)
		}
	}
}

// TestPropfindSaysWhatWentWrong: a PROPFIND of a signature whose size
// cannot be read (the store fails its GET) is answered by what went wrong —
// 502 with the error, logged — before WebDAV writes a word (before, WebDAV
// answered 405). A listing reads no signature (issue 41, item 8), so
// Depth 1 of its directory lists it, without a size.
func TestPropfindSaysWhatWentWrong(t *testing.T) {
	ctx := context.Background()
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, RequestTimeout: time.Minute})
	t.Cleanup(func() { st.Close() })
	for _, e := range []format.Entry{alice, bob} {
		if err := st.Put(ctx, e.Key(), []byte("sig")); err != nil {
			t.Fatal(err)
		}
	}
	var logged strings.Builder
	f := serveStore(t, st, index.Options{ReadAhead: -1}, Options{Logf: func(format string, args ...any) { fmt.Fprintf(&logged, format+"\n", args...) }})
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		if op == blobtest.OpGet && key == bob.Key() {
			return errors.New("planted: connection refused")
		}
		return nil
	}})
	obj := "/dav/sig/ab/" + objA[2:] + "/"
	for _, c := range []struct{ path, depth string }{{obj + "bob", "0"}, {obj + "bob", "1"}, {"/dav/by-signer/bob/" + objA, "0"}} {
		resp, body := f.do(t, noRedirect, "PROPFIND", c.path, map[string]string{"Depth": c.depth}, "")
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "planted: connection refused") {
			t.Errorf("PROPFIND %s Depth %s: %s\n%s", c.path, c.depth, resp.Status, body)
		}
	}
	if n := strings.Count(logged.String(), "planted: connection refused"); n != 3 {
		t.Errorf("logged %d times, want 3:\n%s", n, logged.String())
	}
	for p, want := range map[string]int{obj: 3, "/dav/by-signer/bob/": 2} {
		ms, _ := f.propfind(t, p, "1")
		if got := hrefs(ms); len(got) != want {
			t.Errorf("PROPFIND %s Depth 1: %v, want it and its %d signature(s)", p, got, want-1)
		}
	}
	// What can be read is answered as before.
	ms, _ := f.propfind(t, obj+"alice", "0")
	if got := hrefs(ms); len(got) != 1 || got[0] != obj+"alice" {
		t.Errorf("PROPFIND of alice: %v", got)
	}
}

// TestDavFSFailureIsNotAPathError: WebDAV leaves out of a PROPFIND, without
// a word, a file whose Stat fails with an *os.PathError ("just bad"); a read
// that failed must stop the answer instead, so davFS gives it another type
// (keeping the error for errors.Is). Not-exist and permission stay
// *os.PathError, as WebDAV tests them.
func TestDavFSFailureIsNotAPathError(t *testing.T) {
	ctx := context.Background()
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, RequestTimeout: time.Minute})
	t.Cleanup(func() { st.Close() })
	if err := st.Put(ctx, bob.Key(), []byte("sig")); err != nil {
		t.Fatal(err)
	}
	f := serveStore(t, st, index.Options{ReadAhead: -1}, Options{})
	planted := errors.New("planted: connection refused")
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		if op == blobtest.OpGet && key == bob.Key() {
			return planted
		}
		return nil
	}})
	d := davFS{ix: f.ix}
	if fi, err := d.Stat(ctx, "/"+bob.Key()); err != nil || fi.Size() != unknownSize {
		t.Errorf("Stat of a signature not read: %v, %v; want its size unknown, read from nothing", fi, err)
	}
	df, err := d.OpenFile(ctx, "/"+bob.Key(), os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	_, err = df.Read(make([]byte, 10))
	var pe *os.PathError
	if err == nil || !strings.Contains(err.Error(), planted.Error()) {
		t.Errorf("Read of a signature whose GET fails: %T %v", err, err)
	}
	// The assertion webdav's handlePropfindError makes, unwrapped: not
	// errors.As, which would also see a wrapped one webdav does not skip.
	if _, ok := err.(*os.PathError); ok { //nolint:errorlint // as webdav asserts it
		t.Errorf("a failed read is an *os.PathError, which WebDAV skips: %v", err)
	}
	_, err = d.Stat(ctx, "/sig/ab/nothing")
	if !errors.As(err, &pe) || !os.IsNotExist(err) {
		t.Errorf("Stat of nothing: %T %v", err, err)
	}
}
