package fs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestFindKeepsNoNodePerDirectory (issue 38, "no node per name"): after a
// find over the whole tree, go-fuse keeps no node for the index tree's
// directories — the kernel holds them by view id — so what the mount keeps
// does not grow with the store: the same nodes (by-signer/'s directories
// and the leaves' directory) at 2,000 and at 8,000 entries, and one more
// per file stat'd. Without view ids, go-fuse keeps one per directory the
// kernel holds (the count this test fails on then).
func TestFindKeepsNoNodePerDirectory(t *testing.T) {
	if _, err := exec.LookPath("find"); err != nil {
		t.Fatalf("find(1), which this test walks the mount with: %v", err)
	}
	const signers = 8
	var withViews []int
	for _, n := range []int{2000, 8000} {
		st := storefixture.NewMem(t)
		if _, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: n, Seed: 7, Fold: true, SkipObjects: true, Signers: signers}); err != nil {
			t.Fatal(err)
		}
		for _, views := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/views=%v", n, views), func(t *testing.T) {
				ix := openIndex(t, st)
				srv, _ := testMount(t, ix, Options{ReadOnly: true, noViewIDs: !views})
				out, err := exec.Command("find", srv.Dir(), "-type", "f").Output()
				if err != nil {
					t.Fatalf("find: %v", err)
				}
				files := strings.Split(strings.TrimSpace(string(out)), "\n")
				if len(files) < n {
					t.Fatalf("find found %d files, want at least %d", len(files), n)
				}
				dirs := srv.Ops()["readdir"] // the directories find listed
				nodes := goFuseNodes(srv)
				if !views {
					if int64(len(nodes)) < dirs-signers-4 {
						t.Fatalf("without view ids go-fuse holds %d nodes after listing %d directories", len(nodes), dirs)
					}
					return
				}
				// by-signer, its signers' directories, the leaves' directory.
				if len(nodes) > 2+signers {
					t.Fatalf("go-fuse holds %d nodes after a find that listed %d directories: %v", len(nodes), dirs, nodes[:min(len(nodes), 4)])
				}
				withViews = append(withViews, len(nodes))
				if l := srv.views.tableLen(); l != 0 {
					t.Errorf("the view id table holds %d directories of a folded store", l)
				}
				// A stat makes a leaf's node: one each, however deep (none with
				// leaf ids).
				stated := 0
				for _, f := range files {
					rel, _ := filepath.Rel(srv.Dir(), f)
					if at, ok := index.ParsePath(rel); !ok || at.Level != index.LevelEntry {
						continue
					}
					if _, err := os.Stat(f); err != nil {
						t.Fatal(err)
					}
					if stated++; stated == 10 {
						break
					}
				}
				made := stated // with leaf ids (leafids.go), none
				if srv.leafs != nil {
					made = 0
				}
				if got := len(goFuseNodes(srv)); got != len(nodes)+made {
					t.Fatalf("after %d stats go-fuse holds %d nodes, %d before (leaf ids: %v)", stated, got, len(nodes), srv.leafs != nil)
				}
			})
		}
	}
	if len(withViews) == 2 && withViews[0] != withViews[1] {
		t.Errorf("go-fuse's nodes after a find grew with the store: %v at 2,000 and 8,000 entries", withViews)
	}
}
