package fs

import (
	"context"
	"strconv"
	"sync"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// View ids (issue 38, "no node per name"). The directories of the index
// tree below the root — a kind's (sig/), an <hh> (sig/ab) and an object's
// (sig/ab/<rest>) — are answered by the mount itself (viewfs.go), not by
// go-fuse's bridge, under node ids computed from their path: nothing is
// kept per directory the kernel holds. A view id has its top bit set (the
// bridge numbers its nodes from 1 up, and never so high):
//
//	1 1 kkk <key: 59 bits>        an object directory: its kind and
//	                              index.ObjectKey, the first 59 bits of its
//	                              packed object id
//	1 0 001 … kkkkkkkk            a kind's directory
//	1 0 010 … kkkkkkkk hhhhhhhh   an <hh> directory
//	1 0 011 <n: 59 bits>          an entry of the id table
//
// (1 0 1… is a leaf id and 1 0 000… a link id, leafids.go: neither is a
// view id.)
//
// An object directory's id is a function of its object id, so it is the
// same across refreshes, and its path is found again by a binary search of
// the view's set (index.ObjectsByKey). A directory whose key does not lead
// back to it — two objects of the set share the key (expected pairs at
// 10M objects: 10^14 / 2^60 ≈ 10^-4), or the set does not hold it yet (an
// own write the view's set does not hold, what prefix listings found on a
// store that is not folded, a directory mkdir made, a file being created)
// — gets an id from the table instead (id ↔ path), kept while the kernel
// holds it: the lookups the kernel was given, less those it forgot. The
// table is small on a folded store (a few own writes and mkdirs); on a
// store that is not folded it holds the object directories the kernel
// holds, ~100 bytes each against the ~770 of a go-fuse node.
type viewIDs struct {
	ix      *index.Index // read-only after Mount
	keyBits uint         // the key's bits in an object directory's id; read-only after Mount (tests shorten it)

	mu    sync.Mutex          // protects the following; a leaf (the index is asked outside it)
	table map[uint64]*idEntry // table id -> its directory; guarded by mu
	byDir map[string]uint64   // path -> table id; guarded by mu
	next  uint64              // the last table id's number; guarded by mu
}

// idEntry is a directory of the id table.
type idEntry struct {
	path    string
	lookups uint64 // the kernel's lookups of the id not yet forgotten
}

// The view ids' fields.
const (
	viewBit     = uint64(1) << 63
	viewObjBit  = uint64(1) << 62
	viewShift   = 59 // the kind of an object directory's id, the type of another's
	viewLow     = uint64(1)<<viewShift - 1
	viewKeyBits = 59

	viewTypeKind  = 1
	viewTypeHH    = 2
	viewTypeTable = 3
)

// isViewID reports whether a node id is a view id (answered by viewFS).
func isViewID(id uint64) bool { return id&viewBit != 0 && !isLeafID(id) && !isLinkID(id) }

// isOwnID reports whether a node id is the mount's own (a view id, a
// leaf id: leafids.go, or a link id: linkids.go), never the bridge's.
func isOwnID(id uint64) bool { return id&viewBit != 0 }

func (v *viewIDs) init(ix *index.Index, keyBits uint) {
	v.ix = ix
	v.keyBits = keyBits
	if v.keyBits == 0 || v.keyBits > viewKeyBits {
		v.keyBits = viewKeyBits
	}
	v.table = make(map[uint64]*idEntry)
	v.byDir = make(map[string]uint64)
}

// viewDir reports whether the directory at level t gets a view id.
func viewDir(t index.Path) bool {
	return t.Level == index.LevelKind || t.Level == index.LevelHH || t.Level == index.LevelObject
}

// id is the view id of the directory p, at t (ParsePath of p; a kind's, an
// <hh> or an object directory). With lookup, the kernel is given the id
// (a LOOKUP's, a MKDIR's or a READDIRPLUS entry's reply): a directory of the
// table is added to it if need be and its lookups counted. Without, ok is
// false for a directory the kernel cannot hold (no table id).
func (v *viewIDs) id(ctx context.Context, p string, t index.Path, lookup bool) (uint64, bool) {
	switch t.Level {
	case index.LevelKind:
		return viewBit | viewTypeKind<<viewShift | uint64(t.Kind), true
	case index.LevelHH:
		hh, err := strconv.ParseUint(t.Object, 16, 8) // ParsePath checked it: two hex digits
		if err != nil {
			return 0, false
		}
		return viewBit | viewTypeHH<<viewShift | uint64(t.Kind)<<8 | uint64(hh), true
	case index.LevelObject:
	default:
		return 0, false
	}
	if key, ok := index.ObjectKey(t.Object, v.keyBits); ok {
		if only, err := v.ix.KeyFindsOnly(ctx, t.Kind, t.Object, v.keyBits); err == nil && only {
			return viewBit | viewObjBit | uint64(t.Kind)<<viewShift | key, true
		}
	}
	return v.tableID(p, lookup)
}

// tableID is the table's id of the directory p: with lookup, added if need
// be and its lookups counted.
func (v *viewIDs) tableID(p string, lookup bool) (uint64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	id, ok := v.byDir[p]
	if !ok {
		if !lookup {
			return 0, false
		}
		v.next++
		id = viewBit | viewTypeTable<<viewShift | v.next&viewLow
		v.byDir[p] = id
		v.table[id] = &idEntry{path: p}
	}
	if lookup {
		v.table[id].lookups++
	}
	return id, true
}

// forget takes n lookups of id off (FORGET): a table id whose lookups are
// all forgotten leaves the table. Other ids hold nothing.
func (v *viewIDs) forget(id, n uint64) {
	if id&(viewBit|viewObjBit|7<<viewShift) != viewBit|viewTypeTable<<viewShift {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	e := v.table[id]
	if e == nil {
		return
	}
	if n >= e.lookups {
		delete(v.table, id)
		delete(v.byDir, e.path)
		return
	}
	e.lookups -= n
}

// tableLen is how many directories the table holds.
func (v *viewIDs) tableLen() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.table)
}

