package fold

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

func TestFoldMarksOnlyLinesItRead(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, clk *store.FakeClock) {
		ctx := context.Background()
		a, b, c := ekey(format.KindSig, "abcd", "alice"), ekey(format.KindSig, "abcd", "bob"), ekey(format.KindSig, "abcd", "carol")
		write(t, st, a)
		write(t, st, a) // alice signed twice: two lines, one key
		write(t, st, b)
		clk.Set(t0 + 7)
		rep, err := complete(ctx, st, Options{}, &hooks{afterScan: func() {
			// While the fold runs: alice signs a third time, carol signs.
			write(t, st, a)
			write(t, st, c)
		}})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Marked != 3 {
			t.Errorf("marked %d, want the 3 lines read", rep.Marked)
		}
		var got []string
		for _, l := range storefixture.ReadJournal(t, st) {
			got = append(got, fmt.Sprintf("%d %s", l.FoldedAt, strings.TrimPrefix(l.Key, "sig/ab/cd/")))
		}
		want := []string{"1700000000007 alice", "1700000000007 alice", "1700000000007 bob", "0 alice", "0 carol"}
		if !slices.Equal(got, want) {
			t.Errorf("journal = %v, want %v", got, want)
		}
		// A fresh reader still finds carol, in her unfolded line.
		v, err := freshReader(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if !v.folded || !v.keys[c] {
			t.Errorf("fresh reader: folded=%v, carol found=%v; want both", v.folded, v.keys[c])
		}
	})
}

func TestFoldKeepsTheFoldedAtOfLinesFoldedBefore(t *testing.T) {
	st, clk := newMem(t)
	a, b := ekey(format.KindSeal, "abcd", "s1"), ekey(format.KindSeal, "abcd", "s2")
	storefixture.PutObjects(t, st, a, b)
	putRecord(t, st, format.JournalKey, fmt.Sprintf("%d %s\n0 %s\n", t0-5, a, b))
	clk.Set(t0 + 9)
	rep := mustComplete(t, st)
	if rep.Marked != 1 {
		t.Errorf("marked %d, want 1", rep.Marked)
	}
	want := fmt.Sprintf("%d %s\n%d %s\n", t0-5, a, t0+9, b)
	if got := readRecordText(t, st, format.JournalKey); got != want {
		t.Errorf("journal = %q, want %q", got, want)
	}
}

func TestFoldWritesNothingWhenUnchanged(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		write(t, st, ekey(format.KindSig, "abcd", "alice"), ekey(format.KindReceipt, "0011", "r"))
		first := mustComplete(t, st)
		if !first.List.Written {
			t.Fatalf("first fold wrote no list: %+v", first.List)
		}
		second := mustComplete(t, st)
		if !second.List.Unchanged || second.List.Name != first.List.Name {
			t.Errorf("second fold list: %+v, want unchanged %s", second.List, first.List.Name)
		}
		if second.Requests.Put != 0 || second.Requests.Delete != 0 {
			t.Errorf("second fold sent %v, want no PUT and no DELETE", second.Requests)
		}
		if len(second.Retired) != 0 || second.Marked != 0 {
			t.Errorf("second fold retired %v and marked %d, want nothing", second.Retired, second.Marked)
		}
	})
}

