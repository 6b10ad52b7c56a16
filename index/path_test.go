package index

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
)

var keySamples = []string{
	"sig/ab/cdef/alice",
	"sig/ab/cd/alice",
	"sig/ab/c/alice",
	"sig/AB/cdef/alice",
	"sig/ab/cdeF/alice",
	"sig/ab/cdef/",
	"sig/ab/cdef/.",
	"sig/ab/cdef/..",
	"sig/ab/cdef/...",
	"sig/ab/cdef/a b",
	"sig/ab/cdef/a/b",
	"sig/ab/cdef/a\x00",
	"sig/ab/cdef/a\r",
	"sig/ab/cdef/\xff",
	"sig/ab/cdef/é",
	"sig/abcdef/x",
	"sig/a/bcdef/x",
	"sig//cdef/x",
	"sig/ab//x",
	"sigs/ab/cdef/x",
	"seal/00/0000/" + strings.Repeat("v", 255),
	"seal/00/0000/" + strings.Repeat("v", 256),
	"cert/00/" + strings.Repeat("0", 126) + "/k",
	"cert/00/" + strings.Repeat("0", 128) + "/k",
	"accepted/ff/ff/x",
	"receipt/ff/ffff/runner 1",
	"approval/12/34g6/x",
	"",
	"sig",
	"sig/",
	"sig/ab",
	"sig/ab/",
	"sig/ab/cd",
}

// checkSplitKey holds splitKey and splitKeyPacked to store.ParseKey.
func checkSplitKey(t *testing.T, key string) {
	want, err := store.ParseKey(key)
	var buf [store.MaxObjectHex]byte
	kind, hexObj, val, ok := splitKey([]byte(key), &buf)
	if ok != (err == nil) {
		t.Fatalf("splitKey(%q) ok=%v, ParseKey err=%v", key, ok, err)
	}
	kind2, packed, val2, ok2 := splitKeyPacked([]byte(key), make([]byte, 0, 64))
	if ok2 != ok {
		t.Fatalf("splitKeyPacked(%q) ok=%v, ParseKey err=%v", key, ok2, err)
	}
	if !ok {
		return
	}
	got := store.Entry{Kind: kind, Object: string(hexObj), Value: string(val)}
	if got != want || kind2 != kind || hex.EncodeToString(packed) != want.Object || !bytes.Equal(val2, val) {
		t.Fatalf("split %q = %+v / %x, want %+v", key, got, packed, want)
	}
}

func TestSplitKeyAgreesWithParseKey(t *testing.T) {
	for _, k := range keySamples {
		checkSplitKey(t, k)
	}
}

func FuzzSplitKey(f *testing.F) {
	for _, k := range keySamples {
		f.Add(k)
	}
	f.Fuzz(checkSplitKey)
}

func TestParsePath(t *testing.T) {
	good := map[string]int{
		"":                           levelRoot,
		".":                          levelRoot,
		"sig":                        levelKind,
		"accepted/00":                levelHH,
		"seal/ab/cdef":               levelObject,
		"seal/ab/cdef/v":             levelEntry,
		BySigner:                     levelSigners,
		BySigner + "/alice":          levelSigner,
		BySigner + "/alice/abcdef01": levelLink,
	}
	for p, level := range good {
		if got, ok := parsePath(p); !ok || got.level != level {
			t.Errorf("parsePath(%q) = %+v %v, want level %d", p, got, ok, level)
		}
	}
	for _, p := range []string{"/", "sig/", "/sig", "sigs", "sig/a", "sig/AB", "sig/ab/c", "sig/ab/cdef/..",
		"sig/ab/cdef/v/w", BySigner + "/a/abc", BySigner + "/a/abcd/x", "sig/./ab"} {
		if got, ok := parsePath(p); ok {
			t.Errorf("parsePath(%q) = %+v, want refused", p, got)
		}
	}
}

func TestReadDirErrors(t *testing.T) {
	ctx := context.Background()
	st, a := foldedStore(t)
	ix, _ := openIndex(t, st)
	for _, p := range []string{"sig/cd", "sig/ab/" + strings.Repeat("0", 62), "nope", "by-signer/nobody", "sig/AB"} {
		if _, err := ix.ReadDir(ctx, p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadDir %q: %v, want ErrNotExist", p, err)
		}
	}
	for _, p := range []string{a.Key(), "by-signer/alice/" + objA} {
		if _, err := ix.ReadDir(ctx, p); !errors.Is(err, ErrNotDir) {
			t.Errorf("ReadDir %q: %v, want ErrNotDir", p, err)
		}
	}
	// Empty kinds are still directories.
	if nodes, err := ix.ReadDir(ctx, "cert"); err != nil || len(nodes) != 0 {
		t.Errorf("ReadDir cert: %v %v", nodes, err)
	}
}

func TestInodesStable(t *testing.T) {
	ctx := context.Background()
	st, a := foldedStore(t)
	ix1, _ := openIndex(t, st)
	ix2, _ := openIndex(t, otherHandle(st))
	seen := map[uint64]string{}
	for _, p := range []string{"", "sig", "sig/ab", objectPath(store.KindSig, objA), a.Key(), BySigner, BySigner + "/alice", BySigner + "/alice/" + objA} {
		n1, err1 := ix1.Stat(ctx, p)
		n2, err2 := ix2.Stat(ctx, p)
		if err1 != nil || err2 != nil || n1.Ino != n2.Ino || n1.Ino <= 1 {
			t.Fatalf("%q: %v %v %d %d", p, err1, err2, n1.Ino, n2.Ino)
		}
		if q, dup := seen[n1.Ino]; dup {
			t.Fatalf("%q and %q share inode %d", p, q, n1.Ino)
		}
		seen[n1.Ino] = p
	}
	// ReadDir gives the children the inode Stat gives them.
	nodes, _ := ix1.ReadDir(ctx, objectPath(store.KindSig, objA))
	if n, _ := ix1.Stat(ctx, a.Key()); len(nodes) != 1 || nodes[0].Ino != n.Ino {
		t.Fatalf("ReadDir ino %v, Stat ino %d", nodes, n.Ino)
	}
}

func TestGenerateDeterministic(t *testing.T) {
	ctx := context.Background()
	list := func(g GenOptions) []string {
		st := newMem(t)
		if _, err := Generate(ctx, st, g); err != nil {
			t.Fatal(err)
		}
		var keys []string
		if err := st.List(ctx, "", "", func(it store.ListItem) error {
			data, err := st.Get(ctx, it.Key)
			keys = append(keys, it.Key+" "+hex.EncodeToString(data))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	g := GenOptions{Entries: 200, Unjournaled: 10, Legacy: 10, Seed: 5}
	a, b := list(g), list(g)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different stores")
	}
	g.Seed = 6
	if slices.Equal(a, list(g)) {
		t.Fatal("different seeds, same store")
	}
	g.Fold = true
	var rep GenReport
	st := newMem(t)
	rep, err := Generate(ctx, st, g)
	if err != nil || rep.List == "" || !rep.Marker || rep.JournalLines != 0 || rep.ListEntries != rep.Entries+rep.LegacyEntries {
		t.Fatalf("fold report %+v %v", rep, err)
	}
}
