package index

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestFileSymlinksAreMalformedNotFollowed: on a directory-layout file://
// store, a symbolic link planted as a signer, as an <hh> directory and as
// an object directory is never read: the tree shows none of them, each is
// counted and warned about as a malformed key, and a read of the linked
// signer (whose Stat a listing would not answer) fails instead of returning
// the file outside the store.
func TestFileSymlinksAreMalformedNotFollowed(t *testing.T) {
	ctx := context.Background()
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, "ef01"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "ef01", "alice"), []byte("OUTSIDE"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, "file://"+dir, store.Options{Layout: store.LayoutDirectory})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bob := storefixture.Ent(format.KindSig, objA, "bob")
	storefixture.PutEntries(t, st, bob)
	evil := storefixture.Ent(format.KindSig, objA, "evil")
	for target, link := range map[string]string{
		filepath.Join(outside, "secret"): evil.Key(),           // a signer
		outside:                          "sig/cd",             // an <hh> directory
		filepath.Join(outside, "ef01"):   "sig/ab/" + objB[2:], // an object directory
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	ix, w := openIndex(t, st)
	if got := walkEntries(t, ix); !slices.Equal(got, []string{bob.Key()}) {
		t.Fatalf("tree %v, want only %s", got, bob.Key())
	}
	if got, err := ix.ReadSig(ctx, bob); err != nil || !strings.HasPrefix(string(got), "sig of") {
		t.Fatalf("ReadSig(bob) = %q, %v", got, err)
	}
	for _, p := range []string{evil.Key(), "sig/cd", "sig/cd/ef01/alice", "sig/ab/" + objB[2:], "sig/ab/" + objB[2:] + "/alice"} {
		if n, err := ix.Stat(ctx, p); err == nil {
			t.Errorf("Stat(%s) = %+v, want not found", p, n)
		}
	}
	for _, e := range []format.Entry{evil, storefixture.Ent(format.KindSig, "cdef01", "alice"), storefixture.Ent(format.KindSig, objB, "alice")} {
		if got, err := ix.ReadSig(ctx, e); err == nil || strings.Contains(string(got), "SECRET") || strings.Contains(string(got), "OUTSIDE") {
			t.Errorf("ReadSig(%s) = %q, %v; want it refused", e.Key(), got, err)
		}
	}
	ws := strings.Join(w.all(), "\n")
	for _, want := range []string{`"` + evil.Key() + `": a symbolic link, not followed`, `"sig/cd": a symbolic link, not followed`, `"sig/ab/` + objB[2:] + `": a symbolic link, not followed`} {
		if !strings.Contains(ws, want) {
			t.Errorf("warnings %q lack %q", ws, want)
		}
	}
	if s := ix.Status(); s.Malformed != 3 {
		t.Errorf("Status().Malformed = %d, want 3", s.Malformed)
	}
}
