package store_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// leanKinds are the backends with a lean GET.
var leanKinds = []string{"s3", "gcs", "azure"}

// leanPair opens one fresh bucket of kind twice: on the lean path and on
// the SDK path (Options.SDKReads). It fails the test if the first is not
// on the lean path.
func leanPair(t testing.TB, kind, rawURL string) (lean, sdk *store.Store) {
	t.Helper()
	ctx := context.Background()
	var err error
	if lean, err = store.Open(ctx, rawURL, store.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lean.Close() })
	if sdk, err = store.Open(ctx, rawURL, store.Options{SDKReads: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdk.Close() })
	if p := lean.ReadPath(); !strings.HasPrefix(p, "lean (") {
		t.Fatalf("%s: read path %q, want the lean path", kind, p)
	}
	if p := sdk.ReadPath(); !strings.HasPrefix(p, "sdk (") {
		t.Fatalf("%s with SDKReads: read path %q, want the SDK path", kind, p)
	}
	return lean, sdk
}

// admitAll admits every body and counts the calls.
type admitAll struct{ calls, released int }

func (a *admitAll) admit(int64) (func(), error) {
	a.calls++
	return func() { a.released++ }, nil
}

// TestLeanGetAnswersAsTheSDK: on every backend, the lean GET returns the
// SDK path's bytes and Last-Modified, the same ErrNotFound for a missing
// key, and each read is one GET in Counts (on S3, on the wire too) sent
// by the lean path (LeanGets), so it cannot fall back unnoticed.
func TestLeanGetAnswersAsTheSDK(t *testing.T) {
	for _, kind := range leanKinds {
		t.Run(kind, func(t *testing.T) {
			srv := testservers.Start(t, kind)
			lean, sdk := leanPair(t, kind, srv.NewBucket(t))
			ctx := context.Background()
			// A signature of 2 KiB, and one whose value needs escaping in
			// a URL (a space, @, +, non-ASCII), which the SDK path reads
			// under the same name.
			keys := map[string][]byte{
				"sig/ab/cdef/alice":                  bytes.Repeat([]byte("s"), 2048),
				"sig/ab/cdef/bob smith+x@example.ør": []byte("bob's signature"),
				"sig/ab/cdef/empty":                  {},
			}
			for k, v := range keys {
				if err := lean.Put(ctx, k, v); err != nil {
					t.Fatal(err)
				}
			}
			for k, v := range keys {
				beforeLean, beforeWire, sent := lean.Counts(), wire(lean), lean.LeanGets()
				var a admitAll
				got, mod, err := lean.GetAdmitted(ctx, k, a.admit)
				if err != nil || !bytes.Equal(got, v) {
					t.Fatalf("lean GET %q = %q, %v; want %q", k, got, err, v)
				}
				if a.calls < 1 || a.released != a.calls {
					t.Errorf("lean GET %q: admitted %d times, released %d", k, a.calls, a.released)
				}
				if d := lean.Counts().Sub(beforeLean); d != (store.Counts{Get: 1}) {
					t.Errorf("lean GET %q sent %v, want one GET", k, d)
				}
				if w, ok := lean.WireCounts(); ok && w.Sub(beforeWire) != (store.Counts{Get: 1}) {
					t.Errorf("lean GET %q put %v on the wire, want one GET", k, w.Sub(beforeWire))
				}
				if n := lean.LeanGets() - sent; n != 1 {
					t.Errorf("lean GET %q: %d requests on the lean path, want 1", k, n)
				}
				var sa admitAll
				want, wantMod, err := sdk.GetAdmitted(ctx, k, sa.admit)
				if err != nil || !bytes.Equal(want, got) {
					t.Fatalf("SDK GET %q = %q, %v", k, want, err)
				}
				if sa.calls != a.calls {
					t.Errorf("GET %q: admitted %d times on the lean path, %d on the SDK's", k, a.calls, sa.calls)
				}
				if mod.IsZero() || !mod.Equal(wantMod) {
					t.Errorf("lean GET %q: Last-Modified %v, the SDK's %v", k, mod, wantMod)
				}
				if since := time.Since(mod); since < -time.Hour || since > time.Hour {
					t.Errorf("lean GET %q: Last-Modified %v, not about now", k, mod)
				}
			}
			// A key gocloud would escape is read through the SDK, under
			// the same name.
			const odd = "sig/ab/cdef/100%#x"
			if err := lean.Put(ctx, odd, []byte("odd")); err != nil {
				t.Fatal(err)
			}
			sent := lean.LeanGets()
			if got, _, err := lean.GetAdmitted(ctx, odd, nil); err != nil || string(got) != "odd" || lean.LeanGets() != sent {
				t.Errorf("a key the SDK escapes: %q, %v, %d lean GETs; want odd through the SDK", got, err, lean.LeanGets()-sent)
			}
			if sdk.LeanGets() != 0 {
				t.Errorf("the SDK-path store sent %d lean GETs", sdk.LeanGets())
			}
			before, sent := lean.Counts(), lean.LeanGets()
			_, _, err := lean.GetAdmitted(ctx, "sig/ab/cdef/nobody", nil)
			_, _, sdkErr := sdk.GetAdmitted(ctx, "sig/ab/cdef/nobody", nil)
			if !errors.Is(err, store.ErrNotFound) || !errors.Is(sdkErr, store.ErrNotFound) {
				t.Fatalf("a missing key: lean %v, SDK %v; want ErrNotFound from both", err, sdkErr)
			}
			if !strings.Contains(err.Error(), `get "sig/ab/cdef/nobody"`) {
				t.Errorf("a missing key: %v, want the operation and key named", err)
			}
			if d := lean.Counts().Sub(before); d != (store.Counts{Get: 1}) || lean.LeanGets()-sent != 1 {
				t.Errorf("a missing key sent %v (%d lean), want one GET, not retried", d, lean.LeanGets()-sent)
			}
		})
	}
}

