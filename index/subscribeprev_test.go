package index

import (
	"context"
	"sync"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestPublishTellsThePreviousView (issue 38): a ChangePublished carries the
// view before the publish (Change.Prev), so a subscriber compares it with
// the current one (DiffKeys) without keeping a view itself: the keys it
// finds added are the refresh's; a quiet refresh's Prev is the view still
// current.
func TestPublishTellsThePreviousView(t *testing.T) {
	ctx := context.Background()
	st, a := foldedStore(t)
	ix, _ := openIndex(t, st)
	before, err := ix.Mark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var prevs []ViewMark
	ix.Subscribe(func(c Change) {
		if c.Kind == ChangePublished {
			mu.Lock()
			prevs = append(prevs, c.Prev)
			mu.Unlock()
		}
	})
	b := storefixture.Ent(format.KindSig, objB, "bob")
	storefixture.PutEntries(t, st, b)
	if _, err := journal.Append(ctx, st, []string{b.Key()}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil { // quiet
		t.Fatal(err)
	}
	now, _ := ix.Mark(ctx)
	mu.Lock()
	defer mu.Unlock()
	if len(prevs) != 2 {
		t.Fatalf("heard %d publishes, want 2", len(prevs))
	}
	if !prevs[0].Same(before) || prevs[0].Same(now) {
		t.Fatalf("the first publish's Prev is not the view before it")
	}
	if !prevs[1].Same(now) {
		t.Fatalf("the quiet refresh's Prev is not the current view")
	}
	var added []string
	err = DiffKeys(prevs[0].Keys(), now.Keys(), false, func(op DiffOp, key []byte) error {
		if op == DiffAdded {
			added = append(added, string(key))
		} else {
			t.Errorf("removed %s", key)
		}
		return nil
	})
	if err != nil || len(added) != 1 || added[0] != b.Key() || a.Key() == b.Key() {
		t.Fatalf("added %v %v, want [%s]", added, err, b.Key())
	}
}
