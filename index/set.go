package index

import (
	"bytes"
	"encoding/hex"
	"slices"
	"sort"

	"github.com/oxyfs/oxyfs/store/format"
)

// vtab is the value table: each value (signer or indexed value), referred
// to by a uint32 id; a distinct value once, but for attestation ids a list
// names that the journal or another list names too (builder.internOf),
// which may be held twice and are compared by text. Values that are
// lowercase hex of even length are kept packed (half the bytes), marked in
// a bitset. Pointer-free: the GC never scans it. See doc.go for the
// arithmetic.
//
// The ids below nb are a base table, one list's own (builder.adopt),
// shared read-only: maybe mapped from the list cache (listcache.go),
// never written, so a clone shares it. The ids from nb are the table's
// own, appended to.
type vtab struct {
	arena []byte   // the own values' bytes, back to back
	off   []uint32 // own value nb+i is arena[off[i]:off[i+1]]; len = own values+1
	hexed []uint64 // bit i set: own value nb+i is packed hex
	base  *vtab    // ids below nb; nil: none. Read-only, never appended to.
	nb    uint32   // base.n(), or 0
}

func newVtab() vtab { return vtab{off: []uint32{0}} }

// onBase returns a table whose ids below base.n() are base's: base is
// shared, never written.
func onBase(base *vtab) vtab {
	return vtab{off: []uint32{0}, base: base, nb: uint32(base.n())}
}

func (t *vtab) n() int { return int(t.nb) + len(t.off) - 1 }

func (t *vtab) raw(id uint32) []byte {
	if id < t.nb {
		return t.base.raw(id)
	}
	id -= t.nb
	return t.arena[t.off[id]:t.off[id+1]]
}

func (t *vtab) isHex(id uint32) bool {
	if id < t.nb {
		return t.base.isHex(id)
	}
	id -= t.nb
	w := int(id / 64)
	return w < len(t.hexed) && t.hexed[w]&(1<<(id%64)) != 0
}

// appendTo appends value id's text to dst.
func (t *vtab) appendTo(dst []byte, id uint32) []byte {
	if t.isHex(id) {
		return hex.AppendEncode(dst, t.raw(id))
	}
	return append(dst, t.raw(id)...)
}

// str returns value id's text.
func (t *vtab) str(id uint32) string {
	if t.isHex(id) {
		return hex.EncodeToString(t.raw(id))
	}
	return string(t.raw(id))
}

// cmp compares value id's text with s, without allocating.
func (t *vtab) cmp(id uint32, s string) int {
	var buf [2 * format.MaxValueLen]byte
	return compareBS(t.appendTo(buf[:0], id), s)
}

// cmpIDs compares the texts of two values of the table.
func (t *vtab) cmpIDs(a, b uint32) int {
	if a == b {
		return 0
	}
	var ba, bb [2 * format.MaxValueLen]byte
	return bytes.Compare(t.appendTo(ba[:0], a), t.appendTo(bb[:0], b))
}

// add appends a value (already validated) and returns its id.
func (t *vtab) add(v []byte) uint32 {
	if id, ok := t.addHex(v); ok {
		return id
	}
	id := uint32(t.n())
	t.arena = append(t.arena, v...)
	t.off = append(t.off, uint32(len(t.arena)))
	return id
}

// addHex appends v packed if it is lowercase hex of even length (checked
// as it is packed, in one pass); false, and nothing added, if not.
func (t *vtab) addHex(v []byte) (uint32, bool) {
	if len(v) < 2 || len(v)%2 != 0 {
		return 0, false
	}
	arena, ok := appendPackedHex(t.arena, v)
	if !ok {
		return 0, false
	}
	id := uint32(t.n())
	own := id - t.nb
	for int(own/64) >= len(t.hexed) {
		t.hexed = append(t.hexed, 0)
	}
	t.hexed[own/64] |= 1 << (own % 64)
	t.arena = arena
	t.off = append(t.off, uint32(len(t.arena)))
	return id, true
}