// wire is the store's wire counts where it keeps them (S3), else zero.
func wire(st *store.Store) store.Counts {
	c, _ := st.WireCounts()
	return c
}

// TestLeanGetRefusesOverItsCap: a body whose declared size is over the
// cap is refused before its body is read, with no admission asked, as on
// the SDK path; one GET.
func TestLeanGetRefusesOverItsCap(t *testing.T) {
	for _, kind := range leanKinds {
		t.Run(kind, func(t *testing.T) {
			srv := testservers.Start(t, kind)
			lean, sdk := leanPair(t, kind, srv.NewBucket(t))
			ctx := context.Background()
			const key = "sig/ab/cdef/big"
			if err := lean.Put(ctx, key, bytes.Repeat([]byte("b"), 1000)); err != nil {
				t.Fatal(err)
			}
			for _, st := range []*store.Store{lean, sdk} {
				var a admitAll
				before, sent := st.Counts(), st.LeanGets()
				_, _, err := store.GetAdmittedAtMost(st, ctx, key, 100, a.admit)
				want := `get "sig/ab/cdef/big": 1000 bytes, over the cap of 100 for such a key: over its size cap`
				if err == nil || err.Error() != want || !errors.Is(err, store.ErrTooLarge) {
					t.Errorf("%s: %v, want %s", st.ReadPath(), err, want)
				}
				if a.calls != 0 {
					t.Errorf("%s: admission asked %d times for a body over its cap", st.ReadPath(), a.calls)
				}
				if d := st.Counts().Sub(before); d != (store.Counts{Get: 1}) {
					t.Errorf("%s: sent %v, want one GET", st.ReadPath(), d)
				}
				if st == lean && st.LeanGets()-sent != 1 {
					t.Errorf("the refused read did not go on the lean path")
				}
			}
		})
	}
}