func TestFoldRetiresEveryLiveListItReadButNeverItsOwn(t *testing.T) {
	st, clk := newMem(t)
	a, b, c := ekey(format.KindSig, "abcd", "a"), ekey(format.KindSig, "abcd", "b"), ekey(format.KindSig, "abcd", "c")
	write(t, st, a)
	old := mustComplete(t, st).List.Name
	write(t, st, b)
	part, err := journal.Partial(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	write(t, st, c)
	clk.Set(t0 + 3)
	rep := mustComplete(t, st)
	if !slices.Equal(rep.Retired, []string{old, part.List}) && !slices.Equal(rep.Retired, []string{part.List, old}) {
		t.Errorf("retired %v, want the old complete list and the partial list", rep.Retired)
	}
	live := liveLists(t, st)
	if len(live) != 1 || live[0].Name != rep.List.Name || !live[0].Complete {
		t.Fatalf("live lists %+v, want only %s", live, rep.List.Name)
	}
	if got := storefixture.ReadList(t, st, rep.List.Name); !slices.Equal(got, []string{a, b, c}) {
		t.Errorf("list = %v", got)
	}
	wantRetired := fmt.Sprintf("%d %s\n%d %s\n", t0+3, rep.Retired[0], t0+3, rep.Retired[1])
	if got := readRecordText(t, st, format.RetiredKey); got != wantRetired {
		t.Errorf("retired record = %q, want %q", got, wantRetired)
	}
}

func TestFoldReportsMalformedKeysAndLeavesThemOut(t *testing.T) {
	st, _ := newMem(t)
	good := ekey(format.KindSig, "abcd", "alice")
	write(t, st, good)
	bad := []string{"sig/ab/cd", "sig/AB/cd/x", "seal/ab/cde/v", "cert/ab/cd/x/y"}
	storefixture.PutObjects(t, st, bad...)
	var warned []string
	rep, err := Complete(context.Background(), st, Options{Warn: func(s string) { warned = append(warned, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := slices.Sorted(slices.Values(bad)); !slices.Equal(rep.Malformed, want) {
		t.Errorf("malformed = %v, want %v", rep.Malformed, want)
	}
	if len(warned) < len(bad) {
		t.Errorf("warned %d times, want once per malformed key: %v", len(warned), warned)
	}
	if got := storefixture.ReadList(t, st, rep.List.Name); !slices.Equal(got, []string{good}) {
		t.Errorf("list = %v, want only the good key", got)
	}
	if rep.Listed["sig"] != 1 {
		t.Errorf("listed = %v", rep.Listed)
	}
}

func TestFoldKeepsJournalKeysWithNoObjectAndReportsThem(t *testing.T) {
	st, _ := newMem(t)
	ghost := ekey(format.KindSig, "abcd", "ghost")
	if _, err := journal.Append(context.Background(), st, []string{ghost}); err != nil { // no object written
		t.Fatal(err)
	}
	rep := mustComplete(t, st)
	if !slices.Equal(rep.JournalOnly, []string{ghost}) {
		t.Errorf("journal only = %v, want the ghost key reported", rep.JournalOnly)
	}
	if got := storefixture.ReadList(t, st, rep.List.Name); !slices.Equal(got, []string{ghost}) {
		t.Errorf("list = %v, want the journal key kept", got)
	}
}

func TestFoldDryRunWritesNothing(t *testing.T) {
	st, _ := newMem(t)
	write(t, st, ekey(format.KindSig, "abcd", "a"))
	old := mustComplete(t, st).List.Name
	write(t, st, ekey(format.KindSig, "abcd", "b"))
	putRecord(t, st, "sigs/ab/cdef", "zed c2ln\n") // an older list, and no marker (the first fold wrote it)
	if err := st.Delete(context.Background(), format.LegacyFoldedMarker); err != nil {
		t.Fatal(err)
	}
	journalBefore := readRecordText(t, st, format.JournalKey)
	rep, err := Complete(context.Background(), st, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests.Put != 0 || rep.Requests.Delete != 0 {
		t.Errorf("dry run sent %v", rep.Requests)
	}
	if !slices.Equal(rep.Retired, []string{old}) || rep.Marked != 1 || rep.List.Unchanged || rep.List.Written {
		t.Errorf("dry run report: retired %v marked %d list %+v; want old retired, 1 line, a new list", rep.Retired, rep.Marked, rep.List)
	}
	if rep.Legacy.Copied != 1 || rep.List.Entries != 3 {
		t.Errorf("dry run: legacy %+v, entries %d; want 1 copy and 3 entries", rep.Legacy, rep.List.Entries)
	}
	if exists(t, st, rep.List.Name) || exists(t, st, format.LegacyFoldedMarker) || exists(t, st, "sig/ab/cdef/zed") {
		t.Errorf("dry run wrote something")
	}
	if readRecordText(t, st, format.JournalKey) != journalBefore || readRecordText(t, st, format.RetiredKey) != "" {
		t.Errorf("dry run changed a record")
	}
	if !strings.Contains(rep.String(), "would write") {
		t.Errorf("report does not say what it would write:\n%s", rep)
	}
}

// TestFoldOntoAListRetiredOverTheWindowAgoLeavesTheStoreUnfolded: the set
// is a list retired hours ago (a collection may delete it any time), and the
// live list holds an entry whose key is gone. The fold neither relies on the
// retired list nor keeps the live one: it retires it, so readers list the
// prefixes and show exactly the store; the next collection deletes the old
// list and its fold writes it afresh.
func TestFoldOntoAListRetiredOverTheWindowAgoLeavesTheStoreUnfolded(t *testing.T) {
	ctx := context.Background()
	st, clk := newMem(t)
	a, x := ekey(format.KindSig, "abcd", "a"), ekey(format.KindSig, "abcd", "x")
	write(t, st, a)
	listA := mustComplete(t, st).List.Name
	write(t, st, x)
	clk.Advance(2 * hour)                   // the line of a is dropped by the next update
	listAX := mustComplete(t, st).List.Name // retires listA
	// x's object is deleted outside a collection: back to the set {a}.
	if err := st.Delete(ctx, x); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * hour)
	if _, err := journal.Append(ctx, st, []string{a}); err != nil { // drops expired lines
		t.Fatal(err)
	}
	rep := mustComplete(t, st)
	if rep.List.Name != listA || rep.Deferred == "" || !rep.Unfolded || rep.LeftOut != 1 {
		t.Fatalf("fold onto the set of a list retired 4 h ago: %+v deferred %q unfolded %v left out %d", rep.List, rep.Deferred, rep.Unfolded, rep.LeftOut)
	}
	if rep.Marked != 0 || !slices.Equal(rep.Retired, []string{listAX}) || rep.List.Written || rep.List.Revived {
		t.Errorf("fold marked %d, retired %v, list %+v; want listAX retired, nothing else", rep.Marked, rep.Retired, rep.List)
	}
	if live := liveLists(t, st); len(live) != 0 {
		t.Errorf("live lists %+v, want none", live)
	}
	v, err := freshReader(ctx, st)
	if err != nil || v.folded || !maps.Equal(v.keys, map[string]bool{a: true}) {
		t.Fatalf("fresh reader: folded %v keys %v (%v), want {a} by listing", v.folded, v.keys, err)
	}
	// A collection deletes the retired list; its fold then writes the list afresh.
	crep, err := Collect(ctx, st, CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(crep.Deleted, listA) || crep.Fold.List.Name != listA || !crep.Fold.List.Written {
		t.Errorf("collection: deleted %v, fold %+v; want %s deleted and written afresh", crep.Deleted, crep.Fold.List, listA)
	}
	if live := liveLists(t, st); len(live) != 1 || live[0].Name != listA {
		t.Errorf("live lists %+v, want only %s", live, listA)
	}
}

// TestFoldOntoAListRetiredOverTheWindowAgoDefersWhenNothingLeft: the same,
// but the live list holds nothing the set leaves out (only an older
// writer's entry is new): the fold defers and the store stays folded, its
// readers missing only what spec §13.7 lets them miss.
func TestFoldOntoAListRetiredOverTheWindowAgoDefersWhenNothingLeft(t *testing.T) {
	st, clk := newMem(t)
	a, b := ekey(format.KindSig, "abcd", "a"), ekey(format.KindSig, "abcd", "b")
	storefixture.PutObjects(t, st, a, b)
	listAB := mustComplete(t, st).List.Name
	// Retire it by hand as another implementation's fold would, long ago,
	// with a list of {a} live instead.
	listA := storefixture.WriteList(t, st, true, a)
	putRecord(t, st, format.RetiredKey, fmt.Sprintf("%d %s\n", clk.NowMs(), listAB))
	clk.Advance(2 * hour)
	rep := mustComplete(t, st)
	if rep.List.Name != listAB || rep.Deferred == "" || rep.Unfolded || rep.LeftOut != 0 || len(rep.Retired) != 0 {
		t.Fatalf("fold: %+v deferred %q unfolded %v left out %d retired %v", rep.List, rep.Deferred, rep.Unfolded, rep.LeftOut, rep.Retired)
	}
	if live := liveLists(t, st); len(live) != 1 || live[0].Name != listA {
		t.Errorf("live lists %+v, want %s", live, listA)
	}
}

func TestFoldRewritesACorruptLiveListOfItsSet(t *testing.T) {
	st, _ := newMem(t)
	write(t, st, ekey(format.KindSig, "abcd", "a"))
	name := mustComplete(t, st).List.Name
	putRecord(t, st, name, "not zstd")
	rep := mustComplete(t, st)
	if !rep.List.Unchanged || !rep.List.Repaired {
		t.Errorf("list report %+v, want unchanged and repaired", rep.List)
	}
	storefixture.ReadList(t, st, name) // verifies
}

func TestFoldOfAnEmptyStoreMakesItFolded(t *testing.T) {
	st, _ := newMem(t)
	rep := mustComplete(t, st)
	if !rep.List.Written || rep.List.Entries != 0 {
		t.Errorf("list %+v, want an empty list written", rep.List)
	}
	if !snapshot(t, st).Folded() || !exists(t, st, format.LegacyFoldedMarker) {
		t.Errorf("store not folded, or marker missing")
	}
}

func TestFoldStoppedBeforeMarkingLosesNothing(t *testing.T) {
	ctx := context.Background()
	st, fb := newFaultStore(t, store.NewFakeClock(t0))
	a, b := ekey(format.KindSig, "abcd", "a"), ekey(format.KindSig, "abcd", "b")
	write(t, st, a)
	mustComplete(t, st)
	write(t, st, b)
	for _, step := range []struct {
		op, key string
	}{
		{"put", ".entries"},        // writing the list
		{"put", format.RetiredKey}, // retiring
		{"put", format.JournalKey}, // marking
	} {
		fb.failIf(func(op, key string) bool { return op == step.op && strings.HasSuffix(key, step.key) })
		if _, err := Complete(ctx, st, Options{}); err == nil {
			t.Fatalf("fold with %s %s failing succeeded", step.op, step.key)
		}
		fb.failOn("", "")
		v, err := freshReader(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if !v.keys[a] || !v.keys[b] {
			t.Errorf("after a fold stopped at %s %s a fresh reader misses entries: %v", step.op, step.key, v.keys)
		}
	}
	rep := mustComplete(t, st)
	if rep.Marked != 1 || len(liveLists(t, st)) != 1 {
		t.Errorf("the fold run again: marked %d, live %v", rep.Marked, liveLists(t, st))
	}
}

func TestFoldProgressAndReportReadWell(t *testing.T) {
	st, _ := newMem(t)
	write(t, st, ekey(format.KindSig, "abcd", "a"))
	phases := map[string]bool{}
	rep, err := Complete(context.Background(), st, Options{Progress: func(done, total int64, phase string) { phases[phase] = true }})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"list", "write", "mark"} {
		if !phases[p] {
			t.Errorf("no progress for phase %q (got %v)", p, phases)
		}
	}
	s := rep.String()
	for _, want := range []string{"journal: 1 line read", "sig=1", "wrote pack-", "marked folded: 1", "requests:"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

func TestCompleteRefusesTheDirectoryLayout(t *testing.T) {
	st, err := store.Open(context.Background(), "file://"+t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := Complete(context.Background(), st, Options{}); !errors.Is(err, journal.ErrDirectoryLayout) {
		t.Errorf("Complete on a directory store = %v, want ErrDirectoryLayout", err)
	}
}
