package format

import (
	"strings"
	"testing"
)

func TestReadCap(t *testing.T) {
	for key, want := range map[string]int64{
		JournalKey:          MaxRecordBytes,
		RetiredKey:          MaxRecordBytes,
		"sig/ab/cdef/alice": MaxEntryBytes,
		"seal/ab/cdef/v":    MaxEntryBytes,
		EntryListName(strings.Repeat("0", 64), false): MaxEntryListBytes,
		"sigs/ab/cdef":  MaxOtherBytes,
		"pack-123.pack": MaxOtherBytes,
		"pack-" + strings.Repeat("a", 64) + ForgottenSuffix: MaxForgottenBytes,
	} {
		if got := ReadCap(key); got != want {
			t.Errorf("ReadCap(%q) = %d, want %d", key, got, want)
		}
	}
}
