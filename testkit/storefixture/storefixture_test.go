package storefixture

import (
	"context"
	"go/parser"
	"go/token"
	iofs "io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// TestWrittenStoreReadsBack: what the fixtures write is what the store's
// own readers find: the objects, the list's keys, the journal's lines and
// the retired record; Delta counts exactly the requests of its step.
func TestWrittenStoreReadsBack(t *testing.T) {
	ctx := context.Background()
	st := NewMem(t)
	a, b := Ent(format.KindSig, "ab12", "alice"), Ent(format.KindSeal, "cd34", "change-1")
	put := Delta(st, func() { PutEntries(t, st, a, b) })
	if want := (store.Counts{Put: 2}); put != want {
		t.Errorf("PutEntries of 2 entries sent %v, want %v", put, want)
	}
	if data, err := st.Get(ctx, a.Key()); err != nil || string(data) != string(SigBytes(a.Key())) {
		t.Errorf("signature %s: %q, %v; want %q", a.Key(), data, err, SigBytes(a.Key()))
	}
	if data, err := st.Get(ctx, b.Key()); err != nil || len(data) != 0 {
		t.Errorf("seal %s: %q, %v; want an empty object", b.Key(), data, err)
	}

	name := WriteEntryList(t, st, true, b, a)
	keys := ReadList(t, st, name)
	want := []string{a.Key(), b.Key()}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("list %s holds %q, want %q (sorted)", name, keys, want)
	}
	if !strings.HasSuffix(name, ".entries") || WriteList(t, st, false, a.Key()) == name {
		t.Errorf("complete list named %q; a partial one must differ", name)
	}

	WriteJournal(t, st, 7, a, b)
	lines := ReadJournal(t, st)
	if want := []format.JournalLine{{FoldedAt: 7, Key: a.Key()}, {FoldedAt: 7, Key: b.Key()}}; !slices.Equal(lines, want) {
		t.Errorf("journal %v, want %v", lines, want)
	}
	WriteJournalText(t, st, "0 "+b.Key()+"\n")
	if got, want := JournalKeys(t, st), []string{b.Key()}; !slices.Equal(got, want) {
		t.Errorf("journal keys %q, want %q", got, want)
	}

	Retire(t, st, name)
	rec, _, err := st.ReadRecord(ctx, format.RetiredKey)
	if err != nil {
		t.Fatal(err)
	}
	if want := string(format.Retired([]format.RetiredLine{{RetiredAt: 1, Key: name}})); string(rec) != want {
		t.Errorf("retired record %q, want %q", rec, want)
	}
}

// TestOnlyTestsImportIt: no file but a _test.go one imports storefixture.
func TestOnlyTestsImportIt(t *testing.T) {
	const self = "github.com/oxyfs/oxyfs/testkit/storefixture"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, im := range f.Imports {
			if path, _ := strconv.Unquote(im.Path.Value); path == self {
				t.Errorf("%s imports %s, which is for tests only", p, self)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatalf("no .go file found under %s", root)
	}
}
