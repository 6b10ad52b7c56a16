package lyingproxy_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

func TestMain(m *testing.M) { testservers.Main(m) }

// TestLiesReachTheStore: each lie, through the real server and the store's
// own clients, does what the package says (the request shapes the
// proxy classifies are the ones the SDKs send).
func TestLiesReachTheStore(t *testing.T) {
	for _, kind := range []string{"s3", "gcs", "azure"} {
		t.Run(kind, func(t *testing.T) {
			srv := testservers.Start(t, kind)
			p := lyingproxy.Start(t, srv.Kind, srv.URL)
			ctx := context.Background()
			st, err := store.Open(ctx, p.StoreURL(srv.NewBucket(t)), store.Options{PageSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			all := []string{"a/1", "a/2", "a/3", "a/4", "b/1"}
			for _, k := range all {
				if err := st.Put(ctx, k, []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			list := func(prefix string) []string {
				t.Helper()
				var keys []string
				if err := st.List(ctx, prefix, "", func(it store.ListItem) error { keys = append(keys, it.Key); return nil }); err != nil {
					t.Fatalf("list %s: %v", prefix, err)
				}
				return keys
			}
			p.ResetCounts() // the puts' conditions probe sent a DELETE
			if got := list("a/"); !slices.Equal(got, all[:4]) {
				t.Fatalf("honest: %v", got)
			}

			p.Set(lyingproxy.OmitKeys("a/3"))
			if got := list("a/"); !slices.Equal(got, []string{"a/1", "a/2", "a/4"}) {
				t.Errorf("OmitKeys(a/3): %v", got)
			}
			p.Set(lyingproxy.CutPage())
			if got := list("a/"); !slices.Equal(got, []string{"a/1"}) {
				t.Errorf("CutPage: %v", got)
			}
			p.Set(lyingproxy.EmptyPages())
			if got := list("a/"); len(got) != 0 {
				t.Errorf("EmptyPages: %v", got)
			}
			p.Set(lyingproxy.ListsUnder("b/"), lyingproxy.EmptyPages())
			if got := list("a/"); !slices.Equal(got, all[:4]) {
				t.Errorf("ListsUnder(b/): a/ listed %v", got)
			}

			p.Set(lyingproxy.NotFound("a/1"))
			if _, err := st.Get(ctx, "a/1"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("NotFound: GET err %v", err)
			}
			if ok, err := st.Exists(ctx, "a/1"); ok || err != nil {
				t.Errorf("NotFound: HEAD %v, %v", ok, err)
			}
			if _, err := st.Get(ctx, "a/2"); err != nil {
				t.Errorf("NotFound(a/1): a/2 %v", err)
			}

			p.Set(lyingproxy.KeepOnDelete("a/2"))
			if err := st.Delete(ctx, "a/2"); err != nil {
				t.Errorf("KeepOnDelete: %v", err)
			}
			if err := st.Delete(ctx, "a/4"); err != nil {
				t.Errorf("KeepOnDelete(a/2): delete a/4: %v", err)
			}
			p.Set()
			if ok, _ := st.Exists(ctx, "a/2"); !ok {
				t.Errorf("KeepOnDelete: a/2 is gone")
			}
			if ok, _ := st.Exists(ctx, "a/4"); ok {
				t.Errorf("KeepOnDelete(a/2): a/4 is still there")
			}
			if p.Count(lyingproxy.OpList) == 0 || p.Count(lyingproxy.OpDelete) != 2 {
				t.Errorf("counts: LIST %d DELETE %d", p.Count(lyingproxy.OpList), p.Count(lyingproxy.OpDelete))
			}
		})
	}
}
