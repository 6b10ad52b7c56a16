package index

import (
	"context"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestSigCacheStatsCountHitsMissesEvictions reads signatures through a cache
// that holds one at a time and checks the counts exactly.
func TestSigCacheStatsCountHitsMissesEvictions(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, strings.Repeat("a", 64), "alice")
	b := storefixture.Ent(format.KindSig, strings.Repeat("b", 64), "alice")
	storefixture.PutEntries(t, st, a, b)
	storefixture.WriteJournal(t, st, 0, a, b)
	cost := int64(len(a.Key())+len(storefixture.SigBytes(a.Key()))) + sigItemOverhead
	ix := openWith(t, st, Options{SigCacheBytes: cost, ReadAhead: -1})
	for _, e := range []format.Entry{a, a, a, b, a} {
		if _, err := ix.ReadSig(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// a: miss, hit, hit; b: miss (a evicted); a: miss (b evicted).
	want := SigCacheStats{Hits: 2, Misses: 3, Evictions: 2}
	if got := ix.Status().SigCache; got != want {
		t.Fatalf("sig cache stats %+v, want %+v", got, want)
	}
}

// TestStatusReportsLastRefresh checks the time and result of the last
// Refresh, and the failures counted.
func TestStatusReportsLastRefresh(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	ix := openWith(t, st, Options{})
	if s := ix.Status(); !s.LastRefreshTime.IsZero() || s.LastRefreshError != "" || s.RefreshFailures != 0 {
		t.Fatalf("before any refresh: %v %q %d", s.LastRefreshTime, s.LastRefreshError, s.RefreshFailures)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	s := ix.Status()
	if s.LastRefreshTime.IsZero() || s.LastRefreshError != "" || s.RefreshFailures != 0 || s.Refreshes != 1 {
		t.Fatalf("after a refresh: %v %q failures=%d refreshes=%d", s.LastRefreshTime, s.LastRefreshError, s.RefreshFailures, s.Refreshes)
	}
	st.Close() // every request fails from now on
	err := ix.Refresh(ctx)
	if err == nil {
		t.Fatal("refresh of a closed store succeeded")
	}
	s2 := ix.Status()
	if s2.LastRefreshError != err.Error() || s2.RefreshFailures != 1 || s2.Refreshes != 2 || s2.LastRefreshTime.Before(s.LastRefreshTime) {
		t.Fatalf("after a failed refresh: %v %q failures=%d refreshes=%d", s2.LastRefreshTime, s2.LastRefreshError, s2.RefreshFailures, s2.Refreshes)
	}
}
