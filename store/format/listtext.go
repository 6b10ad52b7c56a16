package format

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// EntryListText serves the decompressed text of one entry list at any
// offset while holding its compressed bytes, one decoder and a bounded
// decoded window (see listseek.go): the text is cut in blocks of
// ListTextBlock bytes, and each block the stream passes is kept compressed
// on its own (a checkpoint), so a read before the stream's position
// decodes that one block, not the text from its start. Decoded blocks are
// kept in a window of ListTextWindow blocks, drawn from one pool of
// ListTextPool blocks for every text of the process. Memory is the
// compressed list, its checkpoints (at most the list's size plus
// ListTextBlock×16), a window and the decoder's (MaxEntryListWindow at
// most), never the text. The text ends at MaxEntryListSize: a read past it
// fails with ErrCorrupt, as does a stream that does not decode. The bytes
// are the stream's as they come: lines are not checked (DecodeEntryList
// does that).
//
// Methods are safe for concurrent use. Close returns the decoder and the
// window.
type EntryListText struct {
	mu    sync.Mutex
	data  []byte
	limit int64 // MaxEntryListSize, lower in tests
	exact int64 // the text's length as measured before (NewEntryListTextOfSize); -1: not known
	dec   *zstd.Decoder
	put   func()
	pos   int64 // offset of the decoder in the text; -1: not started
	err   error // what ended the stream at pos (io.EOF at its end)
	seek  seekState
}

// NewEntryListText returns a reader of the text of the list data. A frame
// header that declares a size over MaxEntryListSize or a window over
// MaxEntryListWindow is refused here.
func NewEntryListText(data []byte) (*EntryListText, error) {
	dec, put, err := getDecoder(data)
	if err != nil {
		return nil, fmt.Errorf("decode entry list: %w", err)
	}
	return &EntryListText{data: data, dec: dec, put: put, pos: -1, exact: -1}, nil
}

// NewEntryListTextOfSize is NewEntryListText for a list whose text was
// measured before at size bytes (EntryListTextSize, DecodeEntryListSized):
// it serves exactly that many. A text that proves longer or shorter (the
// key now holds other bytes than the ones measured) fails the read that
// finds it with ErrCorrupt, so a reader never gets more or fewer bytes than
// the size it was told without an error.
func NewEntryListTextOfSize(data []byte, size int64) (*EntryListText, error) {
	t, err := NewEntryListText(data)
	if err == nil {
		t.exact = max(size, 0)
	}
	return t, err
}

// EntryListTextSize decodes the list data once, keeping nothing, and
// returns the length of its text: how many bytes EntryListText serves.
// Errors are EntryListText's (a stream that does not decode, a text over
// MaxEntryListSize).
func EntryListTextSize(data []byte) (int64, error) {
	t, err := NewEntryListText(data)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	return t.size()
}

// size decodes the text to its end and returns its length.
func (t *EntryListText) size() (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.dec.Reset(bytes.NewReader(t.data)); err != nil {
		return 0, t.corrupt(err)
	}
	t.pos, t.err = 0, nil
	for t.err == nil {
		t.advance(nil, math.MaxInt64-t.pos)
	}
	if !exactly(t.err, io.EOF) {
		return 0, t.err
	}
	return t.pos, nil
}

// ReadAt reads len(p) bytes of the text at off; n < len(p) only at the end
// of the text (err io.EOF) or on an error. It reads block by block
// (block, listseek.go).
func (t *EntryListText) ReadAt(p []byte, off int64) (n int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dec == nil {
		return 0, errors.New("entry list text: read after Close")
	}
	if off < 0 {
		return 0, fmt.Errorf("entry list text: negative offset %d", off)
	}
	for n < len(p) {
		k, in := off/ListTextBlock, int(off%ListTextBlock)
		b, err := t.block(k)
		if in < len(b) {
			c := copy(p[n:], b[in:])
			n += c
			off += int64(c)
			if n == len(p) {
				break
			}
		}
		switch {
		case err != nil:
			return n, err
		case len(b) < ListTextBlock:
			return n, io.EOF
		}
	}
	return n, nil
}

// advance moves the decoder n bytes on, into p (nil: dropped), and returns
// how many it moved; at the end of the stream, the cap or an error it sets
// t.err.
func (t *EntryListText) advance(p []byte, n int64) int {
	limit := cmp.Or(t.limit, MaxEntryListSize)
	if t.exact >= 0 {
		limit = t.exact
	}
	over := false
	if t.pos+n > limit {
		n, over = limit-t.pos, true
	}
	var got int64
	var err error
	if p == nil {
		got, err = io.CopyN(io.Discard, t.dec, n)
	} else {
		var m int
		m, err = io.ReadFull(t.dec, p[:n])
		got = int64(m)
		if exactly(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
	}
	t.pos += got
	switch {
	case exactly(err, io.EOF) && t.exact >= 0 && t.pos < t.exact:
		t.err = fmt.Errorf("decode entry list: %w: the text ends at %d bytes, not the %d measured before", ErrCorrupt, t.pos, t.exact)
	case exactly(err, io.EOF):
		t.err = io.EOF
	case err != nil:
		t.err = t.corrupt(err)
	case over:
		t.err = t.endAtCap()
	}
	return int(got)
}

func (t *EntryListText) corrupt(err error) error {
	return fmt.Errorf("decode entry list: %w: zstd: %w", ErrCorrupt, err)
}

// Close gives the decoder back. Reads after Close fail.
func (t *EntryListText) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dec != nil {
		t.put()
		t.dec, t.data = nil, nil
		t.dropWindow()
	}
}

// endAtCap is the end of a text read to its cap: one byte more tells a
// text that ends here (io.EOF) from one that goes on (corrupt: longer than
// measured, or than any list may be).
func (t *EntryListText) endAtCap() error {
	var one [1]byte
	switch m, _ := io.ReadFull(t.dec, one[:]); {
	case m == 0:
		return io.EOF
	case t.exact >= 0:
		return fmt.Errorf("decode entry list: %w: the text is longer than the %d bytes measured before", ErrCorrupt, t.exact)
	}
	return fmt.Errorf("decode entry list: %w: %w", ErrCorrupt, errListSize)
}
