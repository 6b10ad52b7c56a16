package fs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestRefreshAloneTellsTheKernel (issue 40): the mount subscribes to its
// index (index.Subscribe), so a refresh that changed what the kernel keeps
// — here the listing of .oxy/lists/, which it caches like any other — has
// it dropped with no Invalidate by hand, and by the time ix.Refresh
// returns: what oxyfs's refresh loop logs as "refreshed" is what the mount
// shows. The listing is dropped even though the tree it shows did not
// change (a fold that lists exactly what the list and the journal held).
func TestRefreshAloneTellsTheKernel(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{})
	ctx := context.Background()
	lists := filepath.Join(srv.Dir(), ".oxy", "lists")
	names := func() []string {
		des, err := os.ReadDir(lists)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, de := range des {
			out = append(out, de.Name())
		}
		return out
	}
	if got := names(); !slices.Equal(got, []string{f.list}) { // the kernel now keeps this listing
		t.Fatalf(".oxy/lists = %v, want [%s]", got, f.list)
	}
	var keys []string
	for _, e := range f.all() {
		keys = append(keys, e.Key())
	}
	slices.Sort(keys)
	id, data, err := format.EncodeEntryList(keys)
	if err != nil {
		t.Fatal(err)
	}
	folded := format.EntryListName(id, true)
	f.st.Put(ctx, folded, data)
	f.st.Put(ctx, format.RetiredKey, format.Retired([]format.RetiredLine{{RetiredAt: 1, Key: f.list}}))
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Equal(got, []string{folded}) {
		t.Errorf(".oxy/lists right after the refresh = %v, want [%s]", got, folded)
	}
}
