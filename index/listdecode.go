package index

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store/format"
)

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

// listDecode is one decodeEntryList, three stages over chunks of keys, each
// on a goroutine of its own, which hand each chunk on in order:
//
//   - scan (the decoder): zstd decompresses the text, format checks its
//     lines, and each key is copied as it is into a chunk (keyChunk.text);
//   - split: each key of a chunk is split (format.SplitKey) into its kind,
//     packed object id and value (keyChunk.buf);
//   - build (the caller's goroutine): the split keys are added to the run.
//
// Each stage takes about a third of the decode's CPU (BenchmarkBuildSet's
// profile): with the split in the decoder's goroutine, as it was, that one
// did two thirds, and bounded the decode on two cores while the build's
// waited. A chunk goes back to chunkPool once built, for the next chunk or
// the next list. A failure stops every stage: the build's closes stop, and
// scan's ends the text.
type listDecode struct {
	b        *builder // the list's own: its value table and map
	r        *run
	src      uint8
	name     string
	textSize int64     // declared by the zstd frame (0: unknown)
	keys     int       // keys the decoder met (set before decErr is sent)
	keys0    int       // keys held before this list (maxKeys counts them)
	maxKeys  int       // 0: no cap
	text     int64     // set before decErr is sent
	mal      malformed // split's until chunks is closed
	sizer    lastKindSizer
	kind     int            // the kind of the last key built; -1: none
	sized    bool           // Options.BuildWorkers > 1: every kind sized (kindSizer) and prefaulted (pf)
	ksizer   kindSizer      // of the kind being built, if not lastKind (sized only)
	pf       *prefaulter    // sized only
	raw      chan *keyChunk // scan → split
	chunks   chan *keyChunk // split → build
	stop     chan struct{}  // closed by build on a failure
	decErr   chan error
	buildErr error
}

// decodeEntryList decodes one entry list, read from body as it arrives (or
// from memory: bytes.NewReader), into a decodedList of source src with a
// value table of its own. keys is how many keys the lists before it held,
// which count with its own against maxKeys (0: no cap). A malformed key is
// skipped and counted; a list that does not decode is an error wrapping
// format.ErrCorrupt. The decode runs in three goroutines (listDecode).
func decodeEntryList(src uint8, name string, body io.Reader, keys, maxKeys int) (*decodedList, error) {
	return decodeEntryListWith(src, name, body, keys, maxKeys, 0)
}

