package index

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// TestRefreshDuringOutageKeepsFoldedView: a refresh while the store does
// not answer list GETs fails and leaves the folded view as it was: no
// fallback to prefix listing (which would send LISTs to a store that is
// down and forget what the mount holds), no LIST afterwards.
func TestRefreshDuringOutageKeepsFoldedView(t *testing.T) {
	ctx := context.Background()
	drv := blobtest.New(nil)
	var down atomic.Bool
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		if down.Load() && strings.HasSuffix(key, format.EntryListSuffix) {
			return fmt.Errorf("get %s: %w", key, syscall.ECONNREFUSED)
		}
		return nil
	}})
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, RequestTimeout: time.Second})
	t.Cleanup(func() { st.Close() })
	if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 200, Seed: 3, Fold: true}); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(ctx, st, Options{Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	before := ix.Status()
	// A writer and a complete fold elsewhere make the refresh read a new list.
	if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 10, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := fold.Complete(ctx, st, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	if err := ix.Refresh(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("refresh during an outage: %v, want ErrUnavailable", err)
	}
	s := ix.Status()
	if s.Mode != ModeFolded || s.Entries != before.Entries {
		t.Fatalf("after a failed refresh: mode %s, %d entries; want the folded view of %d", s.Mode, s.Entries, before.Entries)
	}
	c0 := st.Counts()
	if _, err := ix.ReadDir(ctx, "sig"); err != nil {
		t.Fatal(err)
	}
	if d := st.Counts().Sub(c0); d.List != 0 {
		t.Fatalf("a lookup after the failed refresh sent %v", d)
	}
	down.Store(false)
	if err := ix.Refresh(ctx); err != nil {
		t.Fatalf("refresh after the outage: %v", err)
	}
	if s := ix.Status(); s.Mode != ModeFolded || s.Entries <= before.Entries {
		t.Fatalf("after the outage: mode %s, %d entries", s.Mode, s.Entries)
	}
}
