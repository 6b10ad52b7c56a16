package index

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// diffModel is DiffKeys computed with maps.
func diffModel(old, new []string) []string {
	in := func(s []string, k string) bool { return slices.Contains(s, k) }
	var out []string
	for _, k := range old {
		if !in(new, k) {
			out = append(out, "-"+k)
		}
	}
	for _, k := range new {
		if !in(old, k) {
			out = append(out, "+"+k)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(a[1:], b[1:]) })
	return slices.Compact(out)
}

func collectDiff(t *testing.T, old, new KeyStream) []string {
	t.Helper()
	var out []string
	err := DiffKeys(old, new, false, func(op DiffOp, k []byte) error {
		out = append(out, map[DiffOp]string{DiffAdded: "+", DiffRemoved: "-"}[op]+string(k))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDiffKeysMatchesModel: random sets, split over several streams
// (unions), compare as maps say.
func TestDiffKeysMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var old, new []string
		for range r.IntN(40) {
			old = append(old, fmt.Sprintf("sig/%02x/%x/s", r.IntN(8), r.IntN(4)))
		}
		for range r.IntN(40) {
			new = append(new, fmt.Sprintf("sig/%02x/%x/s", r.IntN(8), r.IntN(4)))
		}
		split := func(keys []string) KeyStream {
			a, b := []string{}, []string{}
			for i, k := range keys {
				if i%2 == 0 {
					a = append(a, k)
				} else {
					b = append(b, k)
				}
			}
			if len(keys)%3 == 0 { // sometimes one key in both halves
				a = append(a, keys...)
			}
			return UnionKeys(SliceKeys(a), SliceKeys(b))
		}
		got := collectDiff(t, split(slices.Clone(old)), split(slices.Clone(new)))
		if want := diffModel(old, new); !slices.Equal(got, want) {
			t.Fatalf("round %d: DiffKeys = %q, want %q", round, got, want)
		}
	}
}

// outOfOrder streams keys as given.
type outOfOrder struct {
	keys []string
	i    int
}

func (s *outOfOrder) Next() ([]byte, bool) {
	if s.i >= len(s.keys) {
		return nil, false
	}
	s.i++
	return []byte(s.keys[s.i-1]), true
}
func (s *outOfOrder) Err() error { return nil }
func (s *outOfOrder) Close()     {}

func TestDiffKeysRefusesKeysOutOfOrder(t *testing.T) {
	err := DiffKeys(SliceKeys(nil), &outOfOrder{keys: []string{"b", "a"}}, false, func(DiffOp, []byte) error { return nil })
	if !errors.Is(err, ErrKeyOrder) {
		t.Errorf("DiffKeys of keys out of order: %v", err)
	}
	u := UnionKeys(&outOfOrder{keys: []string{"b", "b"}})
	for _, ok := u.Next(); ok; _, ok = u.Next() {
	}
	if !errors.Is(u.Err(), ErrKeyOrder) {
		t.Errorf("UnionKeys of a key twice in one stream: %v", u.Err())
	}
}

// TestListKeysStreamsAList: a list of many keys comes out whole and in
// order, in batches; one that is not there, or not a list, fails naming
// it; a stream closed early ends its GET.
func TestListKeysStreamsAList(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	var keys []string
	for i := range 3*listKeysBatch + 7 {
		keys = append(keys, storefixture.Ent(format.KindSig, fmt.Sprintf("%08x", i), "s").Key())
	}
	name := storefixture.WriteList(t, st, true, keys...)
	s := ListKeys(ctx, st, name)
	var got []string
	for k, ok := s.Next(); ok; k, ok = s.Next() {
		got = append(got, string(k))
	}
	if s.Err() != nil || !slices.Equal(got, keys) {
		t.Fatalf("ListKeys: %d keys, %v; want %d", len(got), s.Err(), len(keys))
	}
	s.Close()

	early := ListKeys(ctx, st, name)
	if _, ok := early.Next(); !ok {
		t.Fatal(early.Err())
	}
	early.Close() // returns: the goroutine ended

	missing := format.EntryListName(strings.Repeat("0", 64), true)
	m := ListKeys(ctx, st, missing)
	if _, ok := m.Next(); ok || !errors.Is(m.Err(), store.ErrNotFound) || !strings.Contains(m.Err().Error(), missing) {
		t.Errorf("ListKeys of a missing list: %v", m.Err())
	}
	if err := st.Put(ctx, missing, []byte("not zstd")); err != nil {
		t.Fatal(err)
	}
	c := ListKeys(ctx, st, missing)
	if _, ok := c.Next(); ok || !errors.Is(c.Err(), format.ErrCorrupt) {
		t.Errorf("ListKeys of a corrupt list: %v", c.Err())
	}
}

// TestViewKeysAreTheSet: a folded view streams exactly its set, in key
// order, with the kinds asked.
func TestViewKeysAreTheSet(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	es := []format.Entry{
		storefixture.Ent(format.KindSig, "abcdef01", "bob"),
		storefixture.Ent(format.KindSig, "abcdef01", "alice"),
		storefixture.Ent(format.KindSeal, "0123", "s1"),
		storefixture.Ent(format.KindAccepted, "ffff00", "x"),
		storefixture.Ent(format.KindSig, "abcdef0123", "carol"), // a longer id, sharing a prefix
	}
	storefixture.WriteEntryList(t, st, true, es[:3]...)
	storefixture.WriteJournal(t, st, 0, es[3:]...)
	ix, err := Open(ctx, st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	m, err := ix.Mark(ctx)
	if err != nil || !m.Folded() {
		t.Fatalf("mark: %v, folded %v", err, m.Folded())
	}
	want := storefixture.Keys(es...)
	slices.Sort(want)
	read := func(s KeyStream) []string {
		var got []string
		for k, ok := s.Next(); ok; k, ok = s.Next() {
			got = append(got, string(k))
		}
		return got
	}
	if got := read(m.Keys()); !slices.Equal(got, want) {
		t.Errorf("Keys = %q, want %q", got, want)
	}
	var sigs []string
	for _, k := range want {
		if strings.HasPrefix(k, "sig/") {
			sigs = append(sigs, k)
		}
	}
	if got := read(m.Keys(format.KindSig)); !slices.Equal(got, sigs) {
		t.Errorf("Keys(sig) = %q, want %q", got, sigs)
	}
}

func TestParseSource(t *testing.T) {
	id := strings.Repeat("ab", 32)
	for in, want := range map[string]string{
		"now": "now", "journal": "journal", ".oxy/journal": "journal", "pack-entries": "journal",
		"pack-" + id + ".entries": "pack-" + id + ".entries", ".oxy/lists/pack-" + id + ".entries-part": "pack-" + id + ".entries-part",
	} {
		if s, err := ParseSource(in); err != nil || s.String() != want {
			t.Errorf("ParseSource(%q) = %v, %v; want %s", in, s, err, want)
		}
	}
	for _, in := range []string{"", "Now", "pack-" + id, "pack-" + strings.ToUpper(id) + ".entries", "pack-abc.entries", "../pack-" + id + ".entries"} {
		if _, err := ParseSource(in); !errors.Is(err, ErrBadSource) {
			t.Errorf("ParseSource(%q): %v, want ErrBadSource", in, err)
		}
	}
}

func FuzzParseSource(f *testing.F) {
	for _, s := range []string{"now", "journal", ".oxy/lists/pack-" + strings.Repeat("0", 64) + ".entries", "pack-x.entries-part", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		src, err := ParseSource(s)
		if err != nil {
			if !errors.Is(err, ErrBadSource) {
				t.Fatalf("ParseSource(%q): %v does not wrap ErrBadSource", s, err)
			}
			return
		}
		n := 0
		for _, b := range []bool{src.List != "", src.Journal, src.Now} {
			if b {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("ParseSource(%q) = %+v: not exactly one source", s, src)
		}
		if src.List != "" {
			if _, _, ok := format.ParseEntryListName(src.List); !ok {
				t.Fatalf("ParseSource(%q) = %q: not a list name", s, src.List)
			}
		}
	})
}

// TestLastFoldFindsTheNewestFold: the lists retired at the newest time,
// the lines folded first at or after it, and the live complete list.
func TestLastFoldFindsTheNewestFold(t *testing.T) {
	name := func(c byte, complete bool) string {
		return format.EntryListName(strings.Repeat(string(c), 64), complete)
	}
	sn := &store.Snapshot{
		Lists: []store.ListInfo{
			{Name: name('a', true), Complete: true, Retired: true},
			{Name: name('b', true), Complete: true, Retired: true},
			{Name: name('c', false), Retired: true},
			{Name: name('d', true), Complete: true},
			{Name: name('e', false)},
		},
		Retired: []format.RetiredLine{{RetiredAt: 100, Key: name('a', true)}, {RetiredAt: 200, Key: name('b', true)}, {RetiredAt: 200, Key: name('c', false)}},
		Journal: []format.JournalLine{{FoldedAt: 150, Key: "x"}, {FoldedAt: 210, Key: "y"}, {FoldedAt: 250, Key: "z"}, {Key: "w"}},
	}
	got, err := LastFold(sn)
	if err != nil {
		t.Fatal(err)
	}
	want := LastFoldSides{Retired: []string{name('b', true), name('c', false)}, RetiredAt: 200, MarkedAt: 210, Wrote: name('d', true)}
	if !slices.Equal(got.Retired, want.Retired) || got.RetiredAt != want.RetiredAt || got.MarkedAt != want.MarkedAt || got.Wrote != want.Wrote {
		t.Errorf("LastFold = %+v, want %+v", got, want)
	}
	sn.Lists[3].Retired = true
	if _, err := LastFold(sn); !errors.Is(err, ErrNoFold) {
		t.Errorf("LastFold of a store with no live complete list: %v", err)
	}
}
