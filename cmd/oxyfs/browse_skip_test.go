package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// validKeys are the entries the stores of the skip tests hold, all listed
// after the objects that hold no valid entry (sig/00/…).
var validKeys = []string{"seal/12/3456/change-1", "sig/ab/cdef01/alice", "sig/ff/0011/carol"}

// TestLsRecursiveSkipsAnObjectWithNoValidEntry: an object directory that
// holds no valid entry — a lone symlink or subdirectory in a directory-layout
// store, an older one-list key with no lines in an unfolded bucket — is
// skipped, said once, and every entry after it is listed, exit 0 (DESIGN §3;
// issue 22 item 4: ls -R stopped there with exit 1).
func TestLsRecursiveSkipsAnObjectWithNoValidEntry(t *testing.T) {
	for _, layout := range []string{"directory", "bucket"} {
		t.Run(layout, func(t *testing.T) {
			dir := t.TempDir()
			for _, k := range validKeys {
				var body []byte
				if strings.HasPrefix(k, "sig/") {
					body = []byte("signature of " + k)
				}
				writeFile(t, dir, k, body)
			}
			if layout == "directory" {
				if err := os.MkdirAll(filepath.Join(dir, "sig/00/1111"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("/etc/passwd", filepath.Join(dir, "sig/00/1111/evil")); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(dir, "sig/00/2222/subdir"), 0o755); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, dir, "sigs/00/1111", nil) // an older one-list key with no lines
			}
			out, errOut, code := runCLI(t, "ls", "-R", "--layout", layout, "file://"+dir)
			if code != 0 {
				t.Errorf("ls -R: exit %d, want 0: %s", code, errOut)
			}
			if got := strings.Fields(out); !slices.Equal(got, validKeys) {
				t.Errorf("ls -R listed %q, want %q", got, validKeys)
			}
			if n := strings.Count(errOut, "no valid entry"); n != 1 {
				t.Errorf("stderr says %d times that an object holds no valid entry, want once:\n%s", n, errOut)
			}
			if !strings.Contains(errOut, "sig/00/1111") {
				t.Errorf("stderr does not name the first skipped object:\n%s", errOut)
			}
		})
	}
}

// TestWalkSkipsAConsoleFolderKey: an S3 console "folder" key under an
// object prefix (sig/00/1111/, zero bytes) is no entry; the walk goes on.
func TestWalkSkipsAConsoleFolderKey(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	storefixture.PutObjects(t, st, validKeys...)
	if err := st.Put(ctx, "sig/00/1111/", nil); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(ctx, st, index.Options{Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var got, skipped []string
	err = walk(ctx, ix, "", func(p string, n index.Node) error {
		if n.Type != index.NodeDir {
			got = append(got, p)
		}
		return nil
	}, func(p string) { skipped = append(skipped, p) })
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	if !slices.Equal(got, validKeys) {
		t.Errorf("walk found %q, want %q", got, validKeys)
	}
	if !slices.Equal(skipped, []string{"sig/00/1111"}) {
		t.Errorf("skipped %q, want the folder key's object", skipped)
	}
}
