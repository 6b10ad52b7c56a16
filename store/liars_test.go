package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
	"github.com/oxyfs/oxyfs/testkit/memtest"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// The store never takes a server's word (issue 23) and bounds what a
// server answers (issue 25): each test runs on versitygw, fake-gcs-server
// and Azurite through testkit/lyingproxy.

var liarKinds = []string{"s3", "gcs", "azure"}

// liarKeys are written honestly before the proxy lies.
var liarKeys = []string{"a/1", "a/2", "a/3", "a/4", "a/5", "b/1", "b/2"}

// liarStore opens a fresh bucket of kind through a lying proxy, with
// liarKeys in it and the proxy's counts zeroed.
func liarStore(t *testing.T, kind string, opts store.Options) (*store.Store, *lyingproxy.Proxy) {
	t.Helper()
	srv := testservers.Start(t, kind)
	p := lyingproxy.Start(t, srv.Kind, srv.URL)
	ctx := context.Background()
	st, err := store.Open(ctx, p.StoreURL(srv.NewBucket(t)), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, k := range liarKeys {
		if err := st.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	p.ResetCounts()
	return st, p
}

// listAll lists prefix whole, stopping (and canceling) after 1000 items so
// that a listing that would never end ends.
func listAll(st *store.Store, prefix string) ([]string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var keys []string
	err := st.List(ctx, prefix, "", func(it store.ListItem) error {
		keys = append(keys, it.Key)
		if len(keys) >= 1000 {
			cancel()
		}
		return nil
	})
	return keys, err
}

func TestListFailsWhenTheServerIgnoresThePrefix(t *testing.T) {
	for _, kind := range liarKinds {
		t.Run(kind, func(t *testing.T) {
			st, p := liarStore(t, kind, store.Options{})
			p.Set(lyingproxy.IgnorePrefix())
			keys, err := listAll(st, "a/")
			if !errors.Is(err, store.ErrBadListing) || !strings.Contains(err.Error(), `"b/1"`) || !strings.Contains(err.Error(), `"a/"`) {
				t.Fatalf("a LIST of a/ that answered the whole bucket: keys %v, err %v; want ErrBadListing naming b/1 and a/", keys, err)
			}
			p.Set()
			if keys, err := listAll(st, "a/"); err != nil || len(keys) != 5 {
				t.Fatalf("honest again: keys %v, err %v", keys, err)
			}
		})
	}
}

// TestListEndsOnARepeatedContinuation: with pages of 2 keys, each call of
// ListPage is one LIST, and the second page answers the token it was asked
// with; with pages of 1000, gocloud fills one page from several LISTs, and
// the third would carry the token the second did.
func TestListEndsOnARepeatedContinuation(t *testing.T) {
	for _, kind := range liarKinds {
		for _, size := range []int{2, 1000} {
			t.Run(fmt.Sprintf("%s/%d-key-pages", kind, size), func(t *testing.T) {
				st, p := liarStore(t, kind, store.Options{PageSize: size})
				p.Set(lyingproxy.RepeatToken())
				keys, err := listAll(st, "a/")
				t.Logf("%s, %d-key pages: a continuation that repeats: %d LISTs, %d keys, err %v", kind, size, p.Count(lyingproxy.OpList), len(keys), err)
				if !errors.Is(err, store.ErrBadListing) {
					t.Fatalf("a LIST whose continuation repeats: %d keys, err %v; want ErrBadListing", len(keys), err)
				}
				if n := p.Count(lyingproxy.OpList); n > 2 {
					t.Errorf("%d LISTs sent, want 2", n)
				}
			})
		}
	}
}

func TestListEndsAfterEmptyPagesInARow(t *testing.T) {
	for _, kind := range liarKinds {
		t.Run(kind, func(t *testing.T) {
			st, p := liarStore(t, kind, store.Options{})
			p.Set(lyingproxy.EndlessEmptyPages())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Without the check the listing never ends: cancel it after
			// 1000 LISTs.
			stop := make(chan struct{})
			go func() {
				for p.Count(lyingproxy.OpList) < 1000 {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
				cancel()
			}()
			err := st.List(ctx, "a/", "", func(store.ListItem) error { return nil })
			close(stop)
			t.Logf("%s: empty pages that say there is more: %d LISTs, err %v", kind, p.Count(lyingproxy.OpList), err)
			if !errors.Is(err, store.ErrBadListing) || !strings.Contains(err.Error(), "empty") {
				t.Fatalf("err %v, want ErrBadListing for empty pages", err)
			}
			if c := p.Count(lyingproxy.OpList); c != 65 {
				t.Errorf("%d LISTs, want 65", c)
			}
		})
	}
}

// TestListFailsOnATruncatedPageWithoutToken: only S3 pages say "truncated";
// GCS and Azure pages without a continuation are the last by definition.
func TestListFailsOnATruncatedPageWithoutToken(t *testing.T) {
	st, p := liarStore(t, "s3", store.Options{PageSize: 2})
	p.Set(lyingproxy.TruncatedNoToken())
	keys, err := listAll(st, "a/")
	if !errors.Is(err, store.ErrBadListing) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("a page marked truncated with no continuation: keys %v, err %v; want ErrBadListing", keys, err)
	}
}

// padBytes and errorBodyBytes are what the proxy sends (issue 25.3 used
// 768 MiB pages and 128 MiB error bodies).
const (
	padBytes       = 256 << 20
	errorBodyBytes = 128 << 20
)

func TestListPageBodyIsBounded(t *testing.T) {
	for _, kind := range liarKinds {
		t.Run(kind, func(t *testing.T) {
			st, p := liarStore(t, kind, store.Options{})
			p.Set(lyingproxy.PadList(padBytes))
			var err error
			peak := memtest.Peak(func() { _, _, err = st.ListPage(context.Background(), "a/", "", nil, 0) })
			t.Logf("%s: a LIST page padded to %d MiB: heap peak %.1f MiB, err %v", kind, padBytes>>20, float64(peak)/memtest.MiB, err)
			if !errors.Is(err, store.ErrTooLarge) {
				t.Errorf("err %v, want ErrTooLarge", err)
			}
			// The page is cut at 16 MiB; a decoder's buffer growing to it
			// holds the old and the new one at once (about 2.25 × 16 MiB,
			// measured 35 MiB, 51 MiB under -race): well under the page.
			if peak > 80*memtest.MiB {
				t.Errorf("heap peak %d MiB, want at most 80 MiB", peak>>20)
			}
		})
	}
}

func TestErrorBodiesAreBounded(t *testing.T) {
	for _, kind := range liarKinds {
		t.Run(kind, func(t *testing.T) {
			st, p := liarStore(t, kind, store.Options{})
			p.Set(lyingproxy.ErrorBodies(http.StatusServiceUnavailable, errorBodyBytes, lyingproxy.OpGet))
			var err error
			peak := memtest.Peak(func() { _, err = st.Get(context.Background(), "a/1") })
			t.Logf("%s: GET answered 503 with %d MiB bodies (%d GETs): heap peak %.1f MiB, err %v", kind, errorBodyBytes>>20, p.Count(lyingproxy.OpGet), float64(peak)/memtest.MiB, err)
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("err %v, want ErrUnavailable", err)
			}
			if peak > 16*memtest.MiB {
				t.Errorf("heap peak %d MiB, want at most 16 MiB", peak>>20)
			}
		})
	}
}

func TestNoRequestFollowsARedirectToAnotherHost(t *testing.T) {
	for _, kind := range liarKinds {
		t.Run(kind, func(t *testing.T) {
			st, p := liarStore(t, kind, store.Options{})
			ctx := context.Background()
			for _, to := range []struct {
				name string
				t    lyingproxy.Target
				rec  *lyingproxy.Recorder
			}{{"another host", lyingproxy.OtherHost, p.OtherHost()}, {"another port", lyingproxy.OtherPort, p.OtherPort()}} {
				p.Set(lyingproxy.Redirect(to.t))
				_, gerr := st.Get(ctx, "a/1")
				_, _, lerr := st.ListPage(ctx, "a/", "", nil, 0)
				for _, err := range []error{gerr, lerr} {
					if err == nil || !strings.Contains(err.Error(), "redirect refused") {
						t.Errorf("%s: err %v, want a refused redirect", to.name, err)
					}
				}
				if n, auth := to.rec.Requests(), to.rec.Authorizations(); n != 0 {
					t.Errorf("%s: %d requests followed the redirect, Authorization %q", to.name, n, auth)
				}
			}
		})
	}
}
