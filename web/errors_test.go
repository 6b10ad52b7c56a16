package web

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/blobtest"
	"github.com/oxyfs/oxyfs/store"
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

// TestOversizedSignatureIs500: a signature over store.MaxEntryBytes in the
// store (another writer's, past the cap every oxyfs write keeps) is
// refused before its body is read; serve answers 500 saying it is over its
// cap, not 502 as if the store had not answered.
func TestOversizedSignatureIs500(t *testing.T) {
	ctx := context.Background()
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, RequestTimeout: time.Minute})
	t.Cleanup(func() { st.Close() })
	big := store.Entry{Kind: store.KindSig, Object: objA, Value: "big"}
	if err := st.Put(ctx, big.Key(), []byte("small at first")); err != nil {
		t.Fatal(err)
	}
	f := serveStore(t, st, index.Options{ReadAhead: -1}, Options{})
	// Then replaced, behind oxyfs' back, by more than the cap.
	if err := blob.NewBucket(drv).WriteAll(ctx, big.Key(), make([]byte, store.MaxEntryBytes+1), nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{keyURL(big), keyURL(big) + "?view=page", keyURL(big) + "?download=1"} {
		_, body := f.get(t, p, http.StatusInternalServerError)
		if !strings.Contains(string(body), store.ErrTooLarge.Error()) || !strings.Contains(string(body), fmt.Sprint(store.MaxEntryBytes)) {
			t.Errorf("GET %s: %s", p, body)
		}
	}
}
