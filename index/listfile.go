package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"unsafe"

	"github.com/oxyfs/oxyfs/store/format"
)

// A list cache file (listcache.go) holds one decodedList as its arrays lie
// in memory, so a mapping of the file is used as it is (no decode):
//
//	magic    8 bytes  "oxylist\n"
//	version  u32      listFileVersion
//	order    u32      0x01020304 as this host writes it (a file of a host of the other byte order is refused)
//	sum      u32      CRC-32C (Castagnoli) of every byte after this field
//	pad      u32
//	header   u64 fields (fileLen, headLen, keys, text, malN, src, list size, entries),
//	         strings (u32 length + bytes: store, list name, malformed's first),
//	         the sections' (offset, length) pairs in section order, then objW per kind
//	payload  the sections, each at an offset that is a multiple of 8
//
// The sections are the value table (arena, off, hexed), the interned ids,
// and per kind objs, objOff, first, vals, srcs. Integers are the host's
// byte order (the order field says which). The checksum covers the header
// and the payload: a corrupt or truncated file fails it; a file of another
// store, list or version fails the header's fields; parseListFile then
// checks every bound the arrays are indexed by, so even a file whose sum
// matches cannot make a lookup read out of range.
const (
	listFileMagic   = "oxylist\n"
	listFileVersion = 1
	listFileOrder   = 0x01020304
	listFileFixed   = 24 // magic, version, order, sum, pad
)

// errListFile is a cache file that is not the list asked for, or not whole.
var errListFile = errors.New("list cache file")

