package fs

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// walkTree lists every path under dir with its type and, for a file, its
// size (a stat of each).
func walkTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, oxyName) {
			return filepath.SkipDir
		}
		line := rel + " " + d.Type().String()
		if d.Type().IsRegular() {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			line += " " + strings.Repeat("#", int(fi.Size()%7)) // sizes, briefly
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestViewIDCollisionsThroughTheMount: with view ids' keys shortened to 4
// bits, nearly every object directory shares its key with another and is
// numbered from the table — the tree a walk sees, with every file's size,
// is the one a mount without view ids shows, and writes under directories
// mkdir made (table ids too) land.
func TestViewIDCollisionsThroughTheMount(t *testing.T) {
	st := storefixture.NewMem(t)
	if _, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: 600, Seed: 9, Fold: true}); err != nil {
		t.Fatal(err)
	}
	plain, _ := testMount(t, openIndex(t, st), Options{noViewIDs: true})
	want := walkTree(t, plain.Dir())
	srv, _ := testMount(t, openIndex(t, st), Options{viewKeyBits: 4})
	got := walkTree(t, srv.Dir())
	if !slices.Equal(got, want) {
		t.Fatalf("with colliding view ids a walk found %d paths, without view ids %d", len(got), len(want))
	}
	if n := srv.views.tableLen(); n < 100 {
		t.Fatalf("the table holds %d directories after a walk with 4-bit keys", n)
	}
	p := srv.Dir() + "/sig/77/77aa77/zed"
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#sig of zed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "#sig of zed" {
		t.Fatalf("read back %q %v", b, err)
	}
	if names := readNames(t, srv.Dir()+"/sig/77"); !slices.Contains(names, "77aa77") {
		t.Fatalf("sig/77 lists %v after the write", names)
	}
}

// TestForgottenViewIDsLeaveTheTable: when the kernel forgets the
// directories it held by table ids (here: their names dropped from the
// root, as an invalidation or memory pressure drops them), its FORGETs
// take them out of the table, and the leaves' nodes go too.
func TestForgottenViewIDsLeaveTheTable(t *testing.T) {
	st := storefixture.NewMem(t)
	if _, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: 300, Seed: 11, Fold: true}); err != nil {
		t.Fatal(err)
	}
	srv, _ := testMount(t, openIndex(t, st), Options{viewKeyBits: 4})
	walkTree(t, srv.Dir()) // stats every file: leaves too
	held, leaves := srv.views.tableLen(), len(srv.leaves.Children())
	if srv.leafs != nil {
		// With leaf ids (leafids.go) a stat makes no node: the files'
		// keys are 36 bits, not the directories' 4.
		if leaves != 0 || srv.leafs.keptLen() != 0 {
			t.Fatalf("after a walk with leaf ids the leaves' directory holds %d nodes, %d kept", leaves, srv.leafs.keptLen())
		}
		leaves = 50
	}
	if held < 50 || leaves < 50 {
		t.Fatalf("after a walk the table holds %d directories and the leaves' directory %d nodes", held, leaves)
	}
	forgets := srv.Requests()["FORGET"]
	root := srv.root.EmbeddedInode()
	for _, kind := range readNames(t, srv.Dir()) {
		if kind != index.BySigner && kind != oxyName {
			root.NotifyEntry(kind)
		}
	}
	// The kernel sends its FORGETs when it evicts the inodes, soon after.
	for i := 0; srv.views.tableLen() > 0 || len(srv.leaves.Children()) > 0; i++ {
		if i == 1000 {
			t.Fatalf("the table still holds %d of %d directories and the leaves' directory %d of %d nodes after %d FORGETs",
				srv.views.tableLen(), held, len(srv.leaves.Children()), leaves, srv.Requests()["FORGET"]-forgets)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// And the tree is whole again.
	if names := readNames(t, srv.Dir()+"/sig"); len(names) == 0 {
		t.Fatal("sig lists nothing after the forgets")
	}
}
