package fold

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestListEntriesSplitsLargeKinds: a kind that fills more than a page is
// listed by <hh> directory, and nothing is lost on the way: keys directly
// under the kind prefix and bad keys inside a directory are reported as
// malformed, every entry key is in the list, and the LISTs are the first
// page, the delimited listing's pages and each directory's pages.
func TestListEntriesSplitsLargeKinds(t *testing.T) {
	const page = 3
	ctx := context.Background()
	st := storefixture.Open(t, "mem://", store.Options{Layout: store.LayoutBucket, PageSize: page})
	pages := func(n int) int { return max(1, (n+page-1)/page) }

	perDir := map[string]int{"0a": 1, "3c": 4, "ab": 7, "ff": 3}
	var valid []string
	var sigKeys int
	for hh, n := range perDir {
		for i := range n {
			valid = append(valid, ekey(format.KindSig, fmt.Sprintf("%s%062x", hh, i), "alice"))
		}
		sigKeys += n
	}
	bad := []string{"sig/stray", "sig/ab/bad"}
	seals := []string{ekey(format.KindSeal, "01"+fmt.Sprintf("%062x", 1), "v1"), ekey(format.KindSeal, "02"+fmt.Sprintf("%062x", 2), "v2")}
	valid = append(valid, seals...)
	storefixture.PutObjects(t, st, append(slices.Clone(valid), bad...)...)
	slices.Sort(valid)

	before := st.Counts()
	sc, err := listEntries(ctx, st, &progress{})
	if err != nil {
		t.Fatal(err)
	}
	lists := st.Counts().Sub(before).List

	if !slices.Equal(sc.keys, valid) {
		t.Errorf("keys\n  %v\nwant\n  %v", sc.keys, valid)
	}
	slices.Sort(bad)
	if !slices.Equal(sc.malformed, bad) {
		t.Errorf("malformed %v, want %v", sc.malformed, bad)
	}
	if sc.perKind[format.KindSig] != sigKeys || sc.perKind[format.KindSeal] != len(seals) {
		t.Errorf("per kind %v", sc.listedReport())
	}
	// sig: one page, then the delimited listing (its directories and the
	// stray key), then each directory (ab holds one bad key too).
	want := 1 + pages(len(perDir)+1)
	for hh, n := range perDir {
		if hh == "ab" {
			n++
		}
		want += pages(n)
	}
	want += 1                   // seal: one page
	want += format.NumKinds - 2 // the empty kinds: one page each
	if lists != int64(want) {
		t.Errorf("%d LISTs, want %d", lists, want)
	}
}
