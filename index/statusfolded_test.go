package index

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// Status's "folded" (.oxy/status, oxyfs_folded) says that the entries come
// from a folded set (user trial 52). A folded store (a live complete list)
// whose lists are not trusted or cannot be read is read by listing
// prefixes: "folded" was true there, beside "mode": "prefix-listing".
func TestStatusIsFoldedOnlyWhenTheEntriesAreTheFoldedSet(t *testing.T) {
	a := storefixture.Ent(format.KindSig, objA, "alice")
	for _, tc := range []struct {
		name   string
		fill   func(t *testing.T, st *store.Store)
		mode   string
		folded bool
	}{
		{"folded", func(t *testing.T, st *store.Store) {
			storefixture.WriteEntryList(t, st, true, a)
		}, ModeFolded, true},
		{"not folded", func(t *testing.T, st *store.Store) {
			storefixture.WriteEntryList(t, st, false, a)
		}, ModePrefixListing, false},
		{"a retired line that does not parse names the list", func(t *testing.T, st *store.Store) {
			list := storefixture.WriteEntryList(t, st, true, a)
			storefixture.WriteRetiredText(t, st, "12x "+list+"\n")
		}, ModePrefixListing, false},
		{"the list does not decode", func(t *testing.T, st *store.Store) {
			name := format.EntryListName(strings.Repeat("0", 64), true)
			if err := st.Put(context.Background(), name, []byte("not zstd")); err != nil {
				t.Fatal(err)
			}
		}, ModePrefixListing, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := storefixture.NewMem(t)
			storefixture.PutEntries(t, st, a)
			tc.fill(t, st)
			sn, err := st.ReadSnapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ix, _ := openIndex(t, st)
			if err := ix.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			s := ix.Status()
			if s.Mode != tc.mode || s.Folded != tc.folded {
				t.Fatalf("mode %q folded %v (the store has a live complete list: %v), want mode %q folded %v", s.Mode, s.Folded, sn.Folded(), tc.mode, tc.folded)
			}
			var doc map[string]any
			if b, err := json.Marshal(s); err != nil || json.Unmarshal(b, &doc) != nil || doc["folded"] != tc.folded {
				t.Fatalf("status JSON folded = %v (%v), want %v", doc["folded"], err, tc.folded)
			}
		})
	}
}
