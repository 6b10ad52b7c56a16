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
	err := ix.walkDir(ctx, dir, func(n int) { dst = slices.Grow(dst, n) }, func(_ Path, d string, name string, typ NodeType, _ *entrySource) {
		dst = append(dst, DirName{Name: name, Ino: ChildIno(d, name), Type: typ})
	})
	return dst, err
}

// walkDir is ReadDir and ReadDirNames: the names of directory dir in order,
// each with its type and, for an object directory's entries, where it
// stands (src), told to emit with dir's parsed path and clean form; grow
// is told how many names follow before they do. The error is ReadDir's
// (names may have been told before an error of a kind's or <hh>'s names).
func (ix *Index) walkDir(ctx context.Context, dir string, grow func(int), emit func(t Path, dir, name string, typ NodeType, src *entrySource)) error {
	t, ok := ParsePath(dir)
	if !ok {
		return notExist("readdir", dir)
	}
	v, err := ix.current(ctx)
	if err != nil {
		return err
	}
	dir = cleanDir(dir)
	all := func(names []string, typ NodeType) {
		grow(len(names))
		for _, n := range names {
			emit(t, dir, n, typ, nil)
		}
	}
	switch t.Level {
	case LevelRoot:
		all(rootNames, NodeDir)
		return nil
	case LevelKind:
		names, err := ix.hhNames(ctx, v, t.Kind)
		all(names, NodeDir)
		return err
	case LevelHH:
		names, err := ix.restNames(ctx, v, t.Kind, t.Object)
		if err == nil && len(names) == 0 {
			err = notExist("readdir", dir)
		}
		all(names, NodeDir)
		return err
	case LevelObject:
		es, err := ix.objEntries(ctx, v, t.Kind, t.Object)
		if err != nil {
			return err
		}
		if len(es) == 0 {
			return notExist("readdir", dir)
		}
		grow(len(es))
		for i := range es {
			emit(t, dir, es[i].val, NodeFile, &es[i])
		}
		return nil
	case LevelSigners:
		names, err := ix.signers(ctx, v)
		all(names, NodeDir)
		return err
	case LevelSigner:
		objs, err := ix.signedBy(ctx, v, t.Value)
		if err != nil {
			return err
		}
		if len(objs) == 0 {
			return notExist("readdir", dir)
		}
		all(objs, NodeSymlink)
		return nil
	}
	if _, err := ix.Stat(ctx, dir); err != nil {
		return err
	}
	return &fs.PathError{Op: "readdir", Path: dir, Err: ErrNotDir}
}
