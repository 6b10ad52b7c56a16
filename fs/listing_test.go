package fs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// listAll reads every directory under root (os.ReadDir, no stat) and
// returns the paths of the files, relative to root.
func listAll(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	var read func(dir string)
	read = func(dir string) {
		des, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			p := filepath.Join(dir, de.Name())
			if de.IsDir() {
				read(p)
			} else {
				rel, _ := filepath.Rel(root, p)
				files = append(files, rel)
			}
		}
	}
	read(root)
	return files
}

// TestWarmListingSendsNoFUSERequest: the kernel keeps every listing it read
// (no OPENDIR is answered, so it opens directories itself, with
// FOPEN_CACHE_DIR): a second walk of the whole tree reaches the mount with
// no listing and no lookup at all.
func TestWarmListingSendsNoFUSERequest(t *testing.T) {
	_, srv := mountGenerated(t, 300)
	cold := listAll(t, srv.Dir())
	ops := srv.Ops()
	if ops["readdir"] == 0 {
		t.Fatal("the cold walk made no listing")
	}
	warm := listAll(t, srv.Dir())
	if !slices.Equal(cold, warm) {
		t.Fatalf("the warm walk found %d names, the cold one %d", len(warm), len(cold))
	}
	for _, op := range []string{"readdir", "lookup", "getattr", "opendir"} {
		if d := srv.Ops()[op] - ops[op]; d != 0 {
			t.Errorf("the warm walk answered %d %s", d, op)
		}
	}
	if n := srv.Ops()["opendir"]; n > 1 {
		t.Errorf("the kernel sent %d OPENDIRs; want the one declined", n)
	}
}

// TestReaddirplusGivesNodesToDirectoriesOnly: a listing read cold leaves
// the kernel a node for each subdirectory (find descends without a LOOKUP)
// and none for files and links, which a stat then looks up, with their
// sizes — with view ids (the directories' nodes are ids the mount keeps
// nothing of) and without.
func TestReaddirplusGivesNodesToDirectoriesOnly(t *testing.T) {
	for _, views := range []bool{true, false} {
		t.Run(fmt.Sprintf("views=%v", views), func(t *testing.T) {
			f, _, srv, _ := mountFixture(t, Options{noViewIDs: !views})
			dirs := []string{"sig", "sig/ab", "sig/ab/12cd34", "by-signer", "by-signer/alice"}
			for _, dir := range dirs {
				if _, err := os.ReadDir(filepath.Join(srv.Dir(), dir)); err != nil {
					t.Fatal(err)
				}
			}
			lookups := srv.Requests()["LOOKUP"]
			for _, dir := range dirs {
				if _, err := os.Stat(filepath.Join(srv.Dir(), dir)); err != nil {
					t.Fatal(err)
				}
			}
			if d := srv.Requests()["LOOKUP"] - lookups; d != 0 {
				t.Errorf("a stat of the directories listed sent %d LOOKUPs; want none (READDIRPLUS gave their nodes)", d)
			}
			// No node of a file or a link: go-fuse's nodes are the root's
			// (with view ids, .oxy's and the leaves' directory's too) and
			// by-signer's directories.
			nodes := goFuseNodes(srv)
			underKinds := slices.ContainsFunc(nodes, func(p string) bool { return strings.HasPrefix(p, "sig") })
			if !slices.Contains(nodes, "by-signer/alice") || slices.ContainsFunc(nodes, func(p string) bool {
				return strings.HasPrefix(p, "by-signer/alice/") || strings.HasPrefix(p, "sig/ab/12cd34/")
			}) {
				t.Errorf("go-fuse holds nodes %v after the listings; want by-signer's directories, no file", nodes)
			}
			if underKinds == views {
				t.Errorf("go-fuse holds nodes %v after the listings (view ids: %v)", nodes, views)
			}
			alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
			fi, err := os.Lstat(srv.path(alice))
			if err != nil || fi.Size() != int64(len(f.sigs[alice.Key()])) {
				t.Fatalf("stat after the listing: %v %v, want size %d", fi, err, len(f.sigs[alice.Key()]))
			}
			if n := heldEntry(srv, alice.Key()); n == nil {
				t.Errorf("the stat of %s left no node of it", alice.Key())
			}
		})
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestLongListingIsOneSnapshot: a listing longer than one reply is read in
// several READDIRPLUS requests, which read one listing of the index (each
// name once, in order), even while writes land in the directory.
func TestLongListingIsOneSnapshot(t *testing.T) {
	st := storefixture.NewMem(t)
	ctx := context.Background()
	var keys []string
	for i := range 1500 { // by-signer/alice: ~1500 links, ~15 replies of os.ReadDir's 8 KiB
		keys = append(keys, storefixture.Ent(format.KindSig, fmt.Sprintf("%04x%060x", i, i), "alice").Key())
	}
	slices.Sort(keys)
	id, data, err := format.EncodeEntryList(keys)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, format.EntryListName(id, true), data); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, st)
	srv, _ := testMount(t, ix, Options{})
	dir := filepath.Join(srv.Dir(), "by-signer", "alice")

	before := srv.Ops()["readdir"]
	des, err := os.ReadDir(dir)
	if err != nil || len(des) != len(keys) {
		t.Fatalf("by-signer/alice: %d names, %v; want %d", len(des), err, len(keys))
	}
	if n := srv.Ops()["readdir"] - before; n != 1 {
		t.Errorf("one listing of a long directory made %d listings of the index, want 1", n)
	}

	// Writers add links while readers list: no listing may show a name twice.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 40 {
			p := filepath.Join(srv.Dir(), "sig", fmt.Sprintf("%02x", 0x80+i), "77", "alice")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Error(err)
				return
			}
			if err := os.WriteFile(p, []byte("sig"), 0o644); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 20 {
		des, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		seen := make(map[string]bool, len(des))
		for _, de := range des {
			if seen[de.Name()] {
				t.Fatalf("by-signer/alice lists %s twice", de.Name())
			}
			seen[de.Name()] = true
		}
	}
	wg.Wait()
	if des, _ := os.ReadDir(dir); len(des) != len(keys)+40 {
		t.Errorf("after the writes: %d names, want %d", len(des), len(keys)+40)
	}
}

var _ = index.BySigner // the tree's names come from the index

func TestResumePosContinuesAfterTheLastNameServed(t *testing.T) {
	list := func(names ...string) []fuse.DirEntry {
		var l []fuse.DirEntry
		for _, n := range names {
			l = append(l, fuse.DirEntry{Name: n})
		}
		return l
	}
	for _, c := range []struct {
		list []fuse.DirEntry
		last string
		want int
	}{
		{list("a", "b", "c", "d"), "b", 2},       // unchanged
		{list("a", "a1", "b", "c", "d"), "b", 3}, // a name added before it
		{list("b", "c", "d"), "b", 1},            // a name removed before it
		{list("a", "c", "d"), "b", 1},            // it was removed
		{list("a", "b"), "z", 2},                 // past the end
	} {
		if got := resumePos(c.list, c.last); got != c.want {
			t.Errorf("resumePos(%v, %q) = %d, want %d", c.list, c.last, got, c.want)
		}
	}
}
