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

// TestFoldOfTheStoreTheSpecDescribes builds, by hand, a store holding every
// kind of state spec §13.7 names, and folds it completely:
//
//   - older one-list keys (sigs/, seals/, accepted-lists/), one of whose
//     signatures conflicts with a per-object key already there;
//   - per-object keys that no journal line names (an older writer's);
//   - journal lines: unfolded (one key twice), and one folded ten minutes ago;
//   - an older complete list and a partial list, both live.
//
// After the fold exactly one complete list is live and it holds every
// per-object key; the old lists are retired; every line read is marked; the
// marker is written; the conflicting signature keeps its per-object bytes.
// A second fold sends no PUT.
func TestFoldOfTheStoreTheSpecDescribes(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, clk *store.FakeClock) {
		ctx := context.Background()
		const obj, chg = "abcdef01", "123456"

		// Older one-list keys.
		putRecord(t, st, format.LegacyKey(format.KindSig, obj), string(format.LegacySigs([]format.LegacySig{
			{Signer: "alice", Sig: []byte("alice, as the older list has it")},
			{Signer: "bob", Sig: []byte("bob's signature")},
		})))
		putRecord(t, st, format.LegacyKey(format.KindSeal, chg), "change-1\n")
		putRecord(t, st, format.LegacyKey(format.KindAccepted, obj), "main\n")
		// alice re-signed in the per-object layout: her key is already there.
		alice := ekey(format.KindSig, obj, "alice")
		putRecord(t, st, alice, "alice, per object")

		// An older writer's per-object keys: no journal line names them.
		older := []string{ekey(format.KindReceipt, "cdef01", "r1"), ekey(format.KindCert, "aabb", "k1")}
		storefixture.PutObjects(t, st, older...)

		// Journal lines, their keys written first.
		carol, yes, oldSeal := ekey(format.KindSig, obj, "carol"), ekey(format.KindApproval, chg, "yes"), ekey(format.KindSeal, chg, "old")
		storefixture.PutObjects(t, st, carol, yes, oldSeal)
		foldedAt := t0 - ms(hour)/6
		putRecord(t, st, format.JournalKey, fmt.Sprintf("0 %s\n0 %s\n%d %s\n0 %s\n", carol, yes, foldedAt, oldSeal, carol))

		// An older complete list and a partial list.
		oldList := storefixture.WriteList(t, st, true, alice, oldSeal)
		partList := storefixture.WriteList(t, st, false, carol)

		clk.Set(t0)
		rep := mustComplete(t, st)

		// Exactly one live complete list, equal to every per-object key.
		live := liveLists(t, st)
		if len(live) != 1 || !live[0].Complete || live[0].Name != rep.List.Name {
			t.Fatalf("live lists %+v, want exactly the list just written %s", live, rep.List.Name)
		}
		all := perObjectKeys(t, st)
		if got := storefixture.ReadList(t, st, rep.List.Name); !slices.Equal(got, all) {
			t.Errorf("list\n  %v\nwant every per-object key\n  %v", got, all)
		}
		for _, k := range append(older, ekey(format.KindSig, obj, "bob"), ekey(format.KindSeal, chg, "change-1"), ekey(format.KindAccepted, obj, "main")) {
			if !slices.Contains(all, k) {
				t.Errorf("%s is not among the per-object keys", k)
			}
		}
		// The old lists are retired.
		if got := slices.Sorted(slices.Values(rep.Retired)); !slices.Equal(got, slices.Sorted(slices.Values([]string{oldList, partList}))) {
			t.Errorf("retired %v, want %s and %s", rep.Retired, oldList, partList)
		}
		retired := snapshot(t, st).RetiredSet()
		if retired[oldList] != t0 || retired[partList] != t0 {
			t.Errorf("retired record %v, want both old lists retired at %d", retired, t0)
		}
		// Every line read is marked; the folded one keeps its time.
		want := []format.JournalLine{{FoldedAt: t0, Key: carol}, {FoldedAt: t0, Key: yes}, {FoldedAt: foldedAt, Key: oldSeal}, {FoldedAt: t0, Key: carol}}
		if got := storefixture.ReadJournal(t, st); !slices.Equal(got, want) {
			t.Errorf("journal %v, want %v", got, want)
		}
		if rep.Marked != 3 {
			t.Errorf("marked %d, want 3", rep.Marked)
		}
		// The marker, and alice's own bytes.
		if !exists(t, st, format.LegacyFoldedMarker) || !rep.Legacy.Marker {
			t.Errorf("marker not written")
		}
		if got, _ := st.Get(ctx, alice); string(got) != "alice, per object" {
			t.Errorf("alice = %q: the older list overwrote her per-object bytes", got)
		}
		if rep.Legacy.Kept != 1 || rep.Legacy.Copied != 3 {
			t.Errorf("legacy %+v, want 3 copied and alice kept", rep.Legacy)
		}
		// A fresh reader of the folded store finds every entry.
		v, err := freshReader(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range all {
			if !v.keys[k] {
				t.Errorf("fresh reader misses %s", k)
			}
		}

		// A second fold writes nothing new.
		again := mustComplete(t, st)
		if again.Requests.Put != 0 || again.Requests.Delete != 0 || !again.List.Unchanged {
			t.Errorf("second fold: %v, list %+v; want 0 PUT and the list unchanged", again.Requests, again.List)
		}
		t.Logf("first fold %v; second fold %v", rep.Requests, again.Requests)

		// And the store checks clean.
		crep, err := Check(ctx, st, CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !crep.OK() {
			t.Errorf("check found problems:\n%s", crep)
		}
	})
}