// dir is the directory a view id names, as of the current view: its path
// and ParsePath of it. ok is false for an id that names none (never given,
// forgotten, or an object directory whose key the view's set no longer
// holds once: its object gone, or a second object come to share it).
func (v *viewIDs) dir(ctx context.Context, id uint64) (string, index.Path, bool) {
	if id&viewBit == 0 {
		return "", index.Path{}, false
	}
	if id&viewObjBit != 0 {
		kind := format.Kind(id >> viewShift & 7)
		key := id & viewLow
		if int(kind) >= format.NumKinds || v.keyBits < viewKeyBits && key>>v.keyBits != 0 {
			return "", index.Path{}, false
		}
		var hexBuf [format.MaxObjectHex]byte
		obj, n, err := v.ix.ObjectsByKey(ctx, kind, key, v.keyBits, hexBuf[:0])
		if err != nil || n != 1 || len(obj) < format.MinObjectHex {
			return "", index.Path{}, false
		}
		p, at := objectDir(kind, obj)
		return p, at, true
	}
	low := id & viewLow
	switch id >> viewShift & 7 {
	case viewTypeKind:
		if low >= format.NumKinds {
			return "", index.Path{}, false
		}
		return parseViewDir(format.Kind(low).String())
	case viewTypeHH:
		if low>>8 >= format.NumKinds {
			return "", index.Path{}, false
		}
		return parseViewDir(format.Kind(low>>8).String() + "/" + hexByte(byte(low)))
	case viewTypeTable:
		v.mu.Lock()
		e := v.table[id]
		v.mu.Unlock()
		if e == nil {
			return "", index.Path{}, false
		}
		return parseViewDir(e.path)
	}
	return "", index.Path{}, false
}

// objectDir is the path of the object directory of kind and obj (its id
// in hex, at least format.MinObjectHex long) and its Path, in one
// allocation: the path and the object id share one string. viewFS makes
// one per request on an object directory's id.
func objectDir(kind format.Kind, obj []byte) (string, index.Path) {
	var buf [16 + 2*format.MaxObjectHex + 1]byte
	b := append(append(buf[:0], kind.String()...), '/')
	b = append(append(append(b, obj[:2]...), '/'), obj[2:]...)
	n := len(b)
	s := string(append(b, obj...))
	return s[:n], index.Path{Level: index.LevelObject, Kind: kind, Object: s[n:]}
}

func parseViewDir(p string) (string, index.Path, bool) {
	t, ok := index.ParsePath(p)
	if !ok || !viewDir(t) {
		return "", index.Path{}, false
	}
	return p, t, true
}

func hexByte(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// held is every view id the kernel may hold for the directory p at t: the
// one id computes and, for an object directory, its key's and its table
// id, whichever exist (an object directory given a table id before a view
// held it in its set, or a key id before a second object came to share
// it). Nothing is added to the table.
func (v *viewIDs) held(ctx context.Context, p string, t index.Path) (ids [2]uint64) {
	if t.Level != index.LevelObject {
		ids[0], _ = v.id(ctx, p, t, false)
		return ids
	}
	n := 0
	if key, ok := index.ObjectKey(t.Object, v.keyBits); ok {
		ids[n] = viewBit | viewObjBit | uint64(t.Kind)<<viewShift | key
		n++
	}
	v.mu.Lock()
	if id, ok := v.byDir[p]; ok {
		ids[n] = id
	}
	v.mu.Unlock()
	return ids
}
