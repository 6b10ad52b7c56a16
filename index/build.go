package index

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"

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

// decodedList is one entry list decoded on its own: its entries in the ids
// of a value table of its own, as decodeEntryList made them or the list
// cache mapped them (listcache.go). It is never written after it is made:
// the set an open builds may share its arrays (builder.adopt), and the
// cache writes it to disk beside.
type decodedList struct {
	name     string
	src      uint8     // the source id its srcs hold
	r        *run      // trimmed (kindSet.finish)
	vt       vtab      // its values; no base
	interned []uint32  // ids of vt the map gave (signers, runners, certificate ids), ascending
	keys     int       // keys of the list, malformed ones included
	text     int64     // the length of its text (.oxy/lists: listTexts)
	mal      malformed // n == 0: none
	pin      *listMap  // the mapping its arrays are in; nil: the heap
}

// listDecode is one decodeEntryList: the decoder goroutine (split) hands
// chunks of split keys to the builder (build) over chunks.
type listDecode struct {
	b        *builder // the list's own: its value table and map
	r        *run
	src      uint8
	name     string
	textSize int64 // declared by the zstd frame (0: unknown)
	keys     int   // keys the decoder met (set before decErr is sent)
	keys0    int   // keys held before this list (maxKeys counts them)
	maxKeys  int   // 0: no cap
	text     int64 // set before decErr is sent
	mal      malformed
	chunks   chan *keyChunk
	free     chan *keyChunk
	stop     chan struct{}
	decErr   chan error
	buildErr error
}

// decodeEntryList decodes one entry list, read from body as it arrives (or
// from memory: bytes.NewReader), into a decodedList of source src with a
// value table of its own. keys is how many keys the lists before it held,
// which count with its own against maxKeys (0: no cap). A malformed key is
// skipped and counted; a list that does not decode is an error wrapping
// format.ErrCorrupt.
//
// Decompression and building run in two goroutines: the decoder splits
// each key (format.SplitKey) and copies its kind, packed object id and value
// into chunks of about chunkBytes, which it hands over, so on two cores the
// zstd work and the splitting run beside the build.
func decodeEntryList(src uint8, name string, body io.Reader, keys, maxKeys int) (*decodedList, error) {
	br := bufio.NewReaderSize(body, 64<<10)
	d := &listDecode{b: newBuilder(), r: &run{}, src: src, name: name, textSize: declaredSize(br),
		keys0: keys, maxKeys: maxKeys, mal: malformed{where: name},
		chunks: make(chan *keyChunk, 4), free: make(chan *keyChunk, 6), stop: make(chan struct{}), decErr: make(chan error, 1)}
	go d.split(br)
	for c := range d.chunks {
		d.build(c)
	}
	err := <-d.decErr
	if d.buildErr != nil {
		err = d.buildErr
	}
	if err != nil {
		return nil, fmt.Errorf("read entry list %q: %w", name, err)
	}
	return d.result(), nil
}

// split decodes the list's text and splits its keys into chunks (the
// decoder goroutine).
func (d *listDecode) split(body io.Reader) {
	var objBuf [format.MaxObjectBytes]byte
	cur := newKeyChunk()
	at := int64(len(format.EntryListHeader) + 1) // the text's offset of the next key
	_, text, err := format.DecodeEntryListFrom(body, func(key []byte) error {
		if len(cur.ends) == 0 {
			cur.at = at
		}
		at += int64(len(key)) + 1
		if d.keys++; d.maxKeys > 0 && d.keys0+d.keys > d.maxKeys {
			return fmt.Errorf("%w: more than %d", errLiveKeys, d.maxKeys)
		}
		if kind, ob, val, ok := format.SplitKey(key, &objBuf); ok {
			cur.buf = append(append(append(cur.buf, byte(kind), byte(len(ob))), ob...), val...)
		} else {
			cur.buf = append(append(cur.buf, malformedKey), key...)
		}
		cur.ends = append(cur.ends, uint32(len(cur.buf)))
		if len(cur.buf) < chunkBytes {
			return nil
		}
		var ok bool
		if cur, ok = d.handOver(cur); !ok {
			return errStopped
		}
		return nil
	})
	if err == nil && len(cur.ends) > 0 {
		d.chunks <- cur
	}
	d.text = text
	close(d.chunks)
	d.decErr <- err
}

