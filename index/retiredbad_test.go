package index

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// A line of the retired record that does not parse and names a live list
// may retire it: the reader cannot tell which lists are live, so it trusts
// none (prefix listing: the keys themselves), and warns naming the record,
// the line number and the rule the line broke, also in Status. Before, the
// line was skipped without a word and the list it meant to retire read as
// live, showing an entry a collection had forgotten.
func TestRetiredLineThatDoesNotParseNamingALiveListIsNotTrusted(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")
	b := storefixture.Ent(format.KindSig, objB, "bob")
	gone := storefixture.Ent(format.KindSig, objC, "forgotten") // its key was deleted
	storefixture.PutEntries(t, st, a, b)
	old := storefixture.WriteEntryList(t, st, true, a, gone)
	storefixture.WriteEntryList(t, st, true, a, b)
	storefixture.WriteRetiredText(t, st, "1 pack-x.pack\n12x "+old+"\n")
	ix, w := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s := ix.Status()
	if s.Mode != ModePrefixListing {
		t.Fatalf("mode %q, want %q: a list the record may retire was trusted", s.Mode, ModePrefixListing)
	}
	if got, want := walkEntries(t, ix), keysOf([]format.Entry{a, b}); !slices.Equal(got, want) {
		t.Fatalf("tree %v, want %v", got, want)
	}
	for _, ws := range [][]string{w.all(), s.Warnings} {
		for _, want := range []string{format.RetiredKey, "line 2", `retired-at "12x" is not a number`, old, "prefixes"} {
			if !hasWarning(ws, want) {
				t.Fatalf("no warning says %q: %q", want, ws)
			}
		}
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(w.all()); n != 2 {
		t.Fatalf("a refresh that met the same line warned again: %q", w.all())
	}
}

// A line that does not parse and names no listed list cannot change which
// lists are live: the lists are trusted, and the mount warns.
func TestRetiredLineThatDoesNotParseNamingNoListIsReported(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")
	storefixture.PutEntries(t, st, a)
	storefixture.WriteEntryList(t, st, true, a)
	storefixture.WriteRetiredText(t, st, "1 pack-x.pack\nnot a line\n")
	ix, w := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if s := ix.Status(); s.Mode != ModeFolded {
		t.Fatalf("mode %q, want %q", s.Mode, ModeFolded)
	}
	ws := w.all()
	if len(ws) != 1 || !strings.Contains(ws[0], format.RetiredKey+" has 1 line that does") || !strings.Contains(ws[0], `line 2 "not a line": retired-at "not" is not a number`) {
		t.Fatalf("want one warning naming the record, the line and why: %q", ws)
	}
}

// A retired record whose last line does not end in "\n" was cut by a write
// that failed (user trial 52): the line left, which parses, names a
// prefix of the list the whole line retired. Before, it was believed: it
// retired a key no one wrote, and the list it meant to retire was read as
// live, showing an entry a collection had forgotten. Now it is a bad line
// (cut) and every live list whose name it begins is not trusted: the
// reader lists prefixes and warns, as for a line that does not parse.
func TestRetiredRecordCutInItsLastLineIsNotTrusted(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")
	b := storefixture.Ent(format.KindSig, objB, "bob")
	gone := storefixture.Ent(format.KindSig, objC, "forgotten") // its key was deleted
	storefixture.PutEntries(t, st, a, b)
	old := storefixture.WriteEntryList(t, st, true, a, gone)
	storefixture.WriteEntryList(t, st, true, a, b)
	cutLine := "1 " + old[:len(old)/2]
	if _, err := format.ParseRetiredLine(cutLine); err != nil {
		t.Fatalf("the cut line %q should parse by itself: %v", cutLine, err)
	}
	storefixture.WriteRetiredText(t, st, "1 pack-x.pack\n"+cutLine)
	ix, w := openIndex(t, st)
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	s := ix.Status()
	if s.Mode != ModePrefixListing {
		t.Fatalf("mode %q, want %q: a list the cut line may retire was trusted", s.Mode, ModePrefixListing)
	}
	if got, want := walkEntries(t, ix), keysOf([]format.Entry{a, b}); !slices.Equal(got, want) {
		t.Fatalf("tree %v, want %v", got, want)
	}
	for _, ws := range [][]string{w.all(), s.Warnings} {
		for _, want := range []string{format.RetiredKey, "line 2", "cut", old, "prefixes"} {
			if !hasWarning(ws, want) {
				t.Fatalf("no warning says %q: %q", want, ws)
			}
		}
	}
}
