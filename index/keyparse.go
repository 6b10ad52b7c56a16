package index

import (
	"encoding/hex"
	"io/fs"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/oxyfs/oxyfs/store"
)

// splitKey splits and validates an entry key <kind>/<hh>/<rest>/<value>
// held in a byte slice, without allocating. It applies exactly the rules of
// store.ParseKey (DESIGN §3); TestSplitKeyAgreesWithParseKey holds the two
// together. hexObj is hh+rest without the slash, written into buf.
func splitKey(key []byte, buf *[store.MaxObjectHex]byte) (kind store.Kind, hexObj []byte, value []byte, ok bool) {
	i := indexByte(key, '/')
	if i < 0 {
		return 0, nil, nil, false
	}
	kind, ok = kindOf(key[:i])
	if !ok {
		return 0, nil, nil, false
	}
	rest := key[i+1:]
	if len(rest) < 3 || rest[2] != '/' {
		return 0, nil, nil, false
	}
	hh := rest[:2]
	rest = rest[3:]
	j := indexByte(rest, '/')
	if j < 0 {
		return 0, nil, nil, false
	}
	tail, value := rest[:j], rest[j+1:]
	n := len(hh) + len(tail)
	if n < store.MinObjectHex || n > store.MaxObjectHex || n%2 != 0 || !isLowerHex(hh) || !isLowerHex(tail) {
		return 0, nil, nil, false
	}
	copy(buf[:], hh)
	copy(buf[2:], tail)
	hexObj = buf[:n]
	if !validValue(value) {
		return 0, nil, nil, false
	}
	return kind, hexObj, value, true
}

// splitKeyPacked is splitKey that also packs the object id into obj (which
// must have room for store.MaxObjectHex/2 bytes), checking its characters as
// it goes: one pass over the key.
func splitKeyPacked(key []byte, obj []byte) (kind store.Kind, packed []byte, value []byte, ok bool) {
	i := indexByte(key, '/')
	if i < 0 {
		return 0, nil, nil, false
	}
	kind, ok = kindOf(key[:i])
	if !ok {
		return 0, nil, nil, false
	}
	rest := key[i+1:]
	if len(rest) < 3 || rest[2] != '/' {
		return 0, nil, nil, false
	}
	hi, lo := hexVal[rest[0]], hexVal[rest[1]]
	if hi < 0 || lo < 0 {
		return 0, nil, nil, false
	}
	obj = append(obj[:0], byte(hi<<4|lo))
	rest = rest[3:]
	j := 0
	for ; j+1 < len(rest); j += 2 {
		hi, lo := hexVal[rest[j]], hexVal[rest[j+1]]
		if hi < 0 || lo < 0 {
			break
		}
		obj = append(obj, byte(hi<<4|lo))
	}
	if j >= len(rest) || rest[j] != '/' {
		return 0, nil, nil, false
	}
	if n := 2 * len(obj); n < store.MinObjectHex || n > store.MaxObjectHex {
		return 0, nil, nil, false
	}
	value = rest[j+1:]
	if !validValue(value) {
		return 0, nil, nil, false
	}
	return kind, obj, value, true
}

