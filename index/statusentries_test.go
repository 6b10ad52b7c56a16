package index

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestStatusSaysWhenEntriesAreNotCounted: on a folded store the status
// counts the store's entries; on one that is not folded (prefix listings)
// nothing holds the set, so the status says the entries are not counted
// rather than show what memory holds (journal lines, own writes — 0 on a
// store of per-object keys alone) as the store's count.
func TestStatusSaysWhenEntriesAreNotCounted(t *testing.T) {
	folded := storefixture.NewMem(t)
	genStore(t, folded, storegen.Options{Entries: 150, Seed: 12, Signers: 4, Fold: true})
	fix, _ := openIndex(t, folded)
	if err := fix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	fs := fix.Status()
	if fs.Mode != ModeFolded || !fs.EntriesCounted || fs.Entries == 0 {
		t.Fatalf("folded: mode %s, counted %v, %d entries", fs.Mode, fs.EntriesCounted, fs.Entries)
	}
	if got, want := fs.EntriesText(), strconv.Itoa(fs.Entries)+" entries"; got != want {
		t.Errorf("folded: %q, want %q", got, want)
	}

	unfolded := storefixture.NewMem(t)
	genStore(t, unfolded, storegen.Options{Entries: 150, Unjournaled: 20, Seed: 12, Signers: 4})
	uix, _ := openIndex(t, unfolded)
	if err := uix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	us := uix.Status()
	if us.Mode != ModePrefixListing || us.EntriesCounted {
		t.Fatalf("not folded: mode %s, counted %v", us.Mode, us.EntriesCounted)
	}
	if got := us.EntriesText(); !strings.Contains(got, "entries not counted") || !strings.Contains(got, ModePrefixListing) {
		t.Errorf("not folded: %q says nothing of entries not being counted", got)
	}
}