// decodeEntryListWith is decodeEntryList with Options.BuildWorkers: over 1,
// every kind's arrays and the value table are sized from samples of the
// list's keys (kindSizer, lastKindSizer) and their pages faulted in ahead
// of the build by one more goroutine (prefaulter), stopped and waited for
// before it returns. The list decoded is the same.
func decodeEntryListWith(src uint8, name string, body io.Reader, keys, maxKeys, workers int) (*decodedList, error) {
	br := bufio.NewReaderSize(body, 64<<10)
	d := &listDecode{b: newBuilder(), r: &run{}, src: src, name: name, textSize: declaredSize(br),
		keys0: keys, maxKeys: maxKeys, mal: malformed{where: name}, sizer: lastKindSizer{start: -1}, kind: -1,
		raw: make(chan *keyChunk, 1), chunks: make(chan *keyChunk, 1),
		stop: make(chan struct{}), decErr: make(chan error, 1)}
	if workers > 1 {
		d.sized, d.ksizer.done = true, true
		d.pf = startPrefaulter()
		defer d.pf.close()
	}
	go d.scan(br)
	go d.split()
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

// scan decodes the list's text and copies its keys into chunks (the
// decoder's goroutine).
func (d *listDecode) scan(body io.Reader) {
	cur := getKeyChunk()
	at := int64(len(format.EntryListHeader) + 1) // the text's offset of the next key
	_, text, err := format.DecodeEntryListFrom(body, func(key []byte) error {
		if len(cur.keyEnds) == 0 {
			cur.at = at
		}
		at += int64(len(key)) + 1
		cur.end = at
		if d.keys++; d.maxKeys > 0 && d.keys0+d.keys > d.maxKeys {
			return fmt.Errorf("%w: more than %d", errLiveKeys, d.maxKeys)
		}
		cur.text = append(cur.text, key...)
		cur.keyEnds = append(cur.keyEnds, uint32(len(cur.text)))
		if len(cur.text) < chunkBytes {
			return nil
		}
		var ok bool
		if cur, ok = d.handOver(cur); !ok {
			return errStopped
		}
		return nil
	})
	switch {
	case cur == nil: // stopped in handOver
	case err == nil && len(cur.keyEnds) > 0:
		select {
		case d.raw <- cur:
		case <-d.stop:
			chunkPool.Put(cur)
		}
	default:
		chunkPool.Put(cur)
	}
	d.text = text
	close(d.raw)
	d.decErr <- err
}

// handOver sends a full chunk to split and returns an empty one; false:
// the build stopped.
func (d *listDecode) handOver(c *keyChunk) (*keyChunk, bool) {
	select {
	case d.raw <- c:
		return getKeyChunk(), true
	case <-d.stop:
		chunkPool.Put(c)
		return nil, false
	}
}

// split splits the keys of each chunk scan hands over, in place, and
// hands the chunk to build; it counts the malformed keys (d.mal) and
// drops them. Once the build stopped it only drains what scan still sends.
//
// A key split is shorter than the key (its kind's prefix and three '/'
// become two bytes, its object id's hex half the bytes), so key i's record
// is written where keys before it lay, never past where key i ends: the
// text is split as it is read, with no second buffer.
func (d *listDecode) split() {
	defer close(d.chunks)
	var objBuf [format.MaxObjectBytes]byte
	stopped := false
	for c := range d.raw {
		if stopped {
			chunkPool.Put(c)
			continue
		}
		start, w := uint32(0), 0
		ends := c.keyEnds[:0] // rewritten in place: record i ends before key i did
		c.lastAt = -1
		for i, end := range c.keyEnds {
			key := c.text[start:end]
			if kind, ob, val, ok := format.SplitKey(key, &objBuf); ok {
				if kind == lastKind && c.lastAt < 0 {
					c.lastAt = c.at + int64(start) + int64(i) // the keys before it and their "\n"
				}
				rec := c.text[w:end]
				rec[0], rec[1] = byte(kind), byte(len(ob))
				n := 2 + copy(rec[2:], ob)
				n += copy(rec[n:], val) // val lies at or after rec[n:]: copy is a memmove
				w += n
				ends = append(ends, uint32(w))
			} else {
				d.mal.add(key)
			}
			start = end
		}
		c.text, c.keyEnds = c.text[:w], ends
		select {
		case d.chunks <- c:
		case <-d.stop:
			chunkPool.Put(c)
			stopped = true
		}
	}
}

// build adds a chunk's keys to the run (the caller's goroutine). Keys out
// of order stop the decode.
func (d *listDecode) build(c *keyChunk) {
	defer chunkPool.Put(c)
	start := uint32(0)
	for _, end := range c.keyEnds {
		rec := c.text[start:end]
		start = end
		if d.buildErr != nil {
			return
		}
		kind, ob := format.Kind(rec[0]), rec[2:2+rec[1]]
		val := rec[2+rec[1]:]
		k := &d.r.kinds[kind]
		if int(kind) != d.kind {
			d.kindStarts(kind, c, len(ob), len(val))
		}
		if d.sized && !d.ksizer.done {
			d.ksizer.key(len(kind.Prefix()) + 2*len(ob) + 3 + len(val)) // "<kind>/" hh "/" rest "/" value "\n"
		}
		if !k.add(ob, d.b.internOf(kind, val), d.src) {
			key := append(format.AppendObjectPrefix(nil, kind, ob), val...)
			d.buildErr = fmt.Errorf("%w: %w at %q", format.ErrCorrupt, errUnsorted, termsafe.Value(string(key)))
			close(d.stop)
		}
	}
	if d.kind == int(lastKind) {
		d.sizer.chunkEnd(&d.r.kinds[lastKind], d.textSize, c.end)
	} else if d.sized && d.kind >= 0 {
		d.ksizer.chunkEnd(&d.r.kinds[d.kind], &d.b.vt, d.textSize, c.end)
	}
	if d.sized && d.kind >= 0 && d.r.kinds[d.kind].sized { // not a sample's reservation, which the rest's replaces
		d.pf.kind(&d.r.kinds[d.kind])
		d.pf.table(&d.b.vt)
	}
}

// kindStarts is the first key of kind (a list's keys come kind by kind,
// in the order of their prefixes): the kind before it is complete, and
// trimmed now, while the decoder still works, rather than at the end; the
// last kind's arrays are sized for the rest of the list (lastKindSizer).
func (d *listDecode) kindStarts(kind format.Kind, c *keyChunk, obLen, valLen int) {
	if d.kind >= 0 {
		d.r.kinds[d.kind].finish()
	}
	d.kind = int(kind)
	if d.sized {
		d.ksizer.begin(&d.b.vt)
		d.ksizer.done = kind == lastKind // lastKindSizer's
	}
	if kind == lastKind {
		d.b.vt.trimLeavingRoom()
	}
	if kind == lastKind && c.lastAt >= 0 {
		line := len(kind.Prefix()) + 2*obLen + 2 + valLen + 1 // "sig/" hh "/" rest "/" value "\n"
		d.sizer.begin(&d.r.kinds[kind], d.textSize, c.lastAt, line, obLen)
	}
}

// result trims what the decode built into a decodedList.
func (d *listDecode) result() *decodedList {
	for k := range d.r.kinds {
		d.r.kinds[k].finish()
	}
	d.b.vt.trimDecoded()
	out := &decodedList{name: d.name, src: d.src, r: d.r, vt: d.b.vt, keys: d.keys, text: d.text, mal: d.mal}
	out.interned = make([]uint32, 0, len(d.b.m))
	for _, id := range d.b.m {
		out.interned = append(out.interned, id)
	}
	slices.Sort(out.interned)
	return out
}

// chunkBytes is the size of the chunks of keys decodeList hands over.
const chunkBytes = 256 << 10

// keyChunk is a run of keys, back to back in text, keyEnds[i] ending key
// i: as the list has them (scan's), then split in place (split's): its
// kind, the length of its packed object id, the id, then its value.
type keyChunk struct {
	text    []byte
	keyEnds []uint32
	at      int64 // the offset in the list's text of its first key
	end     int64 // the offset after its last key's "\n"
	lastAt  int64 // the offset of its first key of lastKind; -1: none (split's)
}

// chunkPool holds the chunks of the decodes: a list's decode takes at
// most five at once (one in each stage and each channel), and the next
// list's decode takes them again.
var chunkPool = sync.Pool{New: func() any { return newKeyChunk() }}

// getKeyChunk returns an empty chunk from chunkPool.
func getKeyChunk() *keyChunk {
	c := chunkPool.Get().(*keyChunk)
	c.text, c.keyEnds = c.text[:0], c.keyEnds[:0]
	return c
}

// newKeyChunk returns a chunk sized for chunkBytes of keys of about 64
// bytes or more, so it is allocated once rather than grown.
func newKeyChunk() *keyChunk {
	return &keyChunk{text: make([]byte, 0, chunkBytes+format.MaxEntryListLine), keyEnds: make([]uint32, 0, chunkBytes/64)}
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
