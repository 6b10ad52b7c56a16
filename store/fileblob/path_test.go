package fileblob

import (
	"strings"
	"testing"
)

// FuzzFileKeyParts: keyParts accepts exactly the keys that are a path of
// non-empty components, none "." or "..", no NUL, and splits them so they
// join back to the key; IsTempName holds only for TempPrefix and 16
// lowercase hex digits.
func FuzzFileKeyParts(f *testing.F) {
	for _, s := range []string{"sig/ab/cdef/alice", "pack-entries", "", "/a", "a/", "a//b", "./a", "a/../b", "a\x00b", ".oxytmp-0123456789abcdef", ".oxytmp-0123456789ABCDEF", "..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		parts, err := keyParts(key)
		valid := key != "" && !strings.Contains(key, "\x00")
		for _, p := range strings.Split(key, "/") {
			if p == "" || p == "." || p == ".." {
				valid = false
			}
		}
		if (err == nil) != valid {
			t.Fatalf("keyParts(%q) = %q, %v; valid %v", key, parts, err, valid)
		}
		if err == nil && strings.Join(parts, "/") != key {
			t.Fatalf("keyParts(%q) = %q: does not join back", key, parts)
		}
		if IsTempName(key) {
			rest, ok := strings.CutPrefix(key, TempPrefix)
			if !ok || len(rest) != 16 || strings.Trim(rest, "0123456789abcdef") != "" {
				t.Fatalf("IsTempName(%q) is true", key)
			}
		}
	})
}