// TestLeanGetFloodedIsCutAtItsCap: a server that answers with no length
// and more bytes than the object holds is read to one byte past the cap
// and refused (lyingproxy.FloodBody), on the lean path.
func TestLeanGetFloodedIsCutAtItsCap(t *testing.T) {
	for _, kind := range leanKinds {
		t.Run(kind, func(t *testing.T) {
			st, p := liarStore(t, kind, store.Options{})
			if !strings.HasPrefix(st.ReadPath(), "lean (") {
				t.Fatalf("through the proxy: read path %q, want lean", st.ReadPath())
			}
			p.Set(lyingproxy.FloodBody(5000, "a/1"))
			ctx := context.Background()
			sent := st.LeanGets()
			var sizes []int64
			_, _, err := store.GetAdmittedAtMost(st, ctx, "a/1", 1000, func(n int64) (func(), error) {
				sizes = append(sizes, n)
				return func() {}, nil
			})
			want := `get "a/1": more than 1000 bytes, the cap for such a key: over its size cap`
			if err == nil || err.Error() != want {
				t.Fatalf("a flooded lean GET: %v, want %s", err, want)
			}
			if len(sizes) == 0 || sizes[0] != -1 {
				t.Errorf("admissions %v, want the first for an undeclared size (-1)", sizes)
			}
			if st.LeanGets()-sent != 1 {
				t.Errorf("%d lean GETs, want 1", st.LeanGets()-sent)
			}
			p.Set()
			if got, _, err := st.GetAdmitted(ctx, "a/1", nil); err != nil || string(got) != "a/1" {
				t.Fatalf("honest again: %q, %v", got, err)
			}
		})
	}
}

// TestLeanGetRetries: a lean GET answered 503 is sent again, each attempt
// one GET on the lean path, MaxReadTries in all, then ErrUnavailable
// naming the status.
func TestLeanGetRetries(t *testing.T) {
	for _, kind := range leanKinds {
		t.Run(kind, func(t *testing.T) {
			st, p := liarStore(t, kind, store.Options{})
			p.Set(lyingproxy.ErrorBodies(503, 100, lyingproxy.OpGet))
			ctx := context.Background()
			before, sent := st.Counts(), st.LeanGets()
			_, _, err := st.GetAdmitted(ctx, "a/1", nil)
			if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "503") {
				t.Fatalf("a GET answered 503 every time: %v, want ErrUnavailable naming the status", err)
			}
			if d := st.Counts().Sub(before); d.Get != store.MaxReadTries || st.LeanGets()-sent != store.MaxReadTries {
				t.Errorf("sent %v (%d lean), want %d GETs", d, st.LeanGets()-sent, store.MaxReadTries)
			}
		})
	}
}

// TestLeanGetUnderAPrefix: a store opened with prefix= reads its keys
// under the prefix on the lean path, as the SDK path names them.
func TestLeanGetUnderAPrefix(t *testing.T) {
	for _, kind := range leanKinds {
		t.Run(kind, func(t *testing.T) {
			srv := testservers.Start(t, kind)
			u := srv.NewBucket(t)
			sep := "?"
			if strings.Contains(u, "?") {
				sep = "&"
			}
			lean, _ := leanPair(t, kind, u+sep+"prefix=pre/")
			_, whole := leanPair(t, kind, u)
			ctx := context.Background()
			if err := whole.Put(ctx, "pre/sig/ab/cd/x", []byte("under")); err != nil {
				t.Fatal(err)
			}
			if err := whole.Put(ctx, "sig/ab/cd/x", []byte("outside")); err != nil {
				t.Fatal(err)
			}
			sent := lean.LeanGets()
			if got, _, err := lean.GetAdmitted(ctx, "sig/ab/cd/x", nil); err != nil || string(got) != "under" || lean.LeanGets()-sent != 1 {
				t.Fatalf("a prefixed lean GET: %q, %v (%d lean); want under, on the lean path", got, err, lean.LeanGets()-sent)
			}
		})
	}
}
