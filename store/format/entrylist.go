package format

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Entry lists (spec §13.7, DESIGN §3): one zstd stream of the UTF-8 text
// "oxy-entries 1\n" followed by each entry key once, sorted bytewise
// ascending, each ending in "\n". A list is named "pack-<id>.entries"
// (complete) or "pack-<id>.entries-part" (partial), where <id> is the
// lowercase hex SHA-256 of the uncompressed text.
const (
	EntryListHeader   = "oxy-entries 1"
	EntryListSuffix   = ".entries"
	PartialListSuffix = ".entries-part"
)

// Limits of a decoded entry list. A list is read whole as stored (at most
// MaxEntryListBytes, see ReadCap) and decoded streaming: no reader ever holds
// its decompressed text, only a window and a line.
const (
	// MaxEntryListSize caps the decompressed size of one list, so a
	// decompression bomb is reported as corrupt instead of filling memory
	// or the time of a reader. A frame that declares a larger size is
	// refused before any of it is decoded; one that does not say is
	// refused where it passes the cap.
	MaxEntryListSize int64 = 4 << 30
	// MaxEntryListKeys caps the keys of one list: three times the 10
	// million entries the design sizes a mount for.
	MaxEntryListKeys = 32 << 20
	// MaxEntryListLine caps one line. The longest valid key is under 400
	// bytes; a longer line can only come from a corrupt list, and the cap
	// bounds what a decoder buffers.
	MaxEntryListLine = 4096
	// MaxEntryListWindow caps the zstd window a list may make a decoder
	// allocate, which a frame header declares before any data: 128 MiB
	// (2^27), the most the reference `zstd -d` accepts without --long or
	// --memory (what `zstd --long=27` and `zstd --ultra -22` write). This
	// package writes windows of 8 MiB at most; a decoder that served a
	// larger one is dropped rather than pooled.
	MaxEntryListWindow = 1 << 27
	// pooledWindow is the largest window a pooled decoder keeps.
	pooledWindow = 8 << 20
)

// Decoders and encoders are pooled rather than shared: a stream decoder or
// encoder serves one stream at a time, and a handle reads its live lists
// concurrently. With concurrency 1 both run synchronously, so they start no
// goroutines and an idle one the pool drops needs no Close. A pooled decoder
// keeps the window of its last list (at most 8 MiB: see pooledWindow) until
// the pool drops it. Streaming measured faster than DecodeAll of a whole
// list into one buffer, which misses the cache.
var (
	decoderPool = sync.Pool{New: func() any { return newListDecoder() }}
	encoderPool = sync.Pool{New: func() any {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err) // the options are constants
		}
		return e
	}}
)

func newListDecoder() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(MaxEntryListWindow),
		zstd.WithDecoderMaxMemory(uint64(MaxEntryListSize)))
	if err != nil {
		panic(err) // the options are constants
	}
	return d
}

// getDecoder returns a decoder for a list: from the pool, after a look at
// the first frame's header. A frame that declares more than MaxEntryListSize
// bytes or a window over MaxEntryListWindow is refused here, before anything
// is allocated for it. put returns the decoder to the pool, unless it holds
// a window over pooledWindow.
func getDecoder(data []byte) (dec *zstd.Decoder, put func(), err error) {
	var h zstd.Header
	if err := h.Decode(data); err == nil && !h.Skippable {
		if h.HasFCS && h.FrameContentSize > uint64(MaxEntryListSize) {
			return nil, nil, fmt.Errorf("%w: %w: frame declares %d bytes", ErrCorrupt, errListSize, h.FrameContentSize)
		}
		window := h.WindowSize
		if h.SingleSegment {
			window = h.FrameContentSize // decoded in one piece: the whole frame is its window
		}
		if window > MaxEntryListWindow {
			return nil, nil, fmt.Errorf("%w: frame declares a window of %d bytes, over the cap of %d", ErrCorrupt, window, MaxEntryListWindow)
		}
	}
	big := h.WindowSize > pooledWindow || h.SingleSegment && h.FrameContentSize > pooledWindow
	dec = decoderPool.Get().(*zstd.Decoder)
	return dec, func() {
		dec.Reset(nil)
		if big {
			return // the pool would keep its window
		}
		decoderPool.Put(dec)
	}, nil
}

// EntryListName returns the store key of the list with the given id.
func EntryListName(id string, complete bool) string {
	if complete {
		return PackPrefix + id + EntryListSuffix
	}
	return PackPrefix + id + PartialListSuffix
}