// clone copies the own values; the base is shared.
func (t *vtab) clone() vtab {
	return vtab{arena: slices.Clone(t.arena), off: slices.Clone(t.off), hexed: slices.Clone(t.hexed), base: t.base, nb: t.nb}
}

func (t *vtab) compact() {
	t.arena, t.off, t.hexed = slices.Clip(exact(t.arena)), exact(t.off), exact(t.hexed)
}

// trimLeavingRoom trims the own values' arrays to their length and a
// thirty-second more (a list's decode, as its last kind starts: its values,
// signers, are mostly in the table already), so the copy is made while
// the decoder still works, and trimDecoded at the end finds little slack.
func (t *vtab) trimLeavingRoom() {
	t.arena = withRoom(t.arena, len(t.arena)/32+4096)
	t.off = withRoom(t.off, len(t.off)/32+256)
}

// withRoom returns s in a slice of room more capacity than its length: a
// copy, unless it has that much or less already.
func withRoom[T any](s []T, room int) []T {
	if cap(s)-len(s) <= room {
		return s
	}
	out := make([]T, len(s), len(s)+room)
	copy(out, s)
	return out
}

// trimDecoded is compact for a decoded list's own table: an array whose
// slack is small is kept (tight), not copied.
func (t *vtab) trimDecoded() {
	t.arena, t.off, t.hexed = tight(t.arena), tight(t.off), exact(t.hexed)
}

// bytes is what the table holds, its base's included (mapped or not).
func (t *vtab) bytes() int64 {
	n := int64(cap(t.arena)) + 4*int64(cap(t.off)) + 8*int64(cap(t.hexed))
	if t.base != nil {
		n += t.base.bytes()
	}
	return n
}

