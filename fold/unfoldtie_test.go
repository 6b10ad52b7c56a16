package fold

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestACollectionAfterAFoldLeftTheStoreUnfoldedInTheSameMillisecond: a fold
// marks lines into its list, and a collection's fold in the same
// millisecond finds its set in a list retired over the revive window ago
// and retires every list (the store reads as not folded: revive.go's
// tooLate). The next collection, still in that millisecond, must see the
// retirement as later than the lines' fold — it came after it — and not
// take the lines no live list holds for a list the pack listing hid
// (seed 49010 of the byte simulation: gc refused for the lines' hour).
func TestACollectionAfterAFoldLeftTheStoreUnfoldedInTheSameMillisecond(t *testing.T) {
	ctx := context.Background()
	st, clk := newMem(t)
	a, b := ekey(format.KindSig, "abcd", "a"), ekey(format.KindSig, "abce", "b")
	d, x := ekey(format.KindSig, "dd01", "d"), ekey(format.KindSig, "ee99", "x")
	write(t, st, a, b)
	listAB := mustComplete(t, st).List.Name
	write(t, st, d)
	if rep := mustComplete(t, st); !slices.Equal(rep.Retired, []string{listAB}) {
		t.Fatalf("second fold retired %v, want %s", rep.Retired, listAB)
	}
	// Past the revive window, within the hour: listAB may not be revived,
	// nor deleted yet.
	clk.Advance(55 * time.Minute)
	write(t, st, a, x) // a re-signed, x new
	if rep := mustComplete(t, st); rep.Marked != 2 {
		t.Fatalf("third fold marked %d lines, want 2 (a and x)", rep.Marked)
	}
	// The same millisecond: forgetting d and x leaves the set of listAB.
	crep, err := Collect(ctx, st, CollectOptions{ForgetObjects: []ForgetObject{{Object: "dd01"}, {Object: "ee99"}}, Apply: true})
	if err != nil {
		t.Fatalf("collection forgetting dd01 and ee99: %v", err)
	}
	if crep.Fold.List.Name != listAB || !crep.Fold.Unfolded {
		t.Fatalf("its fold: list %s unfolded %v, want %s and the store left unfolded", crep.Fold.List.Name, crep.Fold.Unfolded, listAB)
	}
	if live := liveLists(t, st); len(live) != 0 {
		t.Fatalf("live lists %+v, want none", live)
	}
	// Still the same millisecond.
	if _, err := Collect(ctx, st, CollectOptions{}); err != nil {
		t.Fatalf("the next collection in the same millisecond: %v", err)
	}
}

// TestRetireStampComesAfterOnlyNearTheClock: a retirement that must come
// after lines folded in the clock's millisecond, or up to maxRetireLead
// ahead of it, is stamped one past them; one whose lines' time is further
// ahead (another host's skewed clock) or behind keeps the clock's time.
func TestRetireStampComesAfterOnlyNearTheClock(t *testing.T) {
	const now = 1_700_000_000_000
	for _, c := range []struct{ after, want int64 }{
		{0, now},
		{now - 1, now},
		{now, now + 1},
		{now + maxRetireLead - 1, now + maxRetireLead},
		{now + maxRetireLead, now},
	} {
		if got := retireStamp(now, c.after); got != c.want {
			t.Errorf("retireStamp(now, now%+d) = now%+d, want now%+d", c.after-now, got-now, c.want-now)
		}
	}
}
