package store

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Caps on what one GET may bring into memory. A store is shared, and what it
// holds may be hostile: an object over its cap is refused, before its body is
// read when the response says its size (every backend's does), else after
// reading one byte past the cap. The refusal wraps ErrTooLarge and names the
// key and the cap; a mount maps it to EFBIG.
const (
	// MaxEntryBytes caps the bytes of one entry's own key (a signature):
	// the cap of a write (`oxyfs put`, a mount), so every signature oxyfs
	// wrote reads back.
	MaxEntryBytes int64 = 64 << 20
	// MaxRecordBytes caps the journal and the retired record. A journal
	// keeps its folded lines an hour: 500 signatures a second for an hour
	// is 1.8 million lines, about 180 MB.
	MaxRecordBytes int64 = 256 << 20
	// MaxEntryListBytes caps one entry list as stored (compressed). A list
	// of 10 million keys compresses to about 400 MB.
	MaxEntryListBytes int64 = 1 << 30
	// MaxEntryListsInFlight caps the compressed bytes of the live lists
	// one open holds at once: read, not yet decoded (index/listload.go).
	// A list larger than this is read alone.
	MaxEntryListsInFlight int64 = 256 << 20
	// MaxOtherBytes caps any other key read whole (older one-list keys).
	MaxOtherBytes int64 = 256 << 20
)

// ErrTooLarge is wrapped by the error of a read refused by its cap.
var ErrTooLarge = errors.New("over its size cap")

// ReadCap returns the most bytes a GET of key may return.
func ReadCap(key string) int64 {
	switch {
	case key == JournalKey || key == RetiredKey:
		return MaxRecordBytes
	case strings.HasPrefix(key, PackPrefix):
		if _, _, ok := ParseEntryListName(key); ok {
			return MaxEntryListBytes
		}
		return MaxOtherBytes
	}
	if _, err := ParseKey(key); err == nil {
		return MaxEntryBytes
	}
	return MaxOtherBytes
}

// tooLarge is the error of a read refused by its cap (the caller's error
// names the key); size < 0 means "more than max" (the size was not known
// before reading).
func tooLarge(size, max int64) error {
	if size < 0 {
		return fmt.Errorf("more than %d bytes, the cap for such a key: %w", max, ErrTooLarge)
	}
	return fmt.Errorf("%d bytes, over the cap of %d for such a key: %w", size, max, ErrTooLarge)
}

// readAllInto is io.ReadAll appending to dst, which holds the expected size:
// a body of the size its response declared is read with no copy.
func readAllInto(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}
