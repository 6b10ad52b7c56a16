package index

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"sort"

	"github.com/oxyfs/oxyfs/store/format"
)

// Object keys name an object directory by a number computed from its object
// id alone (the mount's view ids, fs/viewids.go): the first bits of the
// packed id, zero-padded. The view's set is sorted by packed id, so the
// objects that share a key are adjacent, and ObjectsByKey finds them by a
// binary search: nothing per object is kept to go from a key back to its
// directory.

// MaxObjectKeyBits is the longest object key.
const MaxObjectKeyBits = 64

// ObjectKey is the first bits bits (1 to MaxObjectKeyBits) of the packed
// object id obj (hex), zero-padded when the id is shorter. ok is false for
// an id that is not one (format.DecodeObjectID) or bits out of range.
func ObjectKey(obj string, bits uint) (key uint64, ok bool) {
	if bits == 0 || bits > MaxObjectKeyBits {
		return 0, false
	}
	var buf [format.MaxObjectBytes]byte
	ob, ok := format.DecodeObjectID(obj, &buf)
	if !ok {
		return 0, false
	}
	return packedKey(ob, bits), true
}

// packedKey is ObjectKey of a packed id.
func packedKey(ob []byte, bits uint) uint64 {
	var b [8]byte
	copy(b[:], ob)
	return binary.BigEndian.Uint64(b[:]) >> (64 - bits)
}

// keyBytes is the shortest byte string whose packedKey is key: the key's
// bits at the top of 8 bytes, trailing zero bytes cut. It sorts at or
// before every packed id of that key, and every id between it and the last
// of that key has that key (an id of another key sorting after it differs
// from it within its first bits, by a larger bit).
func keyBytes(key uint64, bits uint) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], key<<(64-bits))
	n := 8
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return b[:n]
}

// ObjectsByKey finds the objects of kind in the view's entry set whose
// ObjectKey(bits) is key: the first one's id in hex, appended to dst, and
// how many there are, counting no further than 2 (two ids share the key:
// the caller tells their directories apart some other way). Only the set
// the view was built from is searched: an own write not yet in it and, on
// a store that is not folded, what prefix listings found are not (n is 0
// for them). O(log n), and no allocation when dst has room.
func (ix *Index) ObjectsByKey(ctx context.Context, kind format.Kind, key uint64, bits uint, dst []byte) (obj []byte, n int, err error) {
	if !validKey(kind, key, bits) {
		return dst, 0, nil
	}
	v, err := ix.current(ctx)
	if err != nil {
		return dst, 0, err
	}
	i, n := v.base.objectsByKey(kind, key, bits)
	if n > 0 {
		dst = hex.AppendEncode(dst, v.base.kinds[kind].obj(i))
	}
	return dst, n, nil
}

// KeyFindsOnly reports whether ObjectsByKey(kind, ObjectKey(obj, bits))
// finds obj and no other object, without allocating.
func (ix *Index) KeyFindsOnly(ctx context.Context, kind format.Kind, obj string, bits uint) (bool, error) {
	var buf [format.MaxObjectBytes]byte
	ob, ok := format.DecodeObjectID(obj, &buf)
	if !ok || bits == 0 || bits > MaxObjectKeyBits || int(kind) >= format.NumKinds {
		return false, nil
	}
	v, err := ix.current(ctx)
	if err != nil {
		return false, err
	}
	i, n := v.base.objectsByKey(kind, packedKey(ob, bits), bits)
	return n == 1 && bytes.Equal(v.base.kinds[kind].obj(i), ob), nil
}

func validKey(kind format.Kind, key uint64, bits uint) bool {
	return bits > 0 && bits <= MaxObjectKeyBits && int(kind) < format.NumKinds && (bits == 64 || key>>bits == 0)
}

// objectsByKey is the index of the first object of kind whose key is key
// and how many there are (up to 2).
func (s *entrySet) objectsByKey(kind format.Kind, key uint64, bits uint) (first, n int) {
	k := &s.kinds[kind]
	kb := keyBytes(key, bits)
	hi := k.nObj() // a key of fewer than 8 bits spans buckets: the whole kind
	first = sort.Search(hi, func(j int) bool { return bytes.Compare(k.obj(j), kb) >= 0 })
	for i := first; i < hi && n < 2 && packedKey(k.obj(i), bits) == key; i++ {
		n++
	}
	return first, n
}