// hexVal maps a lowercase hex digit to its value, anything else to -1.
var hexVal = func() (t [256]int16) {
	for i := range t {
		t[i] = -1
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = int16(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = int16(c - 'a' + 10)
	}
	return t
}()

func kindOf(b []byte) (store.Kind, bool) {
	switch string(b) { // no allocation: the compiler compares in place
	case "sig":
		return store.KindSig, true
	case "seal":
		return store.KindSeal, true
	case "receipt":
		return store.KindReceipt, true
	case "approval":
		return store.KindApproval, true
	case "cert":
		return store.KindCert, true
	case "accepted":
		return store.KindAccepted, true
	}
	return 0, false
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func isLowerHex[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// validValue is store.ValidateValue on bytes: 1–255 bytes of UTF-8, no '/',
// NUL, CR or LF, not "." or "..".
func validValue(v []byte) bool {
	if len(v) == 0 || len(v) > store.MaxValueLen {
		return false
	}
	if len(v) <= 2 && (string(v) == "." || string(v) == "..") {
		return false
	}
	for _, c := range v {
		if c == '/' || c == 0 || c == '\r' || c == '\n' {
			return false
		}
	}
	return utf8.Valid(v)
}

// validObjectHex reports whether s is a valid object id (DESIGN §3).
func validObjectHex(s string) bool {
	return len(s) >= store.MinObjectHex && len(s) <= store.MaxObjectHex && len(s)%2 == 0 && isLowerHex(s)
}

// packHex decodes lowercase hex (already checked) into dst.
func packHex(dst []byte, src []byte) []byte {
	n := len(src) / 2
	for i := 0; i < n; i++ {
		dst = append(dst, unhex(src[2*i])<<4|unhex(src[2*i+1]))
	}
	return dst
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// The tree of DESIGN §4, as the paths ReadDir and Stat take.
const (
	levelRoot    = iota // ""
	levelKind           // "sig"
	levelHH             // "sig/ab"
	levelObject         // "sig/ab/<rest>"
	levelEntry          // "sig/ab/<rest>/<value>"
	levelSigners        // "by-signer"
	levelSigner         // "by-signer/<signer>"
	levelLink           // "by-signer/<signer>/<hh><rest>"
)

// BySigner is the name of the directory of symlinks by signer.
const BySigner = "by-signer"

// rootNames are the root's children, sorted by name.
var rootNames = func() []string {
	names := []string{BySigner}
	for _, k := range store.Kinds {
		names = append(names, k.String())
	}
	slices.Sort(names)
	return names
}()

// tpath is a parsed tree path.
type tpath struct {
	level int
	kind  store.Kind
	hh    string // levelHH and deeper
	obj   string // full object hex (hh+rest), levelObject, levelEntry, levelLink
	val   string // value / signer
}

// parsePath parses a slash path relative to the mount root ("" or "." is
// the root). ok is false for a path that cannot exist in the tree.
func parsePath(p string) (tpath, bool) {
	if p == "" || p == "." {
		return tpath{level: levelRoot}, true
	}
	if !fs.ValidPath(p) {
		return tpath{}, false
	}
	var parts [5]string
	n := 0
	for rest := p; n < len(parts); n++ {
		var found bool
		parts[n], rest, found = strings.Cut(rest, "/")
		if !found {
			n++
			break
		}
		if n == len(parts)-1 {
			return tpath{}, false
		}
	}
	if parts[0] == BySigner {
		t := tpath{level: levelSigners, kind: store.KindSig}
		if n >= 2 {
			if store.ValidateValue(parts[1]) != nil {
				return tpath{}, false
			}
			t.level, t.val = levelSigner, parts[1]
		}
		if n >= 3 {
			if !validObjectHex(parts[2]) {
				return tpath{}, false
			}
			t.level, t.obj, t.hh = levelLink, parts[2], parts[2][:2]
		}
		if n > 3 {
			return tpath{}, false
		}
		return t, true
	}
	kind, ok := store.ParseKind(parts[0])
	if !ok || n > 4 {
		return tpath{}, false
	}
	t := tpath{level: levelKind, kind: kind}
	if n >= 2 {
		if len(parts[1]) != 2 || !isLowerHex(parts[1]) {
			return tpath{}, false
		}
		t.level, t.hh = levelHH, parts[1]
	}
	if n >= 3 {
		t.obj = parts[1] + parts[2]
		if !validObjectHex(t.obj) {
			return tpath{}, false
		}
		t.level = levelObject
	}
	if n == 4 {
		if store.ValidateValue(parts[3]) != nil {
			return tpath{}, false
		}
		t.level, t.val = levelEntry, parts[3]
	}
	return t, true
}

// objectPath is "<kind>/<hh>/<rest>".
func objectPath(kind store.Kind, obj string) string {
	return kind.String() + "/" + obj[:2] + "/" + obj[2:]
}

// linkTarget is the by-signer symlink target of a signature.
func linkTarget(obj, signer string) string {
	return "../../sig/" + obj[:2] + "/" + obj[2:] + "/" + signer
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

// childIno is the inode number of dir + "/" + name ("" dir = root).
func childIno(dir, name string) uint64 {
	h := uint64(fnvOffset)
	if dir != "" {
		h = fnvAdd(h, dir)
		h = fnvAdd(h, "/")
	}
	return inoOf(fnvAdd(h, name))
}

// pathIno is the inode number of a path.
func pathIno(p string) uint64 {
	if p == "." {
		p = ""
	}
	return inoOf(fnvAdd(fnvOffset, p))
}

func hexString(b []byte) string { return hex.EncodeToString(b) }