func compareBS(a []byte, s string) int {
	n := min(len(a), len(s))
	for i := 0; i < n; i++ {
		if a[i] != s[i] {
			if a[i] < s[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(s):
		return -1
	case len(a) > len(s):
		return 1
	}
	return 0
}

// kindSet holds the entries of one kind, sorted by (object, value text),
// which is the order of their keys. Pointer-free flat arrays.
type kindSet struct {
	objs   []byte   // distinct object ids, packed (hex/2), sorted, back to back
	objOff []uint32 // nil while every id is objW bytes; else len = objects+1
	objW   int      // the common width of the ids when objOff is nil
	first  []uint32 // object i's entries are vals[first[i]:first[i+1]]; len = objects+1
	vals   []uint32 // value ids, per entry
	srcs   []uint8  // source ids, per entry (entrySet.srcNames)
	hh     [257]uint32
	// sized: the arrays were sized for the rest of a list from a sample
	// (lastKindSizer), so finish keeps a small slack rather than copy
	// them to trim it (tight).
	sized bool
}

func (k *kindSet) nObj() int {
	if len(k.first) == 0 {
		return 0
	}
	return len(k.first) - 1
}

func (k *kindSet) nEntries() int { return len(k.vals) }

func (k *kindSet) obj(i int) []byte {
	if k.objOff == nil {
		return k.objs[i*k.objW : (i+1)*k.objW]
	}
	return k.objs[k.objOff[i]:k.objOff[i+1]]
}

// addObj appends a new object; it must sort after the last one.
func (k *kindSet) addObj(ob []byte) bool {
	n := k.nObj()
	if n > 0 && bytes.Compare(ob, k.obj(n-1)) <= 0 {
		return false
	}
	if n == 0 {
		k.first = append(k.first[:0], uint32(len(k.vals)))
		k.objW = len(ob)
	} else if k.objOff == nil && len(ob) != k.objW {
		k.objOff = make([]uint32, n+1, 2*n+2)
		for i := range k.objOff {
			k.objOff[i] = uint32(i * k.objW)
		}
	}
	k.objs = append(grown(k.objs, len(ob)), ob...)
	if k.objOff != nil {
		k.objOff = append(grown(k.objOff, 1), uint32(len(k.objs)))
	}
	k.first = append(grown(k.first, 1), uint32(len(k.vals)))
	return true
}

// add appends an entry: to the last object if ob equals it, else to a new
// object. It reports false when ob sorts before the last object.
func (k *kindSet) add(ob []byte, val uint32, src uint8) bool {
	n := k.nObj()
	if n == 0 || !bytes.Equal(ob, k.obj(n-1)) {
		if !k.addObj(ob) {
			return false
		}
		n++
	}
	k.vals = append(grown(k.vals, 1), val)
	k.srcs = append(grown(k.srcs, 1), src)
	k.first[n] = uint32(len(k.vals))
	return true
}

// reserveFor grows the arrays' capacity for entries more entries on
// objects more objects of objW bytes (lastKindSizer), so appends do not
// grow them; finish trims what is left unless it is little.
func (k *kindSet) reserveFor(entries, objects, objW int) {
	entries, objects = min(max(entries, 0), format.MaxEntryListKeys), min(max(objects, 0), format.MaxEntryListKeys)
	k.objs = grownTo(k.objs, objects*objW)
	k.first = grownTo(k.first, objects+1)
	k.vals = grownTo(k.vals, entries)
	k.srcs = grownTo(k.srcs, entries)
}

// finish trims the arrays to their length (those a sample sized, only if
// their slack is not small: tight) and indexes the hh boundaries.
func (k *kindSet) finish() {
	trim := exact[byte]
	trim32 := exact[uint32]
	if k.sized {
		trim, trim32 = tight[byte], tight[uint32]
	}
	k.objs, k.objOff, k.first = trim(k.objs), exact(k.objOff), trim32(k.first)
	k.vals, k.srcs = trim32(k.vals), trim(k.srcs)
	n := k.nObj()
	b := 0
	for i := 0; i < n; i++ {
		for c := int(k.obj(i)[0]); b <= c; b++ {
			k.hh[b] = uint32(i)
		}
	}
	for ; b <= 256; b++ {
		k.hh[b] = uint32(n)
	}
}

func (k *kindSet) bytes() int64 {
	return int64(cap(k.objs)) + 4*int64(cap(k.objOff)+cap(k.first)+cap(k.vals)) + int64(cap(k.srcs)) + 4*257
}

// findObj finds a packed object id: O(log n) within its hh bucket.
func (k *kindSet) findObj(ob []byte) (int, bool) {
	if len(ob) == 0 || k.nObj() == 0 {
		return 0, false
	}
	lo, hi := int(k.hh[ob[0]]), int(k.hh[int(ob[0])+1])
	i := lo + sort.Search(hi-lo, func(j int) bool { return bytes.Compare(k.obj(lo+j), ob) >= 0 })
	return i, i < hi && bytes.Equal(k.obj(i), ob)
}

// findVal finds a value among object i's entries; it returns the entry index.
func (k *kindSet) findVal(vt *vtab, i int, val string) (int, bool) {
	lo, hi := int(k.first[i]), int(k.first[i+1])
	j := lo + sort.Search(hi-lo, func(j int) bool { return vt.cmp(k.vals[lo+j], val) >= 0 })
	return j, j < hi && vt.cmp(k.vals[j], val) == 0
}

// hhBucket returns the range of objects whose first byte is b.
func (k *kindSet) hhBucket(b byte) (int, int) { return int(k.hh[b]), int(k.hh[int(b)+1]) }

// entrySet is an immutable, sorted set of entries: per kind a kindSet, one
// value table, and the names of the sources entries came from.
type entrySet struct {
	kinds    [format.NumKinds]kindSet
	vt       vtab
	signers  []uint32 // distinct value ids of sig entries, sorted by text
	srcNames []string // source id -> "list pack-<id>.entries", "journal"
	// pins keep the list cache's mappings its arrays are in mapped
	// (listcache.go): each is unmapped once no set holds it.
	pins []*listMap
}

var emptySet = func() *entrySet {
	s := &entrySet{vt: newVtab()}
	s.finish()
	return s
}()

func (s *entrySet) finish() {
	for i := range s.kinds {
		s.kinds[i].finish()
	}
	s.vt.compact()
	s.signers = s.signers[:0]
	seen := make([]uint64, (s.vt.n()+63)/64)
	for _, v := range s.kinds[format.KindSig].vals {
		if seen[v/64]&(1<<(v%64)) == 0 {
			seen[v/64] |= 1 << (v % 64)
			s.signers = append(s.signers, v)
		}
	}
	// Every id stays (a refresh may have added a text twice); equal
	// texts end up adjacent.
	slices.SortFunc(s.signers, s.vt.cmpIDs)
	s.signers = exact(s.signers)
}

// entries counts the entries of the set.
func (s *entrySet) entries() int {
	n := 0
	for i := range s.kinds {
		n += s.kinds[i].nEntries()
	}
	return n
}

// memoryBytes is what the set's arrays hold.
func (s *entrySet) memoryBytes() int64 {
	n := s.vt.bytes() + 4*int64(cap(s.signers))
	for i := range s.kinds {
		n += s.kinds[i].bytes()
	}
	for _, name := range s.srcNames {
		n += int64(len(name)) + 16
	}
	return n
}

// lookup finds an entry; it returns its source name.
func (s *entrySet) lookup(kind format.Kind, obj, val string) (string, bool) {
	k := &s.kinds[kind]
	var buf [format.MaxObjectBytes]byte
	ob, ok := format.DecodeObjectID(obj, &buf)
	if !ok {
		return "", false
	}
	i, ok := k.findObj(ob)
	if !ok {
		return "", false
	}
	j, ok := k.findVal(&s.vt, i, val)
	if !ok {
		return "", false
	}
	return s.srcNames[k.srcs[j]], true
}

// hasObject reports whether the set holds an entry of the object.
func (s *entrySet) hasObject(kind format.Kind, obj string) bool {
	var buf [format.MaxObjectBytes]byte
	ob, ok := format.DecodeObjectID(obj, &buf)
	if !ok {
		return false
	}
	_, found := s.kinds[kind].findObj(ob)
	return found
}

// hhNames lists the hh directories of a kind (a walk of 256 boundaries).
func (s *entrySet) hhNames(kind format.Kind) []string {
	k := &s.kinds[kind]
	var names []string
	for b := 0; b < 256; b++ {
		if k.hh[b] < k.hh[b+1] {
			names = append(names, hexByte[b])
		}
	}
	return names
}

// restNames lists the object directories under <kind>/<hh>.
func (s *entrySet) restNames(kind format.Kind, hh string) []string {
	k := &s.kinds[kind]
	b, ok := format.ParseHH(hh)
	if !ok {
		return nil
	}
	lo, hi := k.hhBucket(b)
	names := make([]string, 0, hi-lo)
	var buf [format.MaxObjectHex]byte
	for i := lo; i < hi; i++ {
		names = append(names, string(hex.AppendEncode(buf[:0], k.obj(i)[1:])))
	}
	return names
}

// values lists an object's entries.
func (s *entrySet) values(kind format.Kind, obj string) []entrySource {
	k := &s.kinds[kind]
	var buf [format.MaxObjectBytes]byte
	ob, ok := format.DecodeObjectID(obj, &buf)
	if !ok {
		return nil
	}
	i, found := k.findObj(ob)
	if !found {
		return nil
	}
	out := make([]entrySource, 0, k.first[i+1]-k.first[i])
	for j := k.first[i]; j < k.first[i+1]; j++ {
		out = append(out, entrySource{val: s.vt.str(k.vals[j]), source: s.srcNames[k.srcs[j]]})
	}
	return out
}

// signerNames lists the distinct signers of sig entries.
func (s *entrySet) signerNames() []string {
	out := make([]string, 0, len(s.signers))
	for _, id := range s.signers {
		if v := s.vt.str(id); len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

// signerIDs returns the value ids whose text is signer.
func (s *entrySet) signerIDs(signer string) []uint32 {
	i := sort.Search(len(s.signers), func(i int) bool { return s.vt.cmp(s.signers[i], signer) >= 0 })
	j := i
	for j < len(s.signers) && s.vt.cmp(s.signers[j], signer) == 0 {
		j++
	}
	return s.signers[i:j]
}

// signedBy lists, as object hex, the objects a signer signed: one scan of
// the sig entries comparing uint32 ids.
func (s *entrySet) signedBy(signer string) []string {
	ids := s.signerIDs(signer)
	if len(ids) == 0 {
		return nil
	}
	k := &s.kinds[format.KindSig]
	var out []string
	for i := 0; i < k.nObj(); i++ {
		for j := k.first[i]; j < k.first[i+1]; j++ {
			if slices.Contains(ids, k.vals[j]) {
				out = append(out, hexString(k.obj(i)))
				break
			}
		}
	}
	return out
}

// hasSigner reports whether a signer signed anything in the set.
func (s *entrySet) hasSigner(signer string) bool {
	return len(s.signerIDs(signer)) > 0
}

var hexByte = func() (t [256]string) {
	for i := range t {
		t[i] = hex.EncodeToString([]byte{byte(i)})
	}
	return t
}()

// The values of the table that look like hex are kept packed (vtab.add):
// plain hex, no part of the key grammar. unhexTab is each byte's value as
// a lowercase hex digit; 0xff: none.
var unhexTab = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
	}
	return t
}()

// appendPackedHex appends src, lowercase hex of even length, packed (half
// the bytes); false, with dst's length unchanged, if src is not.
func appendPackedHex(dst, src []byte) ([]byte, bool) {
	n := len(src) / 2
	dst = grown(dst, n)
	out := dst[len(dst) : len(dst)+n]
	bad := byte(0)
	for i := range out {
		h, l := unhexTab[src[2*i]], unhexTab[src[2*i+1]]
		bad |= h | l
		out[i] = h<<4 | l
	}
	if bad&0xf0 != 0 {
		return dst, false
	}
	return dst[:len(dst)+n], true
}

func hexString(b []byte) string { return hex.EncodeToString(b) }

// grown is s with room for n more, its capacity doubled when it must grow.
// append grows a large slice by 1.25× a time, which at 1e7 entries copied
// each array about 5 times over and faulted in every new copy: 8 of the 17
// s of an open of a 1e7-entry list went to memmove, and as much again to
// the kernel's page faults. finish trims the arrays to their length.
func grown[T any](s []T, n int) []T {
	if len(s)+n <= cap(s) {
		return s
	}
	return grownTo(s, max(n, len(s)))
}

// grownTo returns s with room for n more elements: s, if it has it, else a
// copy in a new array. Not slices.Grow: that clears the new capacity
// (append of a make), so a reservation of hundreds of MB wrote every page of
// it, faulting it in — 2.3 s of a 10M open's 7.5 s of CPU (its profile),
// 1.4 s of it clearing. make leaves memory the runtime knows is zero
// (fresh from the OS) untouched, so a reservation costs only the pages
// later filled.
func grownTo[T any](s []T, n int) []T {
	if n <= cap(s)-len(s) {
		return s
	}
	out := make([]T, len(s), len(s)+n)
	copy(out, s)
	return out
}

// tight returns s, if its slack is at most a sixteenth of its length
// (a sized array: lastKindSizer), else exact(s): the copy to trim a few
// percent costs more than the few percent (a 10M-entry open spent a second
// trimming), and the set's memory (memoryBytes: capacities) counts them.
func tight[T any](s []T) []T {
	if cap(s)-len(s) <= len(s)/16 {
		return s
	}
	return exact(s)
}

// exact returns s in a slice of exactly its length, so no growth slack stays
// resident.
func exact[T any](s []T) []T {
	if len(s) == cap(s) || s == nil {
		return s
	}
	out := make([]T, len(s))
	copy(out, s)
	return out
}