// handOver sends a full chunk to the builder and returns an empty one (a
// freed one when there is); false: the builder stopped.
func (d *listDecode) handOver(c *keyChunk) (*keyChunk, bool) {
	select {
	case d.chunks <- c:
	case <-d.stop:
		return nil, false
	}
	select {
	case c = <-d.free:
		c.buf, c.ends = c.buf[:0], c.ends[:0]
		return c, true
	default:
		return newKeyChunk(), true
	}
}

// build adds a chunk's keys to the run (the caller's goroutine). Keys out
// of order stop the decoder.
func (d *listDecode) build(c *keyChunk) {
	defer func() {
		select {
		case d.free <- c:
		default:
		}
	}()
	start := uint32(0)
	for _, end := range c.ends {
		rec := c.buf[start:end]
		start = end
		if d.buildErr != nil {
			return
		}
		if rec[0] == malformedKey {
			d.mal.add(rec[1:])
			continue
		}
		kind, ob := format.Kind(rec[0]), rec[2:2+rec[1]]
		val := rec[2+rec[1]:]
		k := &d.r.kinds[kind]
		if kind == lastKind && k.nObj() == 0 && d.textSize > c.at {
			// The rest of the list is this kind's: size its arrays
			// for it (the set trims them), rather than grow them.
			line := len(kind.Prefix()) + 2*len(ob) + 2 + len(val) + 1 // "sig/" hh "/" rest "/" value "\n"
			k.reserve(int((d.textSize-c.at)/int64(line)), len(ob))
		}
		if !k.add(ob, d.b.internOf(kind, val), d.src) {
			key := append(format.AppendObjectPrefix(nil, kind, ob), val...)
			d.buildErr = fmt.Errorf("%w: %w at %q", format.ErrCorrupt, errUnsorted, key)
			close(d.stop)
		}
	}
}

// result trims what the decode built into a decodedList.
func (d *listDecode) result() *decodedList {
	for k := range d.r.kinds {
		d.r.kinds[k].finish()
	}
	d.b.vt.compact()
	out := &decodedList{name: d.name, src: d.src, r: d.r, vt: d.b.vt, keys: d.keys, text: d.text, mal: d.mal}
	out.interned = make([]uint32, 0, len(d.b.m))
	for _, id := range d.b.m {
		out.interned = append(out.interned, id)
	}
	slices.Sort(out.interned)
	return out
}

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

// chunkBytes is the size of the chunks of keys decodeList hands over.
const chunkBytes = 256 << 10

// keyChunk is a run of split keys, back to back; ends[i] ends key i: its
// kind, the length of its packed object id, the id, then its value; or
// malformedKey and the key as it came.
type keyChunk struct {
	buf  []byte
	ends []uint32
	at   int64 // the offset in the list's text of its first key
}

// newKeyChunk returns a chunk sized for chunkBytes of keys of about 80
// bytes, so it is allocated once rather than grown.
func newKeyChunk() *keyChunk {
	return &keyChunk{buf: make([]byte, 0, chunkBytes+2*format.MaxEntryListLine), ends: make([]uint32, 0, chunkBytes/64)}
}

// lastKind is the kind whose keys sort last: in a list, every key after
// its first is its.
var lastKind = func() format.Kind {
	last := format.Kinds[0]
	for _, k := range format.Kinds {
		if k.Prefix() > last.Prefix() {
			last = k
		}
	}
	return last
}()

// declaredSize is the size of the text a list's zstd frame declares, from
// its header (0: none, or not a frame: the decode will say).
func declaredSize(br *bufio.Reader) int64 {
	head, _ := br.Peek(zstd.HeaderMaxSize)
	var h zstd.Header
	if h.Decode(head) != nil || !h.HasFCS || h.FrameContentSize > uint64(format.MaxEntryListSize) {
		return 0
	}
	return int64(h.FrameContentSize)
}

// malformedKey marks a key of a keyChunk that SplitKey refused.
const malformedKey = 0xff

var errStopped = errors.New("stopped")

func (m *malformed) add(key []byte) {
	m.n++
	if m.n == 1 {
		_, err := format.ParseKey(string(key))
		if err == nil {
			err = errors.New("malformed")
		}
		m.first = err.Error()
	}
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