// listFileKey is what a cache file must name to be believed: the store
// (its URL's hash) and the list (its name, which is the SHA-256 of its
// text, and its size as the pack listing gave it).
type listFileKey struct {
	store string
	name  string
	size  int64
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

const numSections = 4 + 5*format.NumKinds

// sectionsOf returns d's arrays as bytes, in section order.
func sectionsOf(d *decodedList) [][]byte {
	secs := [][]byte{d.vt.arena, asBytes(d.vt.off), asBytes(d.vt.hexed), asBytes(d.interned)}
	for k := range d.r.kinds {
		ks := &d.r.kinds[k]
		secs = append(secs, ks.objs, asBytes(ks.objOff), asBytes(ks.first), asBytes(ks.vals), ks.srcs)
	}
	return secs
}

// encodeListFile returns the cache file of d for key (a test's; the cache
// streams it: writeListFile).
func encodeListFile(key listFileKey, d *decodedList) []byte {
	var buf bytes.Buffer
	sum, _ := writeListFile(&buf, key, d)
	out := buf.Bytes()
	binary.NativeEndian.PutUint32(out[16:], sum)
	return out
}

// writeListFile writes the cache file of d for key to w, its sum field
// zero, and returns the sum to put there (at offset 16): the file is
// written as it is laid out, with no copy of the arrays.
func writeListFile(w io.Writer, key listFileKey, d *decodedList) (uint32, error) {
	secs := sectionsOf(d)
	var h []byte
	u64 := func(v uint64) { h = binary.NativeEndian.AppendUint64(h, v) }
	str := func(s string) { h = append(binary.NativeEndian.AppendUint32(h, uint32(len(s))), s...) }
	u64(0) // fileLen, set below
	u64(0) // headLen, set below
	u64(uint64(d.keys))
	u64(uint64(d.text))
	u64(uint64(d.mal.n))
	u64(uint64(d.src))
	u64(uint64(key.size))
	u64(uint64(d.r.entries()))
	str(key.store)
	str(key.name)
	str(d.mal.first)
	headLen := align8(listFileFixed + len(h) + 16*len(secs) + 8*format.NumKinds)
	at := headLen
	for _, s := range secs {
		u64(uint64(at))
		u64(uint64(len(s)))
		at = align8(at + len(s))
	}
	for k := range d.r.kinds {
		u64(uint64(d.r.kinds[k].objW))
	}
	binary.NativeEndian.PutUint64(h, uint64(at))
	binary.NativeEndian.PutUint64(h[8:], uint64(headLen))
	head := make([]byte, headLen)
	copy(head, listFileMagic)
	binary.NativeEndian.PutUint32(head[8:], listFileVersion)
	binary.NativeEndian.PutUint32(head[12:], listFileOrder)
	copy(head[listFileFixed:], h)
	crc := crc32.New(crcTable)
	cw := io.MultiWriter(w, crc)
	if _, err := w.Write(head[:20]); err != nil { // the sum is not summed
		return 0, err
	}
	if _, err := cw.Write(head[20:]); err != nil {
		return 0, err
	}
	var pad [8]byte
	for _, s := range secs {
		if _, err := cw.Write(s); err != nil {
			return 0, err
		}
		if _, err := cw.Write(pad[:align8(len(s))-len(s)]); err != nil {
			return 0, err
		}
	}
	return crc.Sum32(), nil
}

func align8(n int) int { return (n + 7) &^ 7 }

// listFileReader reads a header's fields in order; the first read past
// the header's end sets bad.
type listFileReader struct {
	b   []byte
	at  int
	bad bool
}

func (r *listFileReader) u64() uint64 {
	if r.bad || r.at+8 > len(r.b) {
		r.bad = true
		return 0
	}
	v := binary.NativeEndian.Uint64(r.b[r.at:])
	r.at += 8
	return v
}

func (r *listFileReader) str() string {
	if r.bad || r.at+4 > len(r.b) {
		r.bad = true
		return ""
	}
	n := int(binary.NativeEndian.Uint32(r.b[r.at:]))
	r.at += 4
	if n > len(r.b)-r.at {
		r.bad = true
		return ""
	}
	s := string(r.b[r.at : r.at+n])
	r.at += n
	return s
}

// parseListFile checks a cache file (mapped, or read for a test) against
// key and returns the decodedList whose arrays are data's own bytes: data
// must stay as it is while the list is in use. Every failure wraps
// errListFile and says what did not hold.
func parseListFile(data []byte, key listFileKey) (*decodedList, error) {
	bad := func(what string, args ...any) error {
		return fmt.Errorf("%w: %s", errListFile, fmt.Sprintf(what, args...))
	}
	if len(data) < listFileFixed+16 || string(data[:8]) != listFileMagic {
		return nil, bad("no header")
	}
	if v := binary.NativeEndian.Uint32(data[8:]); v != listFileVersion {
		return nil, bad("version %d, not %d", v, listFileVersion)
	}
	if binary.NativeEndian.Uint32(data[12:]) != listFileOrder {
		return nil, bad("written by a host of another byte order")
	}
	r := &listFileReader{b: data, at: listFileFixed}
	fileLen, headLen := r.u64(), r.u64()
	if fileLen != uint64(len(data)) || headLen > fileLen {
		return nil, bad("%d bytes, its header says %d (truncated?)", len(data), fileLen)
	}
	if binary.NativeEndian.Uint32(data[16:]) != crc32.Checksum(data[20:], crcTable) {
		return nil, bad("checksum mismatch (corrupt)")
	}
	r.b = data[:headLen]
	d := &decodedList{r: &run{}}
	d.keys, d.text, d.mal.n = int(r.u64()), int64(r.u64()), int(r.u64())
	src, size, entries := r.u64(), int64(r.u64()), r.u64()
	store, name := r.str(), r.str()
	d.mal.first = r.str()
	var secs [numSections][]byte
	for i := range secs {
		off, n := r.u64(), r.u64()
		if off%8 != 0 || off < headLen || off > fileLen || n > fileLen-off {
			return nil, bad("section %d out of the file", i)
		}
		secs[i] = data[off : off+n : off+n]
	}
	var objW [format.NumKinds]uint64
	for k := range objW {
		objW[k] = r.u64()
	}
	switch {
	case r.bad:
		return nil, bad("header cut short")
	case store != key.store:
		return nil, bad("of another store")
	case name != key.name || size != key.size:
		return nil, bad("of list %q (%d bytes), not %q (%d bytes)", name, size, key.name, key.size)
	case src > 255 || d.keys < 0 || d.text < 0 || d.mal.n < 0:
		return nil, bad("header out of range")
	}
	d.name, d.src, d.mal.where = name, uint8(src), name
	if d.src == srcJournal {
		return nil, bad("a list of the journal's source")
	}
	if err := d.fill(secs[:], objW); err != nil {
		return nil, bad("%v", err)
	}
	if uint64(d.r.entries()) != entries {
		return nil, bad("%d entries, its header says %d", d.r.entries(), entries)
	}
	return d, nil
}

// fill points d's arrays at the sections and checks every bound a lookup
// indexes by: offsets ascend within their arrays, value ids name values,
// object ids tile objs.
func (d *decodedList) fill(secs [][]byte, objW [format.NumKinds]uint64) error {
	vt := vtab{arena: secs[0]}
	var ok bool
	if vt.off, ok = asSlice[uint32](secs[1]); !ok || len(vt.off) == 0 || !ascending(vt.off, len(vt.arena)) || vt.off[0] != 0 {
		return errors.New("value offsets")
	}
	if vt.hexed, ok = asSlice[uint64](secs[2]); !ok || len(vt.hexed) > (vt.n()+63)/64 {
		return errors.New("hex bits")
	}
	d.vt = vt
	if d.interned, ok = asSlice[uint32](secs[3]); !ok || !slices.IsSorted(d.interned) || len(d.interned) > 0 && int(d.interned[len(d.interned)-1]) >= vt.n() {
		return errors.New("interned ids")
	}
	for k := range d.r.kinds {
		if err := fillKind(&d.r.kinds[k], secs[4+5*k:9+5*k], objW[k], vt.n(), d.src); err != nil {
			return fmt.Errorf("%s: %w", format.Kinds[k], err)
		}
	}
	return nil
}

func fillKind(ks *kindSet, secs [][]byte, objW uint64, nVals int, src uint8) error {
	var ok bool
	ks.objs, ks.srcs = secs[0], secs[4]
	if ks.objOff, ok = asSlice[uint32](secs[1]); !ok {
		return errors.New("object offsets")
	}
	if ks.first, ok = asSlice[uint32](secs[2]); !ok {
		return errors.New("object entries")
	}
	if ks.vals, ok = asSlice[uint32](secs[3]); !ok {
		return errors.New("values")
	}
	if len(ks.objs) == 0 && len(ks.first) == 0 && len(ks.vals) == 0 {
		*ks = kindSet{}
		ks.finish()
		return nil
	}
	n := len(ks.first) - 1
	switch {
	case n < 1 || len(ks.vals) != len(ks.srcs) || ks.first[0] != 0 || !ascending(ks.first, len(ks.vals)) || int(ks.first[n]) != len(ks.vals):
		return errors.New("object entries out of range")
	case ks.objOff == nil && (objW == 0 || objW > format.MaxObjectBytes || uint64(len(ks.objs)) != uint64(n)*objW):
		return errors.New("object ids out of range")
	case ks.objOff != nil && (len(ks.objOff) != n+1 || ks.objOff[0] != 0 || !ascending(ks.objOff, len(ks.objs)) || int(ks.objOff[n]) != len(ks.objs)):
		return errors.New("object offsets out of range")
	}
	ks.objW = int(objW)
	for i := range n {
		if l := len(ks.obj(i)); l == 0 || l > format.MaxObjectBytes || ks.first[i] == ks.first[i+1] {
			return errors.New("an object id out of range, or without entries")
		}
	}
	for _, v := range ks.vals {
		if int(v) >= nVals {
			return errors.New("a value id out of range")
		}
	}
	for _, s := range ks.srcs {
		if s != src {
			return errors.New("an entry of another source")
		}
	}
	ks.finish()
	return nil
}

// ascending reports whether s never goes down and ends at most at limit.
func ascending(s []uint32, limit int) bool {
	for i := 1; i < len(s); i++ {
		if s[i] < s[i-1] {
			return false
		}
	}
	return len(s) == 0 || int(s[len(s)-1]) <= limit
}

// asBytes views s's elements as bytes (the host's order).
func asBytes[T uint32 | uint64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// asSlice views b as a slice of T: b must be aligned for T and a whole
// number of them (false otherwise). Empty is nil.
func asSlice[T uint32 | uint64](b []byte) ([]T, bool) {
	var z T
	size := int(unsafe.Sizeof(z))
	if len(b) == 0 {
		return nil, true
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if len(b)%size != 0 || uintptr(p)%uintptr(size) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(p), len(b)/size), true
}

// sameDecoded reports whether two decoded lists hold the same arrays (a
// test's check that a file read back is what was written).
func sameDecoded(a, b *decodedList) bool {
	sa, sb := sectionsOf(a), sectionsOf(b)
	for i := range sa {
		if !bytes.Equal(sa[i], sb[i]) {
			return false
		}
	}
	return a.keys == b.keys && a.text == b.text && a.mal == b.mal && a.src == b.src && a.name == b.name
}
