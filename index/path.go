package index

import (
	"errors"
	"slices"
	"strings"

	"github.com/oxyfs/oxyfs/store/format"
)

// The tree's paths (DESIGN §4) are read here and nowhere else: ParsePath and
// Path.Child say what a path names and whether a name may stand at its
// level, Path.Make whether a name may be made there (mkdir, create), and
// PathIno and ChildIno number the nodes. The mount (fs), the web view and
// the CLI take them from here; what a key inside a path holds, store reads.

// BySigner is the name of the directory of symlinks by signer.
const BySigner = "by-signer"

// Level is where a path sits in the tree.
type Level uint8

// The levels of the tree, each with an example path.
const (
	LevelRoot    Level = iota // ""
	LevelKind                 // "sig"
	LevelHH                   // "sig/ab"
	LevelObject               // "sig/ab/<rest>"
	LevelEntry                // "sig/ab/<rest>/<value>"
	LevelSigners              // "by-signer"
	LevelSigner               // "by-signer/<signer>"
	LevelLink                 // "by-signer/<signer>/<hh><rest>"
)

// Path is a parsed tree path: its level and what it names there.
type Path struct {
	Level Level
	Kind  format.Kind // LevelKind to LevelEntry; KindSig under by-signer
	// Object is the object id in hex as far as the path names it: <hh>
	// at LevelHH, <hh><rest> at LevelObject, LevelEntry and LevelLink.
	Object string
	Value  string // LevelEntry: the value; LevelSigner and LevelLink: the signer
}

// Entry is the entry a path at LevelEntry or LevelLink names.
func (p Path) Entry() format.Entry {
	return format.Entry{Kind: p.Kind, Object: p.Object, Value: p.Value}
}

// ParsePath parses a slash path relative to the mount root ("" or "." is
// the root). ok is false for a path that cannot exist in the tree.
func ParsePath(p string) (t Path, ok bool) {
	if p == "" || p == "." {
		return Path{}, true
	}
	for {
		name, rest, more := strings.Cut(p, "/")
		if t, ok = t.Child(name); !ok {
			return Path{}, false
		}
		if !more {
			return t, true
		}
		p = rest
	}
}

// Child is the path of name in the directory p. ok is false if name cannot
// stand there (or p is no directory).
func (p Path) Child(name string) (Path, bool) {
	if c, ok := p.child(name); ok {
		return c, true
	}
	return Path{}, false
}

// ChildPath is Child with the child's path, JoinPath(dir, name), where dir
// is p's path. For an <hh>'s object directory the path and the Path's
// object id share one allocation, where Child and JoinPath make one each:
// a mount's READDIRPLUS of an <hh> asks it for every object.
func (p Path) ChildPath(dir, name string) (string, Path, bool) {
	if p.Level == LevelHH {
		s := dir + "/" + name + p.Object + name
		n := len(dir) + 1 + len(name)
		if !format.ValidObjectID(s[n:]) {
			return "", Path{}, false
		}
		return s[:n], Path{Level: LevelObject, Kind: p.Kind, Object: s[n:]}, true
	}
	c, ok := p.Child(name)
	if !ok {
		return "", Path{}, false
	}
	return JoinPath(dir, name), c, true
}

func (p Path) child(name string) (Path, bool) {
	switch p.Level {
	case LevelRoot:
		if name == BySigner {
			return Path{Level: LevelSigners, Kind: format.KindSig}, true
		}
		kind, ok := format.ParseKind(name)
		return Path{Level: LevelKind, Kind: kind}, ok
	case LevelKind:
		_, ok := format.ParseHH(name)
		return Path{Level: LevelHH, Kind: p.Kind, Object: name}, ok
	case LevelHH:
		obj := p.Object + name
		return Path{Level: LevelObject, Kind: p.Kind, Object: obj}, format.ValidObjectID(obj)
	case LevelObject:
		return Path{Level: LevelEntry, Kind: p.Kind, Object: p.Object, Value: name}, format.ValidValue(name)
	case LevelSigners:
		return Path{Level: LevelSigner, Kind: format.KindSig, Value: name}, format.ValidValue(name)
	case LevelSigner:
		return Path{Level: LevelLink, Kind: format.KindSig, Object: name, Value: p.Value}, format.ValidObjectID(name)
	}
	return Path{}, false
}

// Errors of Path.Make.
var (
	ErrNotHere = errors.New("the tree makes nothing of that type here")
	ErrBadName = errors.New("not a name the tree holds here")
)

// Make says whether a directory (dir) or a file (!dir) named name may be
// made in the directory p, and returns its path. Only an <hh> directory in a
// kind's, an object directory in an <hh>'s and an entry in an object's may:
// anything else is ErrNotHere, a name that cannot stand there ErrBadName.
func (p Path) Make(name string, dir bool) (Path, error) {
	if dir && p.Level != LevelKind && p.Level != LevelHH || !dir && p.Level != LevelObject {
		return Path{}, ErrNotHere
	}
	c, ok := p.Child(name)
	if !ok {
		return Path{}, ErrBadName
	}
	return c, nil
}

// ParseEntryPath reads the path of an entry, <kind>/<hh>/<rest>/<value>:
// its key (format.ParseKey says what is wrong with one that is not).
func ParseEntryPath(p string) (format.Entry, error) {
	return format.ParseKey(p)
}

// rootNames are the root's children, sorted by name.
var rootNames = func() []string {
	names := []string{BySigner}
	for _, k := range format.Kinds {
		names = append(names, k.String())
	}
	slices.Sort(names)
	return names
}()

// objectPath is "<kind>/<hh>/<rest>".
func objectPath(kind format.Kind, obj string) string {
	return kind.String() + "/" + obj[:2] + "/" + obj[2:]
}

// linkTarget is the by-signer symlink target of a signature.
func linkTarget(obj, signer string) string {
	return "../../" + format.KindSig.Prefix() + obj[:2] + "/" + obj[2:] + "/" + signer
}

// SplitPath splits a tree path into its directory ("" at the root) and
// its last name.
func SplitPath(p string) (dir, name string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// JoinPath is the path of name in the directory dir ("" is the root).
func JoinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// FNV-64a, computed over path pieces without joining them.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// inoOf is the stable inode number of a path: FNV-64a of the path, never
// 0 or 1 (1 is the FUSE root).
func inoOf(h uint64) uint64 {
	if h <= 1 {
		return h + 2
	}
	return h
}

// ChildIno is the inode number of the path of name in the directory dir
// ("" is the root): PathIno(JoinPath(dir, name)), without joining them.
func ChildIno(dir, name string) uint64 {
	h := uint64(fnvOffset)
	if dir != "" {
		h = fnvAdd(h, dir)
		h = fnvAdd(h, "/")
	}
	return inoOf(fnvAdd(h, name))
}

// PathIno is the stable inode number of a tree path ("" or "." is the
// root's path; the mount gives its root 1): FNV-64a of the path, never 0
// or 1. The index numbers its nodes (Node.Ino) so; the mount numbers what
// the index does not know (virtual directories, files being created,
// .oxy/) with it.
func PathIno(p string) uint64 {
	if p == "." {
		p = ""
	}
	return inoOf(fnvAdd(fnvOffset, p))
}
