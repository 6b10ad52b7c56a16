package main

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oxyfs/oxyfs/store/format"
)

// FuzzEntryPath: whatever path a user gives `oxyfs put` (or a --batch line
// holds), entryOf(cleanPath(p)) either refuses it with a usage error or
// names exactly one valid entry key, which is the cleaned path itself: no
// path escapes the tree, reaches a record (pack-…) or an older one-list
// key, or smuggles a byte DESIGN §3 forbids into a value.
func FuzzEntryPath(f *testing.F) {
	for _, s := range []string{
		"sig/ab/cdef/alice", "/sig/ab/cdef/alice", "sig/ab/cdef/../cdef/alice", "sig/ab/cdef/..",
		"sig/ab/cdef/.", "../../etc/passwd", "sig/AB/cdef/x", "sig/ab/cde/x", "seal/ab/cdef/v\x00",
		"sig/ab/cdef/a\nb", "pack-entries", "sigs/ab/cdef", "by-signer/alice/abcdef", ".oxy/journal",
		"sig//ab///cdef//alice", "sig/ab/cdef/\xff", "accepted/00/0000/" + strings.Repeat("v", 255),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c := cleanPath(p)
		e, err := entryOf(c)
		if err != nil {
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("entryOf(%q): %v is not a usage error (exit 2)", c, err)
			}
			return
		}
		key := e.Key()
		if key != c {
			t.Fatalf("path %q (cleaned %q) names key %q", p, c, key)
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("path %q gave an invalid entry %q: %v", p, key, err)
		}
		if strings.HasPrefix(key, format.PackPrefix) || strings.Contains(key, "..") || strings.ContainsAny(key, "\x00\r\n") || !utf8.ValidString(key) {
			t.Fatalf("path %q gave a key a writer must never write: %q", p, key)
		}
		if _, err := format.ParseKey(key); err != nil {
			t.Fatalf("path %q gave a key ParseKey refuses: %q: %v", p, key, err)
		}
	})
}
