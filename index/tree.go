package index

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// NodeType is the type of a tree node.
type NodeType uint8

// The node types of the tree.
const (
	NodeDir NodeType = iota
	NodeFile
	NodeSymlink
)

func (t NodeType) String() string {
	switch t {
	case NodeDir:
		return "dir"
	case NodeFile:
		return "file"
	case NodeSymlink:
		return "symlink"
	}
	return fmt.Sprintf("NodeType(%d)", uint8(t))
}

// Node is one name of the tree (docs/design.md §1 and §7).
type Node struct {
	Name   string
	Type   NodeType
	Entry  format.Entry // files only
	Target string       // symlinks only
	Size   int64        // files: signature size if known (cached), -1 if not read yet; 0 for non-sig entries
	// ModTime: files, a signature's key's own Last-Modified, known with
	// its size (SigStat); the zero time otherwise (the size not known, an
	// index entry, a directory, a backend that gives no time), for which
	// the store's last change (Index.ModTime) stands.
	ModTime time.Time
	Ino     uint64 // stable inode number: FNV-64a of the path, never 0 or 1
	Source  string // files: "list pack-<id>.entries", "journal", "prefix listing", "own write", "legacy sigs/ab/cd"
}

const sourceOwnWrite = "own write"

func notExist(op, p string) error {
	return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
}

func cleanDir(p string) string {
	if p == "." {
		return ""
	}
	return p
}

// ReadDir lists a directory of the tree, sorted by name. A directory that
// does not exist is an error wrapping fs.ErrNotExist; a file is ErrNotDir.
// On a folded store it sends no request.
func (ix *Index) ReadDir(ctx context.Context, dir string) ([]Node, error) {
	var nodes []Node
	err := ix.walkDir(ctx, dir, func(n int) { nodes = slices.Grow(nodes, n) }, func(t Path, d, name string, typ NodeType, src *entrySource) {
		switch typ {
		case NodeFile:
			nodes = append(nodes, ix.fileNode(d, format.Entry{Kind: t.Kind, Object: t.Object, Value: name}, *src))
		case NodeSymlink:
			nodes = append(nodes, Node{Name: name, Type: NodeSymlink, Target: linkTarget(name, t.Value), Ino: ChildIno(d, name)})
		default:
			nodes = append(nodes, Node{Name: name, Type: NodeDir, Ino: ChildIno(d, name)})
		}
	})
	return nodes, err
}

// Stat describes one path of the tree. It never reads signature bytes; on a
// folded store it sends no request. A stat of a signature tells read-ahead
// (statprefetch.go: stats follow listings).
func (ix *Index) Stat(ctx context.Context, p string) (Node, error) {
	n, _, err := ix.stat(ctx, p, statOpts{})
	return n, err
}

// StatSig is Stat with, for a signature's path, the signature's state of
// the same moment: one question per kernel request (the mount's LOOKUP and
// GETATTR). The state (SigState) is taken first, in one holding of
// sigCache.mu, then the view is asked whether the path names an entry; the
// node's size and time are the state's (Size -1 when not known), with no
// second look at the cache. The state is returned with a path that names
// nothing too (a name being created through the mount has a version).
// Other paths have the zero SigState.
func (ix *Index) StatSig(ctx context.Context, p string) (Node, SigState, error) {
	return ix.stat(ctx, p, statOpts{})
}

// StatHeld is Stat for a name the kernel holds, asked after a refresh (the
// mount's check of what to drop): not a user's stat, so read-ahead is not
// told of it.
func (ix *Index) StatHeld(ctx context.Context, p string) (Node, error) {
	n, _, err := ix.stat(ctx, p, statOpts{held: true})
	return n, err
}

// statOpts are stat's options.
type statOpts struct {
	held bool // not a user's stat: read-ahead is not told (StatHeld)
}

// stat is Stat, StatSig and StatHeld: the state of a signature's path
// first (one holding of sigCache.mu), then the view.
func (ix *Index) stat(ctx context.Context, p string, o statOpts) (Node, SigState, error) {
	t, ok := ParsePath(p)
	if !ok {
		return Node{}, SigState{}, notExist("stat", p)
	}
	var st SigState
	sig := t.Level == LevelEntry && t.Kind == format.KindSig
	if sig {
		st = ix.sigs.state(format.Entry{Kind: t.Kind, Object: t.Object, Value: t.Value})
	}
	n, err := ix.statIn(ctx, p, t, st, o)
	return n, st, err
}

