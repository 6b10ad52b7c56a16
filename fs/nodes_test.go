package fs

import (
	"context"
	"maps"
	"slices"
	"strings"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/oxyfs/oxyfs/index"
)

// goFuseNodes lists the nodes go-fuse keeps below the root (the root
// itself and .oxy/'s left out), by path: a leaf by its entry's path.
func goFuseNodes(srv *Server) []string {
	var out []string
	var walk func(in *gofs.Inode, p string)
	walk = func(in *gofs.Inode, p string) {
		for _, name := range slices.Sorted(maps.Keys(in.Children())) {
			kid := in.Children()[name]
			switch kid.Operations().(type) {
			case *oxyDir:
				continue
			case *leafDir:
				out = append(out, name)
				for key := range kid.Children() {
					out = append(out, key)
				}
				continue
			}
			q := index.JoinPath(p, name)
			if !strings.HasPrefix(name, "/") {
				out = append(out, q)
			}
			walk(kid, q)
		}
	}
	walk(srv.root.EmbeddedInode(), "")
	slices.Sort(out)
	return out
}

// heldEntry is the node of the entry at key the kernel holds: its go-fuse
// node (kernelEntry), or with leaf ids (leafids.go) the node of the leaf
// id it was given for the entry's current version — made the id's kept
// node (leafstate.go), pinned for the rest of the test as go-fuse would
// keep a node the kernel holds. nil if the kernel holds neither.
func heldEntry(srv *Server, key string) *entryNode {
	if _, _, n := srv.kernelEntry(key); n != nil || srv.leafs == nil {
		return n
	}
	if !srv.leafs.mayHold(key) {
		return nil
	}
	e, err := index.ParseEntryPath(key)
	if err != nil {
		return nil
	}
	ctx := context.Background()
	id, ok := srv.leafs.idOf(ctx, key, e, srv.ix.SigState(e).Version)
	if !ok {
		return nil
	}
	n, _, ok := srv.leafs.node(ctx, srv, id)
	if !ok {
		return nil
	}
	return srv.leafs.keep(n) // never opened: kept while the test runs
}
