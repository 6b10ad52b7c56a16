package index

import (
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

func TestParsePath(t *testing.T) {
	good := map[string]Path{
		"":                           {},
		".":                          {},
		"sig":                        {Level: LevelKind, Kind: format.KindSig},
		"accepted/00":                {Level: LevelHH, Kind: format.KindAccepted, Object: "00"},
		"seal/ab/cdef":               {Level: LevelObject, Kind: format.KindSeal, Object: "abcdef"},
		"seal/ab/cdef/v":             {Level: LevelEntry, Kind: format.KindSeal, Object: "abcdef", Value: "v"},
		BySigner:                     {Level: LevelSigners, Kind: format.KindSig},
		BySigner + "/alice":          {Level: LevelSigner, Kind: format.KindSig, Value: "alice"},
		BySigner + "/alice/abcdef01": {Level: LevelLink, Kind: format.KindSig, Object: "abcdef01", Value: "alice"},
	}
	for p, want := range good {
		if got, ok := ParsePath(p); !ok || got != want {
			t.Errorf("ParsePath(%q) = %+v %v, want %+v", p, got, ok, want)
		}
	}
	for _, p := range []string{"/", "sig/", "/sig", "sigs", "sig/a", "sig/AB", "sig/ab/c", "sig/ab/cdef/..",
		"sig/ab/cdef/v/w", BySigner + "/a/abc", BySigner + "/a/abcd/x", "sig/./ab", "sig//ab", BySigner + "/.."} {
		if got, ok := ParsePath(p); ok || got != (Path{}) {
			t.Errorf("ParsePath(%q) = %+v, %v, want refused", p, got, ok)
		}
	}
}

// TestPathMake holds Make to what mkdir and create may make (DESIGN §4):
// the place first (ErrNotHere), then the name (ErrBadName).
func TestPathMake(t *testing.T) {
	for _, tc := range []struct {
		dir, name string
		isDir     bool
		want      error
	}{
		{"sig", "ab", true, nil},
		{"sig", "AB", true, ErrBadName},
		{"sig", "abc", true, ErrBadName},
		{"sig", "a", true, ErrBadName},
		{"sig", "ag", true, ErrBadName},
		{"sig/ab", "12cd34", true, nil},
		{"sig/ab", "123", true, ErrBadName},
		{"sig/ab", "12AB", true, ErrBadName},
		{"sig/ab", "", true, ErrBadName},
		{"sig/ab/12cd34", "alice", false, nil},
		{"sig/ab/12cd34", "..", false, ErrBadName},
		{"sig/ab/12cd34", "a\nb", false, ErrBadName},
		{"sig/ab/12cd34", "a\x00b", false, ErrBadName},
		{"sig/ab/12cd34", "alice", true, ErrNotHere},
		{"sig/ab", "alice", false, ErrNotHere},
		{"sig", "ab", false, ErrNotHere},
		{"", "sig", true, ErrNotHere},
		{"", "x", false, ErrNotHere},
		{BySigner, "mallory", true, ErrNotHere},
		{BySigner + "/alice", "abcd", false, ErrNotHere},
		{BySigner + "/alice", "abcd", true, ErrNotHere},
	} {
		dir, ok := ParsePath(tc.dir)
		if !ok {
			t.Fatalf("ParsePath(%q) refused", tc.dir)
		}
		got, err := dir.Make(tc.name, tc.isDir)
		if !errors.Is(err, tc.want) {
			t.Errorf("%q.Make(%q, dir=%v) = %+v, %v; want %v", tc.dir, tc.name, tc.isDir, got, err, tc.want)
			continue
		}
		if want, _ := ParsePath(JoinPath(tc.dir, tc.name)); err == nil && got != want {
			t.Errorf("%q.Make(%q) = %+v, ParsePath of the joined path %+v", tc.dir, tc.name, got, want)
		}
	}
}

// parsePathBefore is parsePath as it was before Path.Child read one name
// at a time: the oracle FuzzParsePath holds ParsePath to.
func parsePathBefore(p string) (Path, bool) {
	if p == "" || p == "." {
		return Path{}, true
	}
	if !fs.ValidPath(p) {
		return Path{}, false
	}
	parts := strings.Split(p, "/")
	n := len(parts)
	if parts[0] == BySigner {
		t := Path{Level: LevelSigners, Kind: format.KindSig}
		if n >= 2 {
			if format.ValidateValue(parts[1]) != nil {
				return Path{}, false
			}
			t.Level, t.Value = LevelSigner, parts[1]
		}
		if n >= 3 {
			if format.ValidateObject(parts[2]) != nil {
				return Path{}, false
			}
			t.Level, t.Object = LevelLink, parts[2]
		}
		if n > 3 {
			return Path{}, false
		}
		return t, true
	}
	kind, ok := format.ParseKind(parts[0])
	if !ok || n > 4 {
		return Path{}, false
	}
	t := Path{Level: LevelKind, Kind: kind}
	if n >= 2 {
		if len(parts[1]) != 2 || format.ValidateObject(parts[1]+parts[1]) != nil {
			return Path{}, false
		}
		t.Level, t.Object = LevelHH, parts[1]
	}
	if n >= 3 {
		t.Object = parts[1] + parts[2]
		if format.ValidateObject(t.Object) != nil {
			return Path{}, false
		}
		t.Level = LevelObject
	}
	if n == 4 {
		if format.ValidateValue(parts[3]) != nil {
			return Path{}, false
		}
		t.Level, t.Value = LevelEntry, parts[3]
	}
	return t, true
}

// checkParsePath holds ParsePath to the oracle, an entry's path to its
// key, and the inode numbers to one another.
func checkParsePath(t *testing.T, p string) {
	got, ok := ParsePath(p)
	want, wantOK := parsePathBefore(p)
	if ok != wantOK || got != want {
		t.Fatalf("ParsePath(%q) = %+v %v; before: %+v %v", p, got, ok, want, wantOK)
	}
	if e, err := ParseEntryPath(p); (err == nil) != (ok && got.Level == LevelEntry) || err == nil && e != got.Entry() {
		t.Fatalf("ParseEntryPath(%q) = %+v, %v; ParsePath %+v %v", p, e, err, got, ok)
	}
	if !ok {
		return
	}
	dir, name := SplitPath(p)
	if JoinPath(dir, name) != p || p != "." && ChildIno(dir, name) != PathIno(p) || PathIno(p) <= 1 {
		t.Fatalf("%q: split %q %q, ChildIno %d, PathIno %d", p, dir, name, ChildIno(dir, name), PathIno(p))
	}
	if p != "" && p != "." {
		parent, pok := ParsePath(dir)
		if c, cok := parent.Child(name); !pok || !cok || c != got {
			t.Fatalf("%q: parent %+v %v, Child(%q) = %+v %v", p, parent, pok, name, c, cok)
		}
	}
}

var pathSamples = []string{
	"", ".", "/", "sig", "sig/", "/sig", "sigs", "SIG", "seal/00", "sig/a", "sig/AB", "sig/abc", "sig/ab/c",
	"sig/ab/cd", "sig/ab/cdef/alice", "sig/ab/cdef/..", "sig/ab/cdef/.", "sig/ab/cdef/v/w", "sig/./ab", "sig//ab",
	"accepted/ff/" + strings.Repeat("0", 126) + "/x", "accepted/ff/" + strings.Repeat("0", 128) + "/x",
	BySigner, BySigner + "/", BySigner + "/alice", BySigner + "/alice/abcd", BySigner + "/alice/abc",
	BySigner + "/alice/abcd/x", BySigner + "/\xff", "cert/ab/cd/\xff", "cert/ab/cd/é", ".oxy",
}

func TestParsePathAgreesWithBefore(t *testing.T) {
	for _, p := range pathSamples {
		checkParsePath(t, p)
	}
}

func FuzzParsePath(f *testing.F) {
	for _, p := range pathSamples {
		f.Add(p)
	}
	f.Fuzz(checkParsePath)
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
	for _, p := range []string{"", "sig", "sig/ab", objectPath(format.KindSig, objA), a.Key(), BySigner, BySigner + "/alice", BySigner + "/alice/" + objA} {
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
	nodes, _ := ix1.ReadDir(ctx, objectPath(format.KindSig, objA))
	if n, _ := ix1.Stat(ctx, a.Key()); len(nodes) != 1 || nodes[0].Ino != n.Ino {
		t.Fatalf("ReadDir ino %v, Stat ino %d", nodes, n.Ino)
	}
}

func TestGenerateDeterministic(t *testing.T) {
	ctx := context.Background()
	list := func(g storegen.Options) []string {
		st := storefixture.NewMem(t)
		if _, err := storegen.Generate(ctx, st, g); err != nil {
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
	g := storegen.Options{Entries: 200, Unjournaled: 10, Legacy: 10, Seed: 5}
	a, b := list(g), list(g)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different stores")
	}
	g.Seed = 6
	if slices.Equal(a, list(g)) {
		t.Fatal("different seeds, same store")
	}
	g.Fold = true
	var rep storegen.Report
	st := storefixture.NewMem(t)
	rep, err := storegen.Generate(ctx, st, g)
	if err != nil || rep.List == "" || !rep.Marker || rep.JournalLines != 0 || rep.ListEntries != rep.Entries+rep.LegacyEntries {
		t.Fatalf("fold report %+v %v", rep, err)
	}
}

// TestChildPathIsChildAndJoin checks ChildPath, the one-allocation path and
// Path of a listed directory, against Path.Child and JoinPath: for an
// <hh>'s objects (valid, too short, too long, not hex) and the other
// levels' children.
func TestChildPathIsChildAndJoin(t *testing.T) {
	long := strings.Repeat("c", format.MaxObjectHex-2)
	cases := []struct{ dir, name string }{
		{"sig/ab", "cd" + strings.Repeat("0", 60)},
		{"seal/0f", "12"},
		{"sig/ab", long},
		{"sig/ab", long + "d"},
		{"sig/ab", "x" + strings.Repeat("0", 61)},
		{"sig/ab", ""},
		{"sig", "ab"},
		{"sig", "xyz"},
		{"", "sig"},
		{"", "by-signer"},
		{"by-signer", "alice"},
	}
	for _, c := range cases {
		at, ok := ParsePath(c.dir)
		if !ok {
			t.Fatalf("ParsePath(%q) refused", c.dir)
		}
		p, child, ok := at.ChildPath(c.dir, c.name)
		wantChild, wantOK := at.Child(c.name)
		if ok != wantOK || ok && (p != JoinPath(c.dir, c.name) || child != wantChild) {
			t.Errorf("ChildPath(%q, %q) = %q, %+v, %v; want %q, %+v, %v", c.dir, c.name, p, child, ok, JoinPath(c.dir, c.name), wantChild, wantOK)
		}
	}
}
