package format

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"testing/iotest"
)

// FuzzDecodeEntryListFrom: the decode from a reader that hands the list
// over a few bytes at a time (as a body arrives) says what the decode of
// the whole list says: the same keys, the same size, an error exactly
// when it errs (ErrCorrupt).
func FuzzDecodeEntryListFrom(f *testing.F) {
	_, good, err := EncodeEntryList([]string{"sig/ab/cd/a", "seal/00/11/x"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-2])
	f.Add(zstdText(f, EntryListHeader+"\nb\na\n"))
	f.Add(zstdText(f, EntryListHeader+"\nkey without newline"))
	f.Add([]byte("not zstd"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var whole, streamed []string
		n1, size1, err1 := DecodeEntryListSized(data, func(k []byte) error { whole = append(whole, string(k)); return nil })
		n2, size2, err2 := DecodeEntryListFrom(iotest.HalfReader(bytes.NewReader(data)), func(k []byte) error { streamed = append(streamed, string(k)); return nil })
		if (err1 == nil) != (err2 == nil) || err2 != nil && !errors.Is(err2, ErrCorrupt) {
			t.Fatalf("whole: %v; from a reader: %v", err1, err2)
		}
		if err1 == nil && (n1 != n2 || size1 != size2 || !slices.Equal(whole, streamed)) {
			t.Fatalf("whole: %d keys, %d bytes; from a reader: %d keys, %d bytes", n1, size1, n2, size2)
		}
	})
}
