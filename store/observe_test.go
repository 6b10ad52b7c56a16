package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"

	"github.com/oxyfs/oxyfs/store"
)

// TestObserveOneCallPerRequest checks Options.Observe: one call per request
// counted in Counts, with its kind and error.
func TestObserveOneCallPerRequest(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int64{}
	failed := map[string]int64{}
	st := store.New(memblob.OpenBucket(nil), "mem", "", store.Options{Layout: store.LayoutBucket,
		Observe: func(kind string, d time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			calls[kind]++
			if err != nil {
				failed[kind]++
			}
		}})
	ctx := context.Background()
	if err := st.Put(ctx, "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := st.Get(ctx, "a"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Get(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing: %v, want ErrNotFound", err)
	}
	if _, err := st.Exists(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := st.List(ctx, "", "", func(store.ListItem) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	c := st.Counts()
	want := map[string]int64{"list": c.List, "get": c.Get, "head": c.Head, "put": c.Put, "delete": c.Delete}
	if c != (store.Counts{List: 1, Get: 4, Head: 1, Put: 1, Delete: 1}) {
		t.Fatalf("counts %v", c)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range want {
		if calls[k] != n {
			t.Errorf("Observe(%q) called %d times, want %d (Counts)", k, calls[k], n)
		}
	}
	if len(calls) != len(want) {
		t.Errorf("Observe kinds %v, want %v", calls, want)
	}
	if len(failed) != 1 || failed["get"] != 1 {
		t.Errorf("failed requests observed %v, want get:1", failed)
	}
}
