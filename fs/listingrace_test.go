package fs

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestListingMadeBeforeARefreshIsNotKept (issue 37, item 5): a listing
// made from the view current when the READDIRPLUS started, with a refresh
// that changed the directory and its Invalidate run between the listing
// and its reply (forced by testHookListed), must not stay in the kernel
// (FOPEN_CACHE_DIR): the next ls shows the new name, for an object's
// directory and for by-signer/<signer> alike.
func TestListingMadeBeforeARefreshIsNotKept(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{})
	ctx := context.Background()
	other := otherWriter(t, f)
	cases := []struct {
		dir   string
		added format.Entry
		name  string // the name the added entry has in dir
	}{
		{"sig/ab/12cd34", storefixture.Ent(format.KindSig, "ab12cd34", "dave"), "dave"},
		{"by-signer/alice", storefixture.Ent(format.KindSig, "77aa", "alice"), "77aa"},
	}
	for _, c := range cases {
		var once sync.Once
		done := make(chan struct{})
		hook := func(path string) {
			if path != c.dir {
				return
			}
			once.Do(func() {
				// In a goroutine: Invalidate notifies the kernel, which
				// must not wait for this very request.
				go func() {
					defer close(done)
					if err := other.Put(ctx, c.added, []byte("sig")); err != nil {
						t.Error(err)
						return
					}
					if err := ix.Refresh(ctx); err != nil {
						t.Error(err)
						return
					}
					srv.Invalidate()
				}()
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Error("the refresh and Invalidate took over 30 s")
				}
			})
		}
		testHookListed.Store(&hook)
		first := readNames(t, srv.Dir()+"/"+c.dir)
		testHookListed.Store(nil)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("ls %s made no listing of it (the hook never ran)", c.dir)
		}
		if second := readNames(t, srv.Dir()+"/"+c.dir); !slices.Contains(second, c.name) {
			t.Errorf("ls %s after a refresh ran during its first listing (%v): %v, want %q too", c.dir, first, second, c.name)
		}
	}
}

func readNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}
