package index

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/oxyfs/oxyfs/store/format"
)

// Source ids of an entrySet: srcJournal, then one per list read, in the
// order read; lists past the 254th share srcManyLists.
const (
	srcJournal   uint8 = 0
	srcManyLists uint8 = 255
)

const (
	sourceJournal    = "journal"
	sourceTheJournal = "the journal" // in warnings
)

// run is the entries of one source (a list, the journal) or of a merge of
// runs, in key order. Its value ids belong to the builder that made it.
type run struct {
	kinds [format.NumKinds]kindSet
}

func (r *run) entries() int {
	n := 0
	for i := range r.kinds {
		n += r.kinds[i].nEntries()
	}
	return n
}

// builder turns lists and journal lines into one entrySet. It owns the value
// table every run of one load shares: equal values get one id through the
// map (intern), except the attestation ids internOf adds without it, which
// the set compares by their text.
type builder struct {
	vt       vtab
	m        map[string]uint32
	srcNames []string
	mal      []malformed
	texts    map[string]int64 // the text length of each list decoded (.oxy/lists: listTexts)
	keys     int              // keys of the lists decoded so far, with the set's before them (loadLists)
	maxKeys  int              // cap on keys (maxLiveKeys); 0: none
	pins     []*listMap       // mappings the value table or runs are in (listcache.go): the set keeps them
	base     *run             // the run whose table is vt's base (adopt); nil: none
}

// malformed counts the malformed keys one source held.
type malformed struct {
	where string // "pack-<id>.entries", "the journal", "prefix listing of sig/ab/"
	n     int
	first string // the first one, with the rule it broke
}

func (m malformed) String() string {
	s := "s"
	if m.n == 1 {
		s = ""
	}
	return fmt.Sprintf("skipped %d malformed entry key%s in %s (first: %s)", m.n, s, m.where, m.first)
}

func newBuilder() *builder {
	return &builder{vt: newVtab(), m: make(map[string]uint32), srcNames: []string{sourceJournal}}
}

// newBuilderFrom starts from an existing set's value table and sources, for
// a refresh that only adds journal lines to it.
func newBuilderFrom(s *entrySet) *builder {
	return &builder{vt: s.vt.clone(), m: make(map[string]uint32), srcNames: slices.Clone(s.srcNames), pins: slices.Clone(s.pins)}
}

// intern returns the id of a validated value, adding it on first sight.
func (b *builder) intern(v []byte) uint32 {
	if id, ok := b.m[string(v)]; ok { // no allocation for the lookup
		return id
	}
	id := b.vt.add(v)
	b.m[string(v)] = id
	return id
}

// internOf is intern for a value of kind, as a list is decoded. A seal's
// or an acceptance's value is an attestation id, one per object: a digest
// (lower hex of uniqueDigestLen characters or more) of those kinds is
// added without the map, whose string and slot for each such value, never
// looked up again, cost most of a 10M open's build (checked as hex and
// packed in one pass: vtab.addHex). Equal values may so have several ids
// (two lists naming one); the set compares values by their text (cmpIDs),
// as it does for a refresh's journal values, and a journal line's is
// found in the list that holds it (internJournal). Signers, runners and
// certificate ids (which may be hex fingerprints, shared by many entries)
// are interned.
func (b *builder) internOf(kind format.Kind, v []byte) uint32 {
	if (kind == format.KindSeal || kind == format.KindAccepted) && len(v) >= uniqueDigestLen {
		if id, ok := b.vt.addHex(v); ok {
			return id
		}
	}
	return b.intern(v)
}

// uniqueDigestLen is the shortest value internOf takes for a digest: 40
// hex characters (a SHA-1; sha256 is 64).
const uniqueDigestLen = 40

// internString is intern of a piece of a journal line: a new value is
// copied, so the table keeps no line alive.
func (b *builder) internString(v string) uint32 {
	if id, ok := b.m[v]; ok {
		return id
	}
	id := b.vt.add([]byte(v))
	b.m[strings.Clone(v)] = id
	return id
}

// internJournal is internString of a journal line's value of kind on
// object ob: an attestation id the base list holds on the same object
// (a folded line's) takes the list's id, so it is held once, as a
// signer is through the map.
func (b *builder) internJournal(kind format.Kind, ob []byte, v string) uint32 {
	if b.base != nil && (kind == format.KindSeal || kind == format.KindAccepted) && len(v) >= uniqueDigestLen {
		k := &b.base.kinds[kind]
		if i, ok := k.findObj(ob); ok {
			if j, ok := k.findVal(b.vt.base, i, v); ok {
				return k.vals[j]
			}
		}
	}
	return b.internString(v)
}

// addSource names a new source and returns its id.
func (b *builder) addSource(name string) uint8 {
	if len(b.srcNames) >= int(srcManyLists) {
		if len(b.srcNames) == int(srcManyLists) {
			b.srcNames = append(b.srcNames, "list (one of several partial lists)")
		}
		return srcManyLists
	}
	b.srcNames = append(b.srcNames, name)
	return uint8(len(b.srcNames) - 1)
}

var errUnsorted = errors.New("keys of a kind are not in key order")

// decodeList decodes one list (decodeEntryList, within b's cap on keys)
// and adopts it into b.
func (b *builder) decodeList(src uint8, name string, body io.Reader) (*run, error) {
	d, err := decodeEntryList(src, name, body, b.keys, b.maxKeys)
	if err != nil {
		return nil, err
	}
	b.keys += d.keys
	return b.adopt(d, src), nil
}