// statIn is stat of path p, parsed as t, with st the state of a
// signature's path.
func (ix *Index) statIn(ctx context.Context, p string, t Path, st SigState, o statOpts) (Node, error) {
	v, err := ix.current(ctx)
	if err != nil {
		return Node{}, err
	}
	p = cleanDir(p)
	_, name := SplitPath(p)
	dir := Node{Name: name, Type: NodeDir, Ino: PathIno(p)}
	found := false
	switch t.Level {
	case LevelRoot, LevelKind, LevelSigners:
		return dir, nil
	case LevelHH:
		if v.pc == nil {
			b, _ := format.ParseHH(t.Object)
			lo, hi := v.base.kinds[t.Kind].hhBucket(b)
			found = lo < hi || len(ix.own.withPrefix(t.Kind, t.Object)) > 0
		} else {
			names, err := ix.hhNames(ctx, v, t.Kind)
			if err != nil {
				return Node{}, err
			}
			_, found = slices.BinarySearch(names, t.Object)
		}
	case LevelObject:
		if v.pc == nil {
			found = v.base.hasObject(t.Kind, t.Object) || len(ix.own.object(t.Kind, t.Object)) > 0
		} else {
			es, err := ix.objEntries(ctx, v, t.Kind, t.Object)
			if err != nil {
				return Node{}, err
			}
			found = len(es) > 0
		}
	case LevelEntry, LevelLink:
		e := format.Entry{Kind: t.Kind, Object: t.Object, Value: t.Value}
		se, ok, err := ix.entry(ctx, v, e)
		if err != nil || !ok {
			return Node{}, cmpErr(err, notExist("stat", p))
		}
		if t.Level == LevelLink {
			return Node{Name: t.Object, Type: NodeSymlink, Target: linkTarget(t.Object, t.Value), Ino: PathIno(p)}, nil
		}
		if e.Kind == format.KindSig && !o.held {
			ix.ra.sigStated(v, e) // stats follow listings (statprefetch.go)
		}
		parent, _ := SplitPath(p)
		if e.Kind == format.KindSig && se.sig == nil {
			return ix.sigNode(parent, e, se, st), nil
		}
		return ix.fileNode(parent, e, se), nil
	case LevelSigner:
		if v.pc == nil {
			found = v.base.hasSigner(t.Value) || slices.ContainsFunc(ix.own.withPrefix(format.KindSig, ""), func(e format.Entry) bool { return e.Value == t.Value })
		} else {
			objs, err := ix.signedBy(ctx, v, t.Value)
			if err != nil {
				return Node{}, err
			}
			found = len(objs) > 0
		}
	}
	if !found {
		return Node{}, notExist("stat", p)
	}
	return dir, nil
}

// entrySource is an entry's value, source, and legacy signature bytes.
type entrySource struct {
	val    string
	source string
	sig    []byte // legacy signatures only
}

// sigNode is the node of a signature entry whose bytes are its key's, its
// size and time those of st, the signature's state.
func (ix *Index) sigNode(dir string, e format.Entry, s entrySource, st SigState) Node {
	return Node{Name: e.Value, Type: NodeFile, Entry: e, Ino: ChildIno(dir, e.Value), Source: s.source, Size: st.Size, ModTime: st.ModTime}
}

func (ix *Index) fileNode(dir string, e format.Entry, s entrySource) Node {
	n := Node{Name: e.Value, Type: NodeFile, Entry: e, Ino: ChildIno(dir, e.Value), Source: s.source}
	switch {
	case e.Kind != format.KindSig:
	case s.sig != nil:
		n.Size = int64(len(s.sig))
	default:
		var mod int64
		n.Size, mod = ix.sigs.entrySize(e)
		n.ModTime = timeOf(mod)
	}
	return n
}

