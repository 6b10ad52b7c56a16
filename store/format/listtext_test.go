package format

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/oxyfs/oxyfs/testkit/memtest"
)

func TestEntryListTextReadsAnyOffset(t *testing.T) {
	data, text := longWindowList(t, 30000)
	lt, err := NewEntryListText(data)
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Close()
	read := func(off int64, n int) (string, error) {
		p := make([]byte, n)
		got, err := lt.ReadAt(p, off)
		return string(p[:got]), err
	}
	for _, c := range []struct {
		off int64
		n   int
	}{{0, 100}, {100, 4096}, {50000, 10}, {10, 10}, {int64(len(text)) - 5, 5}, {0, len(text)}} {
		got, err := read(c.off, c.n)
		if want := text[c.off : c.off+int64(c.n)]; got != want || err != nil {
			t.Errorf("ReadAt(%d, %d) = %q, %v; want %q", c.off, c.n, clip(got), err, clip(want))
		}
	}
	if got, err := read(int64(len(text))-3, 10); got != text[len(text)-3:] || !exactly(err, io.EOF) {
		t.Errorf("ReadAt over the end = %q, %v; want the last 3 bytes, EOF", got, err)
	}
	if got, err := read(int64(len(text))+10, 10); got != "" || !exactly(err, io.EOF) {
		t.Errorf("ReadAt past the end = %q, %v; want EOF", got, err)
	}
}

func TestEntryListTextOfABombIsBounded(t *testing.T) {
	// 1 GiB of one byte, no declared size: a reader that goes through it
	// holds a window at a time, and one that reads past the cap is refused.
	data := bombFrame(-1, EntryListHeader+"\n", 8192, 'a')
	lt, err := NewEntryListText(data)
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Close()
	lt.limit = 512 << 20
	h := sha256.New()
	var total int64
	var rerr error
	peak := memtest.Peak(func() {
		p := make([]byte, 1<<20)
		for {
			n, err := lt.ReadAt(p, total)
			h.Write(p[:n])
			total += int64(n)
			if err != nil {
				rerr = err
				return
			}
		}
	})
	if total != 512<<20 || !errors.Is(rerr, ErrCorrupt) || !strings.Contains(rerr.Error(), "decompresses to more than") {
		t.Errorf("read %d bytes, then %v; want %d bytes, then the size cap", total, rerr, 512<<20)
	}
	if peak > 24*memtest.MiB {
		t.Errorf("reading a bomb took %d MiB of heap, want < 24", peak/memtest.MiB)
	}
	// Back to the start: the stream is decoded again.
	p := make([]byte, 14)
	if n, err := lt.ReadAt(p, 0); n != 14 || err != nil || !bytes.Equal(p, []byte(EntryListHeader+"\n")) {
		t.Errorf("ReadAt(0) after the end = %q, %v", p[:n], err)
	}
}

func TestEntryListTextRefusesADeclaredBomb(t *testing.T) {
	_, err := NewEntryListText(bombFrame(43<<27, EntryListHeader+"\n", 1, 'a'))
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("NewEntryListText of a frame declaring 5.4 GiB = %v, want ErrCorrupt", err)
	}
}

