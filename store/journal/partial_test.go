package journal

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

func TestPartialFoldAfterThresholdMarksLines(t *testing.T) {
	st, clk := newMem(t)
	ctx := context.Background()
	var keys []string
	for i := range format.PartialFoldThreshold {
		keys = append(keys, ekey(format.KindSig, fmt.Sprintf("%04x", i), "signer"))
	}
	res, err := Append(ctx, st, keys)
	if err != nil || res.PartialList != "" {
		t.Fatalf("append of exactly %d lines: %+v, %v; want no partial fold", len(keys), res, err)
	}
	clk.Set(t0 + 5)
	one := ekey(format.KindSig, "ffff", "signer")
	res, err = Append(ctx, st, []string{one})
	if err != nil {
		t.Fatal(err)
	}
	if res.PartialList == "" || res.PartialLines != format.PartialFoldThreshold+1 {
		t.Fatalf("append past the threshold: %+v; want a partial list marking %d lines", res, format.PartialFoldThreshold+1)
	}
	if _, complete, ok := format.ParseEntryListName(res.PartialList); !ok || complete {
		t.Errorf("list %q is not a partial list name", res.PartialList)
	}
	got := storefixture.ReadList(t, st, res.PartialList)
	want := slices.Sorted(slices.Values(append(keys, one)))
	if !slices.Equal(got, want) {
		t.Errorf("partial list holds %d keys, want the %d unfolded journal keys", len(got), len(want))
	}
	for _, l := range storefixture.ReadJournal(t, st) {
		if l.FoldedAt != t0+5 {
			t.Fatalf("line %q folded at %d, want %d (the store clock)", l.Key, l.FoldedAt, t0+5)
		}
	}
	sn, err := st.ReadSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Folded() {
		t.Errorf("a partial list alone must not make the store folded")
	}
}

func TestPartialFoldLeavesLinesAddedMeanwhileUnmarked(t *testing.T) {
	st, _ := newMem(t)
	ctx := context.Background()
	a, b := ekey(format.KindSig, "abcd", "alice"), ekey(format.KindSig, "abcd", "bob")
	write(t, st, a, b)
	data, _, err := st.ReadRecord(ctx, format.JournalKey)
	if err != nil {
		t.Fatal(err)
	}
	read, _ := format.ParseJournal(data)

	// Meanwhile alice signs again (the same key) and carol signs.
	c := ekey(format.KindSig, "abcd", "carol")
	write(t, st, a)
	write(t, st, c)

	res, err := partialFrom(ctx, st, read)
	if err != nil {
		t.Fatal(err)
	}
	if res.Marked != 2 {
		t.Errorf("marked %d, want the 2 lines read", res.Marked)
	}
	if got := storefixture.ReadList(t, st, res.List); !slices.Equal(got, []string{a, b}) {
		t.Errorf("partial list = %v, want only what was read", got)
	}
	var folded []bool
	for _, l := range storefixture.ReadJournal(t, st) {
		folded = append(folded, l.Folded())
	}
	if want := []bool{true, true, false, false}; !slices.Equal(folded, want) {
		t.Errorf("folded = %v, want %v (alice's second line and carol's stay)", folded, want)
	}
}

func TestPartialFoldOfNothingWritesNothing(t *testing.T) {
	st, _ := newMem(t)
	before := st.Counts()
	res, err := Partial(context.Background(), st)
	if err != nil || res.List != "" {
		t.Fatalf("partial fold of an empty journal: %+v, %v", res, err)
	}
	if d := st.Counts().Sub(before); d.Put != 0 {
		t.Errorf("sent %v, want no PUT", d)
	}
}

func TestPartialFoldOfTheSameKeysFindsItsListThere(t *testing.T) {
	st, _ := newMem(t)
	a := ekey(format.KindApproval, "abcd", "ok")
	write(t, st, a)
	first, err := Partial(context.Background(), st)
	if err != nil || first.Existed {
		t.Fatalf("first partial fold: %+v, %v", first, err)
	}
	write(t, st, a) // the same key again: the same list content
	second, err := Partial(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if second.List != first.List || !second.Existed || second.Marked != 1 {
		t.Errorf("second partial fold: %+v; want the same list found there and its one line marked", second)
	}
}

func TestPartialFoldMarksNothingWhenItsListIsRetired(t *testing.T) {
	st, _ := newMem(t)
	a := ekey(format.KindApproval, "abcd", "ok")
	write(t, st, a)
	first, err := Partial(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	storefixture.Retire(t, st, first.List) // as a complete fold retires it
	write(t, st, a)                        // the same key again, so the same partial list
	second, err := Partial(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if second.List != first.List || second.Deferred == "" || second.Marked != 0 {
		t.Errorf("partial fold onto a retired list: %+v; want it deferred with nothing marked", second)
	}
	lines := storefixture.ReadJournal(t, st)
	if last := lines[len(lines)-1]; last.Folded() {
		t.Errorf("the new line was marked although only a retired list holds it")
	}
}