// entry finds one entry: O(log n) in memory on a folded store.
func (ix *Index) entry(ctx context.Context, v *view, e format.Entry) (entrySource, bool, error) {
	if ix.own.has(e) {
		return entrySource{val: e.Value, source: sourceOwnWrite}, true, nil
	}
	if v.pc == nil {
		src, ok := v.base.lookup(e.Kind, e.Object, e.Value)
		return entrySource{val: e.Value, source: src}, ok, nil
	}
	es, err := ix.objEntries(ctx, v, e.Kind, e.Object)
	if err != nil {
		return entrySource{}, false, err
	}
	i, ok := slices.BinarySearchFunc(es, e.Value, func(x entrySource, v string) int { return strings.Compare(x.val, v) })
	if !ok {
		return entrySource{}, false, nil
	}
	return es[i], true, nil
}

func (ix *Index) hhNames(ctx context.Context, v *view, kind format.Kind) ([]string, error) {
	names := v.base.hhNames(kind)
	var own []string
	for _, e := range ix.own.withPrefix(kind, "") {
		if len(own) == 0 || own[len(own)-1] != e.Object[:2] {
			own = append(own, e.Object[:2])
		}
	}
	names = unionSorted(names, own)
	if v.pc == nil {
		return names, nil
	}
	listed, err := v.pc.hhNames(ctx, kind)
	return unionSorted(listed, names), err
}

func (ix *Index) restNames(ctx context.Context, v *view, kind format.Kind, hh string) ([]string, error) {
	names := v.base.restNames(kind, hh)
	var own []string
	for _, e := range ix.own.withPrefix(kind, hh) {
		if r := e.Object[2:]; len(own) == 0 || own[len(own)-1] != r {
			own = append(own, r)
		}
	}
	names = unionSorted(names, own)
	if v.pc == nil {
		return names, nil
	}
	listed, err := v.pc.restNames(ctx, kind, hh)
	return unionSorted(listed, names), err
}

// objEntries lists an object's entries from every source, sorted by value.
// When several sources hold one, the first of own write, prefix listing,
// lists or journal, legacy list names it (and a per-object key's bytes win
// over a legacy list's).
func (ix *Index) objEntries(ctx context.Context, v *view, kind format.Kind, obj string) ([]entrySource, error) {
	var sources [][]entrySource
	var own []entrySource
	for _, e := range ix.own.object(kind, obj) {
		own = append(own, entrySource{val: e.Value, source: sourceOwnWrite})
	}
	sources = append(sources, own)
	var legacy []entrySource
	if v.pc != nil {
		pes, err := v.pc.objEntries(ctx, kind, obj)
		if err != nil {
			return nil, err
		}
		var listed []entrySource
		for _, pe := range pes {
			if pe.source == sourcePrefixListing {
				listed = append(listed, pe)
			} else {
				legacy = append(legacy, pe)
			}
		}
		sources = append(sources, listed)
	}
	sources = append(sources, v.base.values(kind, obj), legacy)
	var out []entrySource
	for _, src := range sources {
		out = unionEntries(out, src)
	}
	return out, nil
}

// unionEntries merges b into a (both sorted by value); a wins on a tie.
func unionEntries(a, b []entrySource) []entrySource {
	return unionBy(a, b, func(e entrySource) string { return e.val })
}

func (ix *Index) signers(ctx context.Context, v *view) ([]string, error) {
	names := v.base.signerNames()
	var own []string
	for _, e := range ix.own.withPrefix(format.KindSig, "") {
		own = append(own, e.Value)
	}
	slices.Sort(own)
	names = unionSorted(names, slices.Compact(own))
	if v.pc == nil {
		return names, nil
	}
	by, err := v.pc.sigScan(ctx)
	if err != nil {
		return nil, err
	}
	listed := make([]string, 0, len(by))
	for s := range by {
		listed = append(listed, s)
	}
	slices.Sort(listed)
	return unionSorted(listed, names), nil
}

func (ix *Index) signedBy(ctx context.Context, v *view, signer string) ([]string, error) {
	objs := v.base.signedBy(signer)
	var own []string
	for _, e := range ix.own.withPrefix(format.KindSig, "") {
		if e.Value == signer {
			own = append(own, e.Object)
		}
	}
	objs = unionSorted(objs, own)
	if v.pc == nil {
		return objs, nil
	}
	by, err := v.pc.sigScan(ctx)
	if err != nil {
		return nil, err
	}
	return unionSorted(by[signer], objs), nil
}
