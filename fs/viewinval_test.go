package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestRefreshDropsTheListingsItChanged: the kernel keeps every listing it
// read (FOPEN_CACHE_DIR) and every name it looked up; a refresh that adds
// entries — a value to an object, an object to an <hh>, an <hh> to a kind —
// or forgets an object has the listings it changed and the names it
// removed dropped, so the next ls and stat show the store's state: with
// view ids (the views' keys compared, viewinval.go) and without (the nodes
// go-fuse holds walked).
func TestRefreshDropsTheListingsItChanged(t *testing.T) {
	for _, views := range []bool{true, false} {
		t.Run(fmt.Sprintf("views=%v", views), func(t *testing.T) {
			f, ix, srv, _ := mountFixture(t, Options{noViewIDs: !views})
			ctx := context.Background()
			dirs := []string{"sig", "sig/ab", "sig/ab/12cd34", "seal", "seal/ab"}
			for range 2 { // cold, then warm: the kernel holds them
				for _, d := range dirs {
					readNames(t, srv.Dir()+"/"+d)
				}
			}
			if _, err := os.Stat(srv.Dir() + "/sig/ab/12cd34/alice"); err != nil {
				t.Fatal(err)
			}
			other := otherWriter(t, f)
			for _, e := range []format.Entry{
				storefixture.Ent(format.KindSig, "ab12cd34", "dave"),
				storefixture.Ent(format.KindSig, "ab5555", "erin"),
				storefixture.Ent(format.KindSig, "012345", "frank"),
			} {
				if err := other.Put(ctx, e, []byte("#sig of "+e.Value)); err != nil {
					t.Fatal(err)
				}
			}
			refreshed(t, ix, srv)
			for _, c := range []struct{ dir, name string }{{"sig", "01"}, {"sig/ab", "5555"}, {"sig/ab/12cd34", "dave"}, {"sig/ab/12cd34", "alice"}} {
				if names := readNames(t, srv.Dir()+"/"+c.dir); !slices.Contains(names, c.name) {
					t.Errorf("after the refresh %s lists %v, without %s", c.dir, names, c.name)
				}
			}
			if _, err := fold.Collect(ctx, f.st, fold.CollectOptions{ForgetObjects: []fold.ForgetObject{{Object: "ab12cd34"}}, Apply: true, Warn: func(string) {}}); err != nil {
				t.Fatal(err)
			}
			refreshed(t, ix, srv)
			if names := readNames(t, srv.Dir()+"/sig/ab"); slices.Contains(names, "12cd34") || !slices.Contains(names, "5555") {
				t.Errorf("after the forget sig/ab lists %v", names)
			}
			if names := readNames(t, srv.Dir()+"/seal"); slices.Contains(names, "ab") {
				t.Errorf("after the forget seal lists %v (its only object under ab forgotten)", names)
			}
			for _, p := range []string{"sig/ab/12cd34/alice", "sig/ab/12cd34", "seal/ab"} {
				if _, err := os.Stat(srv.Dir() + "/" + p); !errors.Is(err, iofs.ErrNotExist) {
					t.Errorf("stat %s after the forget: %v, want ENOENT", p, err)
				}
			}
		})
	}
}

// TestACreateThatNeverLandsLeavesNoName: a signature created and closed
// empty writes nothing (EINVAL); the kernel, which holds the name the
// CREATE gave it, is told to drop it, so it forgets the node — with view
// ids (the notice goes to the object directory's view id) and without.
func TestACreateThatNeverLandsLeavesNoName(t *testing.T) {
	for _, views := range []bool{true, false} {
		t.Run(fmt.Sprintf("views=%v", views), func(t *testing.T) {
			_, _, srv, _ := mountFixture(t, Options{noViewIDs: !views})
			e := storefixture.Ent(format.KindSig, "ab12cd34", "zoe")
			f, err := os.Create(srv.path(e))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, n := srv.kernelEntry(e.Key()); n == nil {
				t.Fatal("the create left the kernel no node")
			}
			if err := f.Close(); err == nil {
				t.Fatal("closing an empty signature succeeded")
			}
			// The notice is sent from a goroutine after the RELEASE; the
			// kernel forgets the node once it dropped the name.
			for i := 0; ; i++ {
				if _, _, n := srv.kernelEntry(e.Key()); n == nil {
					break
				}
				if i == 1000 {
					t.Fatal("the kernel still holds the name of a create that never landed")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if _, err := os.Stat(srv.path(e)); !errors.Is(err, iofs.ErrNotExist) {
				t.Fatalf("stat after the failed create: %v", err)
			}
		})
	}
}
