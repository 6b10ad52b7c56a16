package format

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// An entry list's text read at any offset (EntryListText.ReadAt): blocks,
// checkpoints and a window from a shared pool, so a reader going backward
// (less scrolling up) decodes one block per block it reads, not the text
// from its start each time.
const (
	// ListTextBlock is the span of text of one checkpoint and of one
	// decoded block of a window.
	ListTextBlock = 1 << 20
	// ListTextWindow is the most decoded blocks one text keeps.
	ListTextWindow = 8
	// ListTextPool is the most decoded blocks all texts of the process
	// keep together (64 MiB).
	ListTextPool = 64
	// listCheckpointSlack is what checkpoints may take beyond the size of
	// the compressed list (blocks that compress less on their own than in
	// the list's stream).
	listCheckpointSlack = 16 * ListTextBlock
)

// ListTextHeld is the most an EntryListText of a list of n compressed bytes
// holds beside its window: the list and its checkpoints.
func ListTextHeld(n int64) int64 { return 2*n + listCheckpointSlack }

// listTextStreamed counts the bytes of text every EntryListText decoded
// from its list's stream (ListTextStreamed).
var listTextStreamed atomic.Int64

// ListTextStreamed returns how many bytes of text the EntryListTexts of the
// process decoded from their lists' streams (not from checkpoints): a
// reader going through a text once, in any order, decodes each byte once.
func ListTextStreamed() int64 { return listTextStreamed.Load() }

// textPool counts the decoded blocks every text keeps (ListTextPool).
var textPool struct {
	mu   sync.Mutex
	held int
}

// Checkpoints are compressed and decompressed with one encoder and one
// decoder of the process, made on first use (EncodeAll and DecodeAll may be
// called concurrently).
var (
	ckptOnce sync.Once
	ckptEnc  *zstd.Encoder
	ckptDec  *zstd.Decoder
)

func checkpointCodec() (*zstd.Encoder, *zstd.Decoder) {
	ckptOnce.Do(func() {
		var err error
		ckptEnc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(ListTextBlock))
		if err == nil {
			ckptDec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(2*ListTextBlock))
		}
		if err != nil {
			panic(err) // the options are constants
		}
	})
	return ckptEnc, ckptDec
}

// seekState is what EntryListText keeps to read at any offset. t.mu guards
// it.
type seekState struct {
	ckpt      [][]byte // ckpt[k]: block k of the text, compressed on its own
	ckptBytes int64    // the bytes of ckpt
	full      bool     // checkpoints reached their cap: no more are kept
	ckptCap   int64    // cap on ckptBytes; 0: the list's size + listCheckpointSlack (lower in tests)
	win       []winBlock
	scratch   []byte // a block the stream passes and no window keeps
}

// winBlock is one decoded block of a window.
type winBlock struct {
	k int64
	b []byte
}

// block returns block k of the text: ListTextBlock bytes, fewer for the
// last block (none past the end). err is the error that ended the stream
// within or before the block (io.EOF is no error here: a short block says
// the text ends). A block comes from the window, else its checkpoint, else
// the stream, which is read on from where it is, or decoded again from the
// start when it is past k and k has no checkpoint (over their cap).
func (t *EntryListText) block(k int64) ([]byte, error) {
	st := &t.seek
	for i := len(st.win) - 1; i >= 0; i-- {
		if w := st.win[i]; w.k == k {
			copy(st.win[i:], st.win[i+1:])
			st.win[len(st.win)-1] = w
			return w.b, nil
		}
	}
	if k < int64(len(st.ckpt)) {
		_, dec := checkpointCodec()
		b, err := dec.DecodeAll(st.ckpt[k], t.newBlock()[:0])
		if err != nil {
			return nil, fmt.Errorf("decode entry list: checkpoint of block %d: %w", k, err)
		}
		t.keep(k, b)
		return b, nil
	}
	start := k * ListTextBlock
	if t.pos < 0 || t.pos > start || t.pos%ListTextBlock != 0 {
		if err := t.dec.Reset(bytes.NewReader(t.data)); err != nil {
			t.pos, t.err = 0, t.corrupt(err)
		} else {
			t.pos, t.err = 0, nil
		}
	}
	for {
		if t.err != nil {
			return nil, endErr(t.err) // the stream ended before block k
		}
		at := t.pos / ListTextBlock
		dst := st.scratch
		if at == k {
			dst = t.newBlock()
		} else if dst == nil {
			dst = make([]byte, ListTextBlock)
			st.scratch = dst
		}
		b := t.readBlock(dst[:ListTextBlock])
		whole := len(b) == ListTextBlock || exactly(t.err, io.EOF)
		if whole && at == int64(len(st.ckpt)) {
			t.checkpoint(b)
		}
		if at == k {
			if whole {
				t.keep(k, b)
				return b, nil
			}
			return b, endErr(t.err)
		}
		if len(b) < ListTextBlock {
			return nil, endErr(t.err)
		}
	}
}

