package format

import "strings"

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
	// MaxForgottenBytes caps a forget record (forgotten.go): a line of
	// about 140 bytes per forgotten object and kind, so 100,000 objects of
	// every kind. A collection forgetting more writes more records.
	MaxForgottenBytes int64 = 16 << 20
	// MaxOtherBytes caps any other key read whole (older one-list keys).
	MaxOtherBytes int64 = 256 << 20
)

// ReadCap returns the most bytes a GET of key may return.
func ReadCap(key string) int64 {
	switch {
	case key == JournalKey || key == RetiredKey:
		return MaxRecordBytes
	case strings.HasPrefix(key, PackPrefix):
		if _, _, ok := ParseEntryListName(key); ok {
			return MaxEntryListBytes
		}
		if IsForgottenName(key) {
			return MaxForgottenBytes
		}
		return MaxOtherBytes
	}
	if _, err := ParseKey(key); err == nil {
		return MaxEntryBytes
	}
	return MaxOtherBytes
}
