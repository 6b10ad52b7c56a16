package store

import (
	"context"
	"github.com/oxyfs/oxyfs/store/format"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileStoreLayoutIsDetected: a file:// store whose root holds the
// journal or an entry list is in the bucket layout, any other is a
// repository's own directory; --layout overrides; a plain path is a file://
// store.
func TestFileStoreLayoutIsDetected(t *testing.T) {
	ctx := context.Background()
	list := format.EntryListName(strings.Repeat("ab", 32), true)
	part := format.EntryListName(strings.Repeat("cd", 32), false)
	for _, tc := range []struct {
		name  string
		files []string
		want  Layout
	}{
		{"empty", nil, LayoutDirectory},
		{"a repository's objects", []string{"pack-0001.pack", "sig/ab/cd/alice"}, LayoutDirectory},
		{"journal", []string{format.JournalKey}, LayoutBucket},
		{"complete list", []string{list}, LayoutBucket},
		{"partial list", []string{part}, LayoutBucket},
		{"not a list name", []string{"pack-xyz.entries"}, LayoutDirectory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, u := range []string{"file://" + dir, dir} {
				st, err := Open(ctx, u, Options{})
				if err != nil {
					t.Fatalf("open %s: %v", u, err)
				}
				if st.Layout() != tc.want || st.Backend() != "file" {
					t.Errorf("open %s: layout %v backend %s, want %v file", u, st.Layout(), st.Backend(), tc.want)
				}
				st.Close()
			}
			other := LayoutBucket
			if tc.want == LayoutBucket {
				other = LayoutDirectory
			}
			st, err := Open(ctx, dir, Options{Layout: other})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if st.Layout() != other {
				t.Errorf("--layout %v: got %v", other, st.Layout())
			}
		})
	}
	// A relative path.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, format.JournalKey), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	st, err := Open(ctx, "./", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Layout() != LayoutBucket || st.Backend() != "file" {
		t.Errorf("./: layout %v backend %s", st.Layout(), st.Backend())
	}
}
