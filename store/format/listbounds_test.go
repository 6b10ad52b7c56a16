package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/oxyfs/oxyfs/testkit/memtest"
)

// longWindowList is a list of n keys compressed as `zstd --long=27` does:
// a stream whose frame declares a 128 MiB window.
func longWindowList(t testing.TB, n int) (data []byte, text string) {
	t.Helper()
	var b strings.Builder
	b.WriteString(EntryListHeader + "\n")
	for i := range n {
		fmt.Fprintf(&b, "sig/%02x/%08x/signer\n", i*256/n, i)
	}
	text = b.String()
	var out bytes.Buffer
	enc, err := zstd.NewWriter(&out, zstd.WithWindowSize(MaxEntryListWindow), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	for chunk := range slices.Chunk([]byte(text), 64<<10) {
		if _, err := enc.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(out.Bytes()); err != nil || h.SingleSegment || h.WindowSize != MaxEntryListWindow {
		t.Fatalf("frame header %+v, %v: want a declared window of %d", h, err, MaxEntryListWindow)
	}
	return out.Bytes(), text
}

func TestDecodeEntryListAcceptsARealFrameWithA128MiBWindow(t *testing.T) {
	data, text := longWindowList(t, 30000)
	var n int
	var err error
	peak := memtest.Peak(func() { n, err = DecodeEntryList(data, nil) })
	if err != nil || n != 30000 {
		t.Fatalf("DecodeEntryList of a 128 MiB-window list = %d keys, %v; want 30000", n, err)
	}
	// The decoder's window is the most a list can make it allocate.
	if peak > 160*memtest.MiB {
		t.Errorf("decoding took %d MiB of heap, want < 160", peak/memtest.MiB)
	}
	if err := VerifyEntryList(EntryListName(EntryListID([]byte(text)), true), data); err != nil {
		t.Errorf("VerifyEntryList: %v", err)
	}
}

// bombFrame builds a zstd frame by hand: a header declaring fcs bytes (if
// fcs >= 0) and a window of 8 MiB, then blocks of 128 KiB that each repeat
// one byte (RLE blocks: 4 bytes each), the first one raw text.
func bombFrame(fcs int64, first string, blocks int, fill byte) []byte {
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd}
	if fcs >= 0 {
		frame = append(frame, 0xc0, 13<<3) // 8-byte content size, window 8 MiB
		frame = binary.LittleEndian.AppendUint64(frame, uint64(fcs))
	} else {
		frame = append(frame, 0x00, 13<<3)
	}
	bh := len(first) << 3 // raw
	if blocks == 0 {
		bh |= 1
	}
	frame = append(frame, byte(bh), byte(bh>>8), byte(bh>>16))
	frame = append(frame, first...)
	for i := range blocks {
		bh := 1<<1 | (128<<10)<<3 // RLE of 128 KiB
		if i == blocks-1 {
			bh |= 1
		}
		frame = append(frame, byte(bh), byte(bh>>8), byte(bh>>16), fill)
	}
	return frame
}

func TestDecodeEntryListRefusesABombThatDeclaresItsSize(t *testing.T) {
	// 4.3 GiB in 140 KiB: refused from the frame header, before decoding.
	const size = 43 << 27
	data := bombFrame(size, EntryListHeader+"\n", size/(128<<10), 'a')
	var n int
	var err error
	peak := memtest.Peak(func() { n, err = DecodeEntryList(data, func([]byte) error { return nil }) })
	want := "decode entry list: corrupt record or list: decompresses to more than 4294967296 bytes: frame declares 5771362304 bytes"
	if err == nil || err.Error() != want || !errors.Is(err, ErrCorrupt) {
		t.Errorf("DecodeEntryList of a bomb = %d keys, %v; want %s", n, err, want)
	}
	if peak > 16*memtest.MiB {
		t.Errorf("refusing the bomb took %d MiB of heap, want < 16", peak/memtest.MiB)
	}
}

func TestDecodeEntryListRefusesABombOfNewlines(t *testing.T) {
	// No declared size: 1 GiB of "\n" is an empty line at line 2.
	data := bombFrame(-1, EntryListHeader+"\nsig/ab/cd/a", 8192, '\n')
	_, err := DecodeEntryList(data, nil)
	if want := `decode entry list: line 3 "": empty line`; err == nil || err.Error() != want {
		t.Errorf("DecodeEntryList = %v, want %s", err, want)
	}
}

func TestDecodeEntryListRefusesMoreKeysThanItsCap(t *testing.T) {
	data := zstdText(t, EntryListHeader+"\nsig/ab/cd/a\nsig/ab/cd/b\nsig/ab/cd/c\n")
	s := listScanner{maxKeys: 2}
	err := s.decode(data)
	if want := "decode entry list: corrupt record or list: holds more than 33554432 keys"; err == nil || err.Error() != want || s.keys != 2 {
		t.Errorf("decode over the key cap = %d keys, %v; want %s", s.keys, err, want)
	}
}