// endErr is err, but nil for io.EOF (the end of the text).
func endErr(err error) error {
	if exactly(err, io.EOF) {
		return nil
	}
	return err
}

// readBlock reads the stream on into dst, up to the text's end or its cap,
// and sets t.err where the stream ends (io.EOF at the end of the text).
func (t *EntryListText) readBlock(dst []byte) []byte {
	limit := cmp.Or(t.limit, MaxEntryListSize)
	if t.exact >= 0 {
		limit = t.exact
	}
	n := min(int64(len(dst)), limit-t.pos)
	m, err := io.ReadFull(t.dec, dst[:n])
	t.pos += int64(m)
	listTextStreamed.Add(int64(m))
	switch {
	case (err == io.EOF || err == io.ErrUnexpectedEOF) && t.exact >= 0 && t.pos < t.exact:
		t.err = fmt.Errorf("decode entry list: %w: the text ends at %d bytes, not the %d measured before", ErrCorrupt, t.pos, t.exact)
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		t.err = io.EOF
	case err != nil:
		t.err = t.corrupt(err)
	case t.pos == limit:
		t.err = t.endAtCap()
	}
	return dst[:m]
}

// checkpoint keeps b, the next block of the text, compressed on its own,
// while the checkpoints stay within the list's size and
// listCheckpointSlack.
func (t *EntryListText) checkpoint(b []byte) {
	st := &t.seek
	if st.full {
		return
	}
	enc, _ := checkpointCodec()
	c := enc.EncodeAll(b, nil)
	if st.ckptBytes+int64(len(c)) > cmp.Or(st.ckptCap, int64(len(t.data))+listCheckpointSlack) {
		st.full = true
		return
	}
	st.ckpt = append(st.ckpt, c)
	st.ckptBytes += int64(len(c))
}

// newBlock returns a buffer for a decoded block: the window's oldest, when
// the window is full, else a new one.
func (t *EntryListText) newBlock() []byte {
	st := &t.seek
	if len(st.win) == ListTextWindow {
		b := st.win[0].b
		st.win = append(st.win[:0], st.win[1:]...)
		textPool.mu.Lock()
		textPool.held--
		textPool.mu.Unlock()
		return b[:ListTextBlock]
	}
	return make([]byte, ListTextBlock)
}

// keep puts block k in the window, if the pool has room for it (else the
// window gives its oldest block up for it; an empty window keeps nothing).
func (t *EntryListText) keep(k int64, b []byte) {
	st := &t.seek
	textPool.mu.Lock()
	defer textPool.mu.Unlock()
	if textPool.held >= ListTextPool {
		if len(st.win) == 0 {
			return
		}
		st.win = append(st.win[:0], st.win[1:]...)
		textPool.held--
	}
	st.win = append(st.win, winBlock{k: k, b: b})
	textPool.held++
}

// dropWindow gives the window's blocks back to the pool.
func (t *EntryListText) dropWindow() {
	st := &t.seek
	textPool.mu.Lock()
	textPool.held -= len(st.win)
	textPool.mu.Unlock()
	st.win, st.ckpt, st.scratch = nil, nil, nil
}

// exactly reports whether err is target itself. The end of a text is io.EOF
// itself, as io.ReaderAt returns it; an error that wraps io.EOF (or
// io.ErrUnexpectedEOF) is a corrupt list's, not the end.
func exactly(err, target error) bool {
	return err == target //nolint:errorlint // identity, on purpose: see above
}
