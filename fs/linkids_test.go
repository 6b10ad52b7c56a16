package fs

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestLinksAnswerAsWithoutLeafIDs: with leaf ids a by-signer link has no
// go-fuse node (a link id, linkids.go), and what ls -l, stat, readlink and
// find -L show of by-signer/ is what they show without leaf ids, byte for
// byte: the same targets, modes, sizes, times, inode numbers, link counts.
func TestLinksAnswerAsWithoutLeafIDs(t *testing.T) {
	for _, tool := range []string{"ls", "stat", "find", "readlink"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s(1), which this test compares the mounts with: %v", tool, err)
		}
	}
	st := storefixture.NewMem(t)
	if _, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: 300, Seed: 3, Fold: true, Signers: 4}); err != nil {
		t.Fatal(err)
	}
	show := func(leafIDs bool) (string, []string) {
		srv, _ := testMount(t, openIndex(t, st), Options{ReadOnly: true, LeafIDs: leafIDs})
		run := func(dir string, args ...string) string {
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			return string(out)
		}
		links := strings.Fields(run(srv.Dir(), "find", "by-signer", "-type", "l"))
		if len(links) == 0 {
			t.Fatal("no by-signer link")
		}
		slices.Sort(links)
		var b strings.Builder
		b.WriteString(run(srv.Dir(), "ls", "-lR", "--time-style=full-iso", "by-signer"))
		b.WriteString(run(srv.Dir(), append([]string{"stat", "-c", "%n %s %b %B %f %A %h %u %g %i %W %X %Y %Z %F %N"}, links...)...))
		b.WriteString(run(srv.Dir(), append([]string{"stat", "-L", "-c", "%n %s %f %h %i %F"}, links...)...))
		b.WriteString(run(srv.Dir(), append([]string{"readlink"}, links...)...))
		b.WriteString(run(srv.Dir(), "find", "-L", "by-signer", "-printf", "%p %y %Y %s %m %n %l\n"))
		b.WriteString(run(srv.Dir(), "ls", "-liL", "by-signer/"+strings.Split(links[0], "/")[1]))
		nodes := goFuseNodes(srv)
		if leafIDs {
			for _, n := range nodes {
				if strings.Count(n, "/") >= 2 && strings.HasPrefix(n, "by-signer/") {
					t.Errorf("with leaf ids go-fuse holds a node of the link %s", n)
				}
			}
		}
		return b.String(), nodes
	}
	with, nodes := show(true)
	without, _ := show(false)
	if with != without {
		wl, ol := strings.Split(with, "\n"), strings.Split(without, "\n")
		for i := range min(len(wl), len(ol)) {
			if wl[i] != ol[i] {
				t.Fatalf("by-signer/ with leaf ids differs from without, first at line %d:\n  with:    %s\n  without: %s", i+1, wl[i], ol[i])
			}
		}
		t.Fatalf("by-signer/ with leaf ids is %d lines, without %d", len(wl), len(ol))
	}
	t.Logf("%d lines the same; go-fuse holds %d nodes with leaf ids", strings.Count(with, "\n"), len(nodes))
}

// TestRemovedSignaturesLinkIsGone: the kernel holds a by-signer link (by a
// link id with leaf ids: no go-fuse node a refresh could check); once its
// signature is gone and the mount refreshed, lstat and readlink of it are
// ENOENT, with leaf ids and without, whether its signer keeps other
// signatures (alice: only the link's name is dropped) or not (bob: his
// directory goes).
func TestRemovedSignaturesLinkIsGone(t *testing.T) {
	for _, leafIDs := range []bool{true, false} {
		t.Run(fmt.Sprintf("leafIDs=%v", leafIDs), func(t *testing.T) {
			f, ix, srv, _ := mountFixture(t, Options{LeafIDs: leafIDs})
			gone := []string{"by-signer/alice/ab12cd34", "by-signer/bob/ab12cd34"}
			kept := "by-signer/alice/ab99"
			for range 2 { // the kernel holds them: the second round sends nothing
				for _, p := range append(slices.Clone(gone), kept) {
					if _, err := os.Lstat(srv.Dir() + "/" + p); err != nil {
						t.Fatal(err)
					}
					if target, err := os.Readlink(srv.Dir() + "/" + p); err != nil || !strings.HasPrefix(target, "../../sig/") {
						t.Fatalf("readlink %s: %q, %v", p, target, err)
					}
				}
			}
			if leafIDs && srv.leafs != nil {
				for _, n := range goFuseNodes(srv) {
					if n == "by-signer/alice/ab12cd34" {
						t.Errorf("go-fuse holds a node of %s: no link id", n)
					}
				}
			}
			ctx := context.Background()
			if _, err := fold.Collect(ctx, f.st, fold.CollectOptions{ForgetObjects: []fold.ForgetObject{{Object: "ab12cd34"}}, Apply: true, Warn: func(string) {}}); err != nil {
				t.Fatal(err)
			}
			refreshed(t, ix, srv)
			for _, p := range gone {
				if fi, err := os.Lstat(srv.Dir() + "/" + p); !errors.Is(err, iofs.ErrNotExist) {
					t.Errorf("lstat %s after its signature was forgotten: %v, %v; want ENOENT", p, fi, err)
				}
				if target, err := os.Readlink(srv.Dir() + "/" + p); !errors.Is(err, iofs.ErrNotExist) {
					t.Errorf("readlink %s after its signature was forgotten: %q, %v; want ENOENT", p, target, err)
				}
			}
			if target, err := os.Readlink(srv.Dir() + "/" + kept); err != nil || target != "../../sig/ab/99/alice" {
				t.Errorf("readlink %s: %q, %v", kept, target, err)
			}
			if names := readNames(t, srv.Dir()+"/by-signer/alice"); slices.Contains(names, "ab12cd34") {
				t.Errorf("by-signer/alice lists %v after the forget", names)
			}
		})
	}
}

// TestLinkDirsKnowTheBridgesIDs: the node id linkDirs reads off a signer's
// directory's node (bridgeNodeID: go-fuse does not export it) is the one
// the kernel was given, so a LOOKUP in it gets a link id.
func TestLinkDirsKnowTheBridgesIDs(t *testing.T) {
	_, _, srv, _ := mountFixture(t, Options{LeafIDs: true})
	if srv.leafs == nil {
		t.Skip("no view ids")
	}
	if _, err := os.Lstat(srv.Dir() + "/by-signer/alice/ab12cd34"); err != nil {
		t.Fatal(err)
	}
	in := srv.root.EmbeddedInode().GetChild("by-signer").GetChild("alice")
	if in == nil {
		t.Fatal("the kernel holds no by-signer/alice")
	}
	id := bridgeNodeID(in)
	if signer, ok := srv.links.signer(id); id == 0 || !ok || signer != "alice" {
		t.Fatalf("by-signer/alice's node id %d: linkDirs gives %q, %v", id, signer, ok)
	}
	for _, n := range goFuseNodes(srv) {
		if strings.HasPrefix(n, "by-signer/alice/") {
			t.Fatalf("go-fuse holds %s: the link got no link id", n)
		}
	}
}