// TestEntryListTextOfSizeServesExactlyItsSize: a text read as the size
// measured before is served whole; one longer or shorter than that fails
// the read that finds it, with ErrCorrupt.
func TestEntryListTextOfSizeServesExactlyItsSize(t *testing.T) {
	data, text := longWindowList(t, 30000)
	size, err := EntryListTextSize(data)
	if err != nil || size != int64(len(text)) {
		t.Fatalf("EntryListTextSize = %d, %v; want %d", size, err, len(text))
	}
	if _, n, err := DecodeEntryListSized(data, nil); err != nil || n != size {
		t.Fatalf("DecodeEntryListSized: %d bytes, %v; want %d", n, err, size)
	}
	readAll := func(measured int64) ([]byte, error) {
		lt, err := NewEntryListTextOfSize(data, measured)
		if err != nil {
			t.Fatal(err)
		}
		defer lt.Close()
		return io.ReadAll(io.NewSectionReader(lt, 0, 1<<40))
	}
	if got, err := readAll(size); err != nil || string(got) != text {
		t.Errorf("read as %d bytes: %d bytes, %v; want the text", size, len(got), err)
	}
	for _, measured := range []int64{size - 1, size + 1, 0} {
		got, err := readAll(measured)
		if !errors.Is(err, ErrCorrupt) || int64(len(got)) > measured {
			t.Errorf("read as %d bytes (the text has %d): %d bytes, %v; want at most %d and ErrCorrupt", measured, size, len(got), err, measured)
		}
	}
}

// FuzzEntryListText checks EntryListText against a whole decode: any stream
// read at any offsets in any order gives the bytes zstd gives there (up to
// where zstd fails), and never panics; EntryListTextSize and
// DecodeEntryListSized count what zstd decodes; DecodeEntryListHashed
// agrees with VerifyEntryList.
func FuzzEntryListText(f *testing.F) {
	_, good, err := EncodeEntryList([]string{"sig/ab/cd/a", "seal/00/11/x"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, uint16(0), uint16(5), uint16(3))
	f.Add(good[:len(good)-2], uint16(10), uint16(2), uint16(40))
	f.Add(rawFrame(17<<3, EntryListHeader+"\nsig/ab/cd/a\n"), uint16(4), uint16(0), uint16(100))
	f.Add([]byte("not zstd"), uint16(0), uint16(0), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, a, b, n uint16) {
		want, werr := zstdDecodeAll(data)
		lt, err := NewEntryListText(data)
		if err != nil {
			if werr == nil && int64(len(want)) <= MaxEntryListSize {
				t.Fatalf("NewEntryListText = %v, but zstd decodes it", err)
			}
			return
		}
		defer lt.Close()
		for _, off := range []int64{int64(a), int64(b), int64(a)} {
			p := make([]byte, n)
			got, err := lt.ReadAt(p, off)
			if off >= int64(len(want)) {
				if got != 0 || (werr == nil && n > 0 && !exactly(err, io.EOF)) {
					t.Fatalf("ReadAt(%d) past the end of %d bytes = %d, %v", off, len(want), got, err)
				}
				continue
			}
			if werr != nil && off+int64(got) > int64(len(want)) {
				continue // the two stopped at different points of a bad stream
			}
			end := min(off+int64(n), int64(len(want)))
			if !bytes.Equal(p[:got], want[off:off+int64(got)]) || (werr == nil && int64(got) != end-off) {
				t.Fatalf("ReadAt(%d, %d) = %q, %v; want %q", off, n, p[:got], err, want[off:end])
			}
		}
		if size, err := EntryListTextSize(data); werr == nil && (err != nil || size != int64(len(want))) {
			t.Fatalf("EntryListTextSize = %d, %v; zstd decodes %d bytes", size, err, len(want))
		}
		if _, size, err := DecodeEntryListSized(data, nil); err == nil && size != int64(len(want)) {
			t.Fatalf("DecodeEntryListSized says %d bytes of text; zstd decodes %d", size, len(want))
		}
		_, sum, herr := DecodeEntryListHashed(data, nil)
		if herr == nil {
			if verr := VerifyEntryList(EntryListName(sum, true), data); verr != nil {
				t.Fatalf("DecodeEntryListHashed = %s, but VerifyEntryList: %v", sum, verr)
			}
		}
	})
}

// zstdDecodeAll decodes a stream as far as it decodes, with the window cap
// of a list.
func zstdDecodeAll(data []byte) ([]byte, error) {
	dec, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(MaxEntryListWindow))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	return io.ReadAll(io.LimitReader(dec, MaxEntryListSize+1))
}