// ParseEntryListName parses an entry list's store key. ok is true only for
// "pack-" + 64 lowercase hex characters + ".entries" or ".entries-part".
func ParseEntryListName(key string) (id string, complete bool, ok bool) {
	rest, found := strings.CutPrefix(key, PackPrefix)
	if !found || len(rest) < 64 {
		return "", false, false
	}
	id, suffix := rest[:64], rest[64:]
	switch suffix {
	case EntryListSuffix:
		complete = true
	case PartialListSuffix:
	default:
		return "", false, false
	}
	if !isHex64(id) {
		return "", false, false
	}
	return id, complete, true
}

// EntryListID returns the id of a list: the lowercase hex SHA-256 of its
// uncompressed text.
func EntryListID(uncompressed []byte) string {
	sum := sha256.Sum256(uncompressed)
	return hex.EncodeToString(sum[:])
}

// EncodeEntryList encodes keys as an entry list and returns its id and
// compressed bytes. It sorts a copy of keys and drops duplicates; it refuses
// any key that fails ParseKey (the error wraps ErrBadKey). No keys make a
// valid list of the header alone.
func EncodeEntryList(keys []string) (id string, data []byte, err error) {
	for _, k := range keys {
		if _, err := ParseKey(k); err != nil {
			return "", nil, fmt.Errorf("encode entry list: %w", err)
		}
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	return encodeEntryList(slices.Compact(sorted))
}

// EncodeEntryListSorted encodes keys that are already sorted, unique and
// valid, without copying or sorting them: a fold of a million keys uses it.
// It checks only what keeps the list readable: keys strictly ascending,
// non-empty and free of "\n" (the error wraps ErrBadKey for the latter).
// Validating keys against ParseKey is the caller's part.
func EncodeEntryListSorted(keys []string) (id string, data []byte, err error) {
	for i, k := range keys {
		if k == "" || strings.IndexByte(k, '\n') >= 0 {
			return "", nil, fmt.Errorf("encode entry list: key %d %q: %w: empty or holds a newline", i, clip(k), ErrBadKey)
		}
		if i > 0 && k <= keys[i-1] {
			return "", nil, fmt.Errorf("encode entry list: key %d %q is not strictly greater than the previous key %q", i, clip(k), clip(keys[i-1]))
		}
	}
	return encodeEntryList(keys)
}

// encodeEntryList streams the text of sorted keys through SHA-256 and one
// zstd stream, so only the compressed list is ever held whole. The frame
// records the text's size, which decoders check.
func encodeEntryList(keys []string) (string, []byte, error) {
	size := int64(len(EntryListHeader) + 1)
	for _, k := range keys {
		size += int64(len(k) + 1)
	}
	enc := encoderPool.Get().(*zstd.Encoder)
	defer encoderPool.Put(enc)
	var out bytes.Buffer
	enc.ResetContentSize(&out, size)
	defer enc.Reset(nil)
	h := sha256.New()
	w := io.MultiWriter(h, enc)

	const flushAt = 64 << 10
	chunk := make([]byte, 0, min(size, flushAt+MaxEntryListLine))
	chunk = append(chunk, EntryListHeader+"\n"...)
	for _, k := range keys {
		chunk = append(chunk, k...)
		chunk = append(chunk, '\n')
		if len(chunk) >= flushAt {
			if _, err := w.Write(chunk); err != nil {
				return "", nil, fmt.Errorf("encode entry list: %w", err)
			}
			chunk = chunk[:0]
		}
	}
	if _, err := w.Write(chunk); err != nil {
		return "", nil, fmt.Errorf("encode entry list: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", nil, fmt.Errorf("encode entry list: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), out.Bytes(), nil
}

// The rules of an entry list's lines.
var (
	errListHeader   = fmt.Errorf("first line is not the header %q", EntryListHeader)
	errListNoHeader = errors.New("no header line")
	errListNoEOL    = errors.New(`last line does not end in "\n"`)
	errListEmpty    = errors.New("empty line")
	errListLong     = fmt.Errorf("line longer than %d bytes", MaxEntryListLine)
	errListOrder    = errors.New("key is not strictly greater than the previous key")
	errListSize     = fmt.Errorf("decompresses to more than %d bytes", MaxEntryListSize)
	errListKeys     = fmt.Errorf("holds more than %d keys", MaxEntryListKeys)
)

// DecodeEntryList decompresses an entry list and calls fn with each of its
// keys in order, streaming: the key slice is valid only during the call, and
// nothing is allocated per key. n is the number of keys passed to fn.
//
// Errors wrap ErrCorrupt, with the line number where there is one, for input
// that is not a zstd stream or is truncated, a stream that decompresses to
// more than MaxEntryListSize, a first line other than EntryListHeader, a last
// line without "\n", an empty line, a line longer than MaxEntryListLine and a
// key not strictly greater than the one before. fn may have seen keys of a
// list that then proves corrupt; the caller drops them. An error from fn
// stops decoding and is returned wrapped. fn may be nil: the list is then
// only checked and its keys counted.
//
// Keys are not checked against ParseKey here: the caller validates each one
// and skips a malformed key with a warning, as DESIGN §3 asks of readers.
func DecodeEntryList(data []byte, fn func(key []byte) error) (n int, err error) {
	s := listScanner{fn: fn}
	err = s.decode(data)
	return s.keys, err
}

// DecodeEntryListSized is DecodeEntryList that also returns the length of
// the decompressed text (what EntryListText serves of the list), counted
// in the same pass. size is 0 on error.
func DecodeEntryListSized(data []byte, fn func(key []byte) error) (n int, size int64, err error) {
	s := listScanner{fn: fn}
	if err := s.decode(data); err != nil {
		return s.keys, 0, err
	}
	return s.keys, s.size, nil
}

// DecodeEntryListHashed is DecodeEntryList that also returns the lowercase
// hex SHA-256 of the decompressed text, so a list is checked against its
// name (ParseEntryListName's id) in the same pass. sum is "" on error.
func DecodeEntryListHashed(data []byte, fn func(key []byte) error) (n int, sum string, err error) {
	s := listScanner{fn: fn, hash: sha256.New()}
	if err := s.decode(data); err != nil {
		return s.keys, "", err
	}
	return s.keys, hex.EncodeToString(s.hash.Sum(nil)), nil
}

// DecodeEntryListAll decodes an entry list into a slice of its keys. The keys
// share one backing string.
func DecodeEntryListAll(data []byte) ([]string, error) {
	var text strings.Builder
	var ends []int
	_, err := DecodeEntryList(data, func(key []byte) error {
		text.Write(key)
		ends = append(ends, text.Len())
		return nil
	})
	if err != nil {
		return nil, err
	}
	all := text.String()
	keys := make([]string, len(ends))
	start := 0
	for i, end := range ends {
		keys[i] = all[start:end]
		start = end
	}
	return keys, nil
}

// VerifyEntryList checks a list against its name: the name parses
// (ParseEntryListName), the list decodes (as DecodeEntryList checks it), and
// the id in the name is the SHA-256 of the uncompressed text. A mismatch or a
// list that does not decode is ErrCorrupt.
func VerifyEntryList(name string, data []byte) error {
	id, _, ok := ParseEntryListName(name)
	if !ok {
		return fmt.Errorf("verify entry list %q: not an entry list name", clip(name))
	}
	s := listScanner{hash: sha256.New()}
	if err := s.decode(data); err != nil {
		return fmt.Errorf("verify entry list %s: %w", name, err)
	}
	if got := hex.EncodeToString(s.hash.Sum(nil)); got != id {
		return fmt.Errorf("verify entry list %s: %w: uncompressed text has SHA-256 %s", name, ErrCorrupt, got)
	}
	return nil
}

// listScanner receives the decompressed text of a list block by block (it is
// the io.Writer of zstd.Decoder.WriteTo, so no block is copied) and checks
// and passes on its lines.
type listScanner struct {
	fn   func(key []byte) error // nil: check only
	hash hash.Hash              // nil: no hash

	limit   int64  // cap on size; 0 means MaxEntryListSize
	maxKeys int    // cap on keys; 0 means MaxEntryListKeys
	size    int64  // bytes decompressed so far
	lines   int    // complete lines so far, the header included
	keys    int    // keys passed to fn
	carry   []byte // the start of a line the last block cut
	prev    []byte // the previous key: a slice of the current block, or buf
	owned   bool   // prev is buf
	buf     []byte // a copy of prev that outlives its block
}

// errFn marks an error of fn, so decode does not take it for a zstd error.
type errFn struct{ err error }

func (e errFn) Error() string { return e.err.Error() }

func (s *listScanner) decode(data []byte) error {
	return s.decodeFrom(data, bytes.NewReader(data))
}

// DecodeEntryListFrom is DecodeEntryListSized reading the list from r as it
// arrives (store.GetStream's body): a list is decoded while the rest of it
// is still being read. Errors are DecodeEntryList's; an error of r's, but
// io.EOF, ends the decode as a truncated list would (the caller, who knows
// the body failed, tells the two apart).
func DecodeEntryListFrom(r io.Reader, fn func(key []byte) error) (n int, size int64, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(zstd.HeaderMaxSize) // the frame's header: what getDecoder checks
	s := listScanner{fn: fn}
	if err := s.decodeFrom(head, br); err != nil {
		return s.keys, 0, err
	}
	return s.keys, s.size, nil
}

// decodeFrom decodes the list r reads; head is its first bytes (at least
// its frame header, if it has one).
func (s *listScanner) decodeFrom(head []byte, r io.Reader) error {
	dec, put, err := getDecoder(head)
	if err != nil {
		return s.finish(err)
	}
	defer put()
	if err := dec.Reset(r); err != nil {
		return fmt.Errorf("decode entry list: %w: zstd: %w", ErrCorrupt, err)
	}
	_, err = dec.WriteTo(s)
	return s.finish(err)
}

// finish turns the error that ended the stream, if any, into decode's error,
// and checks the end of the text.
func (s *listScanner) finish(err error) error {
	var fe errFn
	var le *LineError
	switch {
	case errors.As(err, &fe):
		return fmt.Errorf("decode entry list: line %d: %w", s.lines, fe.err)
	case errors.As(err, &le):
		return fmt.Errorf("decode entry list: %w", le)
	case errors.Is(err, ErrCorrupt):
		return fmt.Errorf("decode entry list: %w", err)
	case errors.Is(err, errListSize), errors.Is(err, errListKeys):
		return fmt.Errorf("decode entry list: %w: %w", ErrCorrupt, err)
	case err != nil:
		return fmt.Errorf("decode entry list: %w: zstd: %w", ErrCorrupt, err)
	case len(s.carry) > 0:
		return fmt.Errorf("decode entry list: %w", lineError(s.lines+1, string(s.carry), errListNoEOL))
	case s.lines == 0:
		return fmt.Errorf("decode entry list: %w", lineError(1, "", errListNoHeader))
	}
	return nil
}

// Write takes one decompressed block.
func (s *listScanner) Write(p []byte) (int, error) {
	n := len(p)
	s.size += int64(n)
	if s.size > cmp.Or(s.limit, MaxEntryListSize) {
		return 0, errListSize
	}
	if s.hash != nil {
		s.hash.Write(p)
	}
	if len(s.carry) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(s.carry)+len(p) > MaxEntryListLine {
				return 0, lineError(s.lines+1, string(s.carry), errListLong)
			}
			s.carry = append(s.carry, p...)
			return n, nil
		}
		s.carry = append(s.carry, p[:i]...)
		if err := s.line(s.carry); err != nil {
			return 0, err
		}
		p = p[i+1:]
	}
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		if err := s.line(p[:i]); err != nil {
			return 0, err
		}
		p = p[i+1:]
	}
	// The block is the decoder's: keep what the next one needs.
	if !s.owned {
		s.buf = append(s.buf[:0], s.prev...)
		s.prev, s.owned = s.buf, true
	}
	if len(p) > MaxEntryListLine {
		return 0, lineError(s.lines+1, string(p), errListLong)
	}
	s.carry = append(s.carry[:0], p...)
	return n, nil
}

// line checks one complete line and passes a key on.
func (s *listScanner) line(l []byte) error {
	s.lines++
	if s.lines == 1 {
		if string(l) != EntryListHeader {
			return lineError(1, string(l), errListHeader)
		}
		return nil
	}
	switch {
	case len(l) == 0:
		return lineError(s.lines, "", errListEmpty)
	case len(l) > MaxEntryListLine:
		return lineError(s.lines, string(l), errListLong)
	case s.lines > 2 && bytes.Compare(l, s.prev) <= 0:
		return lineError(s.lines, string(l), errListOrder)
	}
	if s.keys >= cmp.Or(s.maxKeys, MaxEntryListKeys) {
		return errListKeys
	}
	if s.fn != nil {
		if err := s.fn(l); err != nil {
			return errFn{err}
		}
	}
	s.keys++
	s.prev, s.owned = l, false
	return nil
}
