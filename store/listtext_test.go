package store

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/internal/memtest"
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
	if got, err := read(int64(len(text))-3, 10); got != text[len(text)-3:] || err != io.EOF {
		t.Errorf("ReadAt over the end = %q, %v; want the last 3 bytes, EOF", got, err)
	}
	if got, err := read(int64(len(text))+10, 10); got != "" || err != io.EOF {
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
