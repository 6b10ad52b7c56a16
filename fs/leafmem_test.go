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
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestStatKeepsNoNodePerFile (issue 38, leaf ids): after a stat of every
// entry file (du, ls -l), the mount keeps no node per file with leaf ids
// (leafids.go) — no go-fuse node, none kept (leafstate.go) — so what it
// keeps is the same at 2,000 and at 8,000 entries. Without leaf ids go-fuse
// keeps one node per file stat'd (~770 B each): the count this test
// fails on then (with leafIDs=false it asserts that growth instead, and
// the comparison across sizes is made for leaf ids only).
func TestStatKeepsNoNodePerFile(t *testing.T) {
	if _, err := exec.LookPath("find"); err != nil {
		t.Fatalf("find(1), which this test walks the mount with: %v", err)
	}
	const signers = 8
	var kept []int
	for _, n := range []int{2000, 8000} {
		st := storefixture.NewMem(t)
		if _, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: n, Seed: 7, Fold: true, Signers: signers}); err != nil {
			t.Fatal(err)
		}
		for _, leafIDs := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d/leafIDs=%v", n, leafIDs), func(t *testing.T) {
				srv, _ := testMount(t, openIndex(t, st), Options{ReadOnly: true, LeafIDs: leafIDs})
				out, err := exec.Command("find", srv.Dir(), "-type", "f").Output()
				if err != nil {
					t.Fatalf("find: %v", err)
				}
				stated := 0
				for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					rel, _ := filepath.Rel(srv.Dir(), f)
					at, ok := index.ParsePath(rel)
					if !ok || at.Level != index.LevelEntry {
						continue
					}
					fi, err := os.Stat(f)
					if err != nil {
						t.Fatal(err)
					}
					if at.Kind == format.KindSig && fi.Size() <= 0 {
						t.Fatalf("stat %s: %d bytes", rel, fi.Size())
					}
					stated++
				}
				if stated < n {
					t.Fatalf("stat'd %d entry files, want at least %d", stated, n)
				}
				nodes := len(goFuseNodes(srv))
				t.Logf("%d entry files stat'd: go-fuse holds %d nodes (leaf ids: %v)", stated, nodes, srv.leafs != nil)
				if srv.leafs == nil {
					if nodes < stated {
						t.Fatalf("without leaf ids go-fuse holds %d nodes after %d stats", nodes, stated)
					}
					return
				}
				k := srv.leafs.keptLen()
				// by-signer, its signers' directories, the leaves' directory;
				// a name whose id does not lead back (its bits shared under
				// every seed: ~1e-4 of them) would add one.
				if nodes > 2+signers || k != 0 {
					t.Fatalf("with leaf ids go-fuse holds %d nodes and %d are kept after %d stats", nodes, k, stated)
				}
				kept = append(kept, nodes+k)
			})
		}
	}
	if len(kept) == 2 && kept[0] != kept[1] {
		t.Errorf("the nodes kept after stat'ing every file grew with the store: %v at 2,000 and 8,000 entries", kept)
	}
}
