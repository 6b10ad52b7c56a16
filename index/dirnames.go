package index

import (
	"context"
	"io/fs"
	"slices"
)

// DirName is one name of a directory's listing as a mount gives it to the
// kernel: the name, its inode number and its type. ReadDir's Node has, beside
// these, what only a stat needs (the entry, a signature's size and time, the
// source, a link's target).
type DirName struct {
	Name string
	Ino  uint64 // as Node.Ino
	Type NodeType
}

// ReadDirNames is ReadDir's names, inode numbers and types, appended to dst
// (which may be nil), in the same order and with the same errors: the
// listing a mount serves. It costs 32 bytes a name where ReadDir's Node
// costs 136 and the names it computes (a link's target, a file's entry),
// and it does not ask the signature cache for a signature's size.
func (ix *Index) ReadDirNames(ctx context.Context, dir string, dst []DirName) ([]DirName, error) {
	t, ok := ParsePath(dir)
	if !ok {
		return dst, notExist("readdir", dir)
	}
	v, err := ix.current(ctx)
	if err != nil {
		return dst, err
	}
	dir = cleanDir(dir)
	add := func(names []string, typ NodeType) []DirName {
		dst = slices.Grow(dst, len(names))
		for _, n := range names {
			dst = append(dst, DirName{Name: n, Ino: ChildIno(dir, n), Type: typ})
		}
		return dst
	}
	switch t.Level {
	case LevelRoot:
		return add(rootNames, NodeDir), nil
	case LevelKind:
		names, err := ix.hhNames(ctx, v, t.Kind)
		return add(names, NodeDir), err
	case LevelHH:
		names, err := ix.restNames(ctx, v, t.Kind, t.Object)
		if err == nil && len(names) == 0 {
			err = notExist("readdir", dir)
		}
		return add(names, NodeDir), err
	case LevelObject:
		es, err := ix.objEntries(ctx, v, t.Kind, t.Object)
		if err != nil {
			return dst, err
		}
		if len(es) == 0 {
			return dst, notExist("readdir", dir)
		}
		dst = slices.Grow(dst, len(es))
		for _, e := range es {
			dst = append(dst, DirName{Name: e.val, Ino: ChildIno(dir, e.val), Type: NodeFile})
		}
		return dst, nil
	case LevelSigners:
		names, err := ix.signers(ctx, v)
		return add(names, NodeDir), err
	case LevelSigner:
		objs, err := ix.signedBy(ctx, v, t.Value)
		if err != nil {
			return dst, err
		}
		if len(objs) == 0 {
			return dst, notExist("readdir", dir)
		}
		return add(objs, NodeSymlink), nil
	}
	if _, err := ix.Stat(ctx, dir); err != nil {
		return dst, err
	}
	return dst, &fs.PathError{Op: "readdir", Path: dir, Err: ErrNotDir}
}
