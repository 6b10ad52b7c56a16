package fs

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// linkNode is by-signer/<signer>/<hh><rest>, a symlink to the signature.
type linkNode struct {
	base
	target string
}

var (
	_ = (gofs.NodeReadlinker)((*linkNode)(nil))
	_ = (gofs.NodeGetattrer)((*linkNode)(nil))
)

func (l *linkNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	defer l.m.ops.start(opReadlink)()
	return []byte(l.target), 0
}

func (l *linkNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	defer l.m.ops.start(opGetattr)()
	l.m.linkAttr(&out.Attr, l.target)
	out.SetTimeout(l.m.attrTTL)
	return 0
}
