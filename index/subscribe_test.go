package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestSubscribeHearsARefreshBeforeItReturns (issue 40): a subscriber hears
// a refresh's signature moves, then its publish, with the new view
// already stored (the generation it reads is the one Refresh leaves), all
// before Refresh returns; a refresh that fails tells nothing.
func TestSubscribeHearsARefreshBeforeItReturns(t *testing.T) {
	ctx := context.Background()
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket})
	t.Cleanup(func() { st.Close() })
	a := storefixture.Ent(format.KindSig, objA, "alice")
	storefixture.PutEntries(t, st, a)
	storefixture.WriteEntryList(t, st, true, a)
	ix, _ := openIndex(t, st)
	if _, err := ix.ReadSig(ctx, a); err != nil { // loads, and caches a
		t.Fatal(err)
	}
	var mu sync.Mutex
	var heard []string
	ix.Subscribe(func(c Change) {
		mu.Lock()
		defer mu.Unlock()
		switch c.Kind {
		case ChangeSig:
			heard = append(heard, "sig "+c.Key)
		case ChangeAllSigs:
			heard = append(heard, "all")
		case ChangePublished:
			heard = append(heard, "published", fmt.Sprint("generation ", ix.Generation()))
		}
	})
	// Another writer replaces a: its key, then its journal line.
	if err := st.Put(ctx, a.Key(), []byte("re-signed")); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Append(ctx, st, []string{a.Key()}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := slices.Clone(heard)
	mu.Unlock()
	want := []string{"sig " + a.Key(), "published", fmt.Sprint("generation ", ix.Generation())}
	if !slices.Equal(got, want) {
		t.Fatalf("when Refresh returned the subscriber had heard %q, want %q", got, want)
	}

	down := errors.New("store down")
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		if op == blobtest.OpGet && key == format.JournalKey {
			return down
		}
		return nil
	}})
	if err := ix.Refresh(ctx); !errors.Is(err, down) {
		t.Fatalf("a refresh whose journal GET fails: %v, want %v", err, down)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != len(want) {
		t.Errorf("a failed refresh told %q", heard[len(want):])
	}
}
