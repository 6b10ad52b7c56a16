package fs

import (
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
