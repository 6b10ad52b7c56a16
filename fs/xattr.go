package fs

import (
	"context"
	"syscall"
)

// The extended attributes of an entry file.
const (
	xattrPrefix = "user.oxy."
	xattrKey    = "user.oxy.key"    // the store key
	xattrSource = "user.oxy.source" // where the index found it
)

const xattrList = xattrKey + "\x00" + xattrSource + "\x00"

func (n *entryNode) source(ctx context.Context) (string, syscall.Errno) {
	rc := n.m.reqCtx(ctx)
	defer rc.end()
	node, err := n.m.ix.Stat(rc, n.path)
	if err != nil {
		if isNotExist(err) && n.m.pending.get(n.path) != nil {
			return "own write (not closed yet)", 0
		}
		return "", n.m.errno("getxattr", n.path, err)
	}
	return node.Source, 0
}

func (n *entryNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	defer n.m.ops.start(opGetxattr)()
	var v string
	switch attr {
	case xattrKey:
		v = n.e.Key()
	case xattrSource:
		var errno syscall.Errno
		if v, errno = n.source(ctx); errno != 0 {
			return 0, errno
		}
	default:
		return 0, noXattr(attr)
	}
	return copyXattr(dest, v)
}

func (n *entryNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	defer n.m.ops.start(opListxattr)()
	return copyXattr(dest, xattrList)
}

// copyXattr answers a size query (empty dest) or copies v, ERANGE if it does
// not fit.
func copyXattr(dest []byte, v string) (uint32, syscall.Errno) {
	if len(dest) == 0 {
		return uint32(len(v)), 0
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}