// adopt takes a decoded list into b: its run in b's value ids, of source
// src. Into a builder that holds no value yet, the list's table becomes
// the base of b's (shared, not copied: vtab.base) and its arrays are the
// run's as they are; otherwise its values are interned into b's table
// and its run's value ids rewritten (a copy: d is never written).
func (b *builder) adopt(d *decodedList, src uint8) *run {
	if d.mal.n > 0 {
		b.mal = append(b.mal, d.mal)
	}
	if b.texts == nil {
		b.texts = make(map[string]int64)
	}
	b.texts[d.name] = d.text
	if d.pin != nil {
		b.pins = append(b.pins, d.pin)
	}
	r := d.r
	if b.vt.n() == 0 {
		base := d.vt // its own: the set keeps the table, not d (nor d's run, which a merge copies)
		b.vt, b.base = onBase(&base), d.r
		for _, id := range d.interned {
			b.m[d.vt.str(id)] = id
		}
	} else {
		r = b.remap(d)
	}
	if src != d.src {
		r = withSource(r, src)
	}
	return r
}

// remap returns d's run with its value ids in b's table.
func (b *builder) remap(d *decodedList) *run {
	ids := make([]uint32, d.vt.n())
	for i := range ids {
		ids[i] = noID
	}
	var buf [2 * format.MaxValueLen]byte
	out := &run{kinds: d.r.kinds}
	for k := range out.kinds {
		from, to := &d.r.kinds[k], &out.kinds[k]
		to.vals = make([]uint32, len(from.vals))
		for i, v := range from.vals {
			if ids[v] == noID {
				ids[v] = b.internOf(format.Kind(k), d.vt.appendTo(buf[:0], v))
			}
			to.vals[i] = ids[v]
		}
	}
	return out
}

// noID marks a value remap has not met yet.
const noID = ^uint32(0)

// withSource returns r with every entry's source src (new srcs arrays).
func withSource(r *run, src uint8) *run {
	out := &run{kinds: r.kinds}
	for k := range out.kinds {
		srcs := make([]uint8, len(r.kinds[k].srcs))
		for i := range srcs {
			srcs[i] = src
		}
		out.kinds[k].srcs = srcs
	}
	return out
}

// mergeRuns merges runs into one, smallest first so a big complete list is
// copied once. An entry in several runs is kept once, with the source of
// the first list that holds it (a list rather than the journal).
func (b *builder) mergeRuns(runs []*run) *run {
	if len(runs) == 0 {
		return &run{}
	}
	slices.SortStableFunc(runs, func(x, y *run) int { return x.entries() - y.entries() })
	acc := runs[0]
	for _, r := range runs[1:] {
		if acc.entries() == 0 {
			acc = r // nothing to merge: the run as it is, not a copy
			continue
		}
		acc = b.merge(acc, r)
	}
	return acc
}

// merge merges two runs whose value ids are both in b.vt.
func (b *builder) merge(x, y *run) *run {
	out := &run{}
	for k := range out.kinds {
		mergeKind(&out.kinds[k], &x.kinds[k], &y.kinds[k], &b.vt)
	}
	return out
}

func mergeKind(out, x, y *kindSet, vt *vtab) {
	nx, ny := x.nObj(), y.nObj()
	out.objs = make([]byte, 0, len(x.objs)+len(y.objs))
	out.first = make([]uint32, 0, nx+ny+1)
	out.vals = make([]uint32, 0, len(x.vals)+len(y.vals))
	out.srcs = make([]uint8, 0, len(x.vals)+len(y.vals))
	copyObj := func(s *kindSet, i int) {
		out.addObj(s.obj(i))
		for j := s.first[i]; j < s.first[i+1]; j++ {
			out.vals = append(out.vals, s.vals[j])
			out.srcs = append(out.srcs, s.srcs[j])
		}
		out.first[out.nObj()] = uint32(len(out.vals))
	}
	i, j := 0, 0
	for i < nx || j < ny {
		c := 0
		switch {
		case i == nx:
			c = 1
		case j == ny:
			c = -1
		default:
			c = bytes.Compare(x.obj(i), y.obj(j))
		}
		if c < 0 {
			copyObj(x, i)
			i++
			continue
		}
		if c > 0 {
			copyObj(y, j)
			j++
			continue
		}
		out.addObj(x.obj(i))
		p, pe := x.first[i], x.first[i+1]
		q, qe := y.first[j], y.first[j+1]
		for p < pe || q < qe {
			d := 0
			switch {
			case p == pe:
				d = 1
			case q == qe:
				d = -1
			default:
				d = vt.cmpIDs(x.vals[p], y.vals[q])
			}
			switch {
			case d < 0:
				out.vals, out.srcs = append(out.vals, x.vals[p]), append(out.srcs, x.srcs[p])
				p++
			case d > 0:
				out.vals, out.srcs = append(out.vals, y.vals[q]), append(out.srcs, y.srcs[q])
				q++
			default:
				src := x.srcs[p]
				if src == srcJournal {
					src = y.srcs[q]
				}
				out.vals, out.srcs = append(out.vals, x.vals[p]), append(out.srcs, src)
				p++
				q++
			}
		}
		out.first[out.nObj()] = uint32(len(out.vals))
		i++
		j++
	}
}

// set finishes a run into the immutable entrySet.
func (b *builder) set(r *run) *entrySet {
	s := &entrySet{kinds: r.kinds, vt: b.vt, srcNames: b.srcNames, pins: b.pins}
	s.finish()
	return s
}

// runOf views a finished set's entries as a run (sharing its arrays).
func runOf(s *entrySet) *run { return &run{kinds: s.kinds} }
