package storegen

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// t0 is the fake clock's start (ms): the journal's partial fold stamps
// its lines with the store's time.
const t0 = int64(1_700_000_000_000)

// genCases are option sets that take each of Generate's paths: journal
// lines past the partial-fold threshold, older writers' keys, older
// one-list keys, a fold (with and without older lists), no objects.
var genCases = map[string]Options{
	"journal":     {Entries: format.PartialFoldThreshold + 50, Seed: 1, Signers: 3},
	"unjournaled": {Entries: 40, Unjournaled: 30, Seed: 2},
	"legacy":      {Entries: 20, Legacy: 25, Seed: 3, Signers: 2},
	"fold":        {Entries: 60, Legacy: 10, Unjournaled: 5, Seed: 4, Fold: true},
	"fold-nolegy": {Entries: 60, Seed: 5, Fold: true},
	"skip":        {Entries: 70, Seed: 6, Fold: true, SkipObjects: true},
	"one-signer":  {Entries: 30, Legacy: 5, Seed: 7, Signers: 1},
}

func memStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "mem://", store.Options{Layout: store.LayoutBucket, Clock: store.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// contents returns every key of st with a digest of its bytes, sorted.
func contents(t *testing.T, st *store.Store) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	err := st.List(ctx, "", "", func(it store.ListItem) error {
		data, err := st.Get(ctx, it.Key)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out = append(out, it.Key+" "+hex.EncodeToString(sum[:8]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestGenerateSameOptionsSameStore: the same options write the same keys
// with the same bytes and report the same, whatever order the parallel
// writes land in.
func TestGenerateSameOptionsSameStore(t *testing.T) {
	for name, g := range genCases {
		t.Run(name, func(t *testing.T) {
			var stores [2][]string
			var reps [2]Report
			for i := range stores {
				st := memStore(t)
				g.Parallel = 1 + 7*i
				rep, err := Generate(context.Background(), st, g)
				if err != nil {
					t.Fatal(err)
				}
				rep.Requests, rep.Elapsed = store.Counts{}, 0
				stores[i], reps[i] = contents(t, st), rep
			}
			if !slices.Equal(stores[0], stores[1]) {
				t.Errorf("two stores of the same options differ:\n%s\n---\n%s", strings.Join(stores[0], "\n"), strings.Join(stores[1], "\n"))
			}
			if d := reportDiff(reps[0], reps[1]); d != "" {
				t.Errorf("two reports of the same options differ: %s", d)
			}
		})
	}
}

// reportDiff names the first field two reports differ in ("" if none).
func reportDiff(a, b Report) string {
	switch {
	case a.Entries != b.Entries || a.Unjournaled != b.Unjournaled || a.LegacyKeys != b.LegacyKeys || a.LegacyEntries != b.LegacyEntries:
		return "counts"
	case a.Objects != b.Objects || a.JournalLines != b.JournalLines || a.List != b.List || a.ListEntries != b.ListEntries:
		return "writes"
	case a.Marker != b.Marker || a.KeyTextBytes != b.KeyTextBytes:
		return "marker or key bytes"
	}
	for k, n := range a.PerKind {
		if b.PerKind[k] != n {
			return "per kind " + k
		}
	}
	if len(a.PerKind) != len(b.PerKind) {
		return "per kind"
	}
	return ""
}

// TestGenerateWritesWhatItReports: the report and OnEntry agree with what
// the store holds: the per-object keys, the journal's lines or the
// complete list (holding every journaled and copied older entry), the
// older one-list keys and the marker.
func TestGenerateWritesWhatItReports(t *testing.T) {
	ctx := context.Background()
	for name, g := range genCases {
		t.Run(name, func(t *testing.T) {
			st := memStore(t)
			where := map[string][]string{}
			perKind := map[string]int{}
			g.OnEntry = func(e format.Entry, w string) {
				where[w] = append(where[w], e.Key())
				perKind[e.Kind.String()]++
			}
			rep, err := Generate(ctx, st, g)
			if err != nil {
				t.Fatal(err)
			}
			current := "journal"
			if g.Fold {
				current = "list"
			}
			if rep.Entries != g.Entries || len(where[current]) != g.Entries {
				t.Errorf("entries: report %d, OnEntry %q %d, asked %d", rep.Entries, current, len(where[current]), g.Entries)
			}
			if rep.Unjournaled != g.Unjournaled || len(where["unjournaled"]) != g.Unjournaled {
				t.Errorf("unjournaled: report %d, OnEntry %d, asked %d", rep.Unjournaled, len(where["unjournaled"]), g.Unjournaled)
			}
			if rep.LegacyKeys != g.Legacy || rep.LegacyEntries != len(where["legacy"]) || rep.LegacyEntries < g.Legacy || rep.LegacyEntries > 2*g.Legacy {
				t.Errorf("legacy: report %d keys %d entries, OnEntry %d, asked %d keys", rep.LegacyKeys, rep.LegacyEntries, len(where["legacy"]), g.Legacy)
			}
			if !mapsEqual(perKind, rep.PerKind) {
				t.Errorf("per kind: report %v, OnEntry %v", rep.PerKind, perKind)
			}
			var keyBytes int64
			for _, k := range where[current] {
				keyBytes += int64(len(k))
			}
			if rep.KeyTextBytes != keyBytes {
				t.Errorf("key text bytes: report %d, OnEntry's keys %d", rep.KeyTextBytes, keyBytes)
			}
			checkStore(t, st, g, rep, where)
		})
	}
}

// checkStore checks what st holds against the report and OnEntry's keys.
func checkStore(t *testing.T, st *store.Store, g Options, rep Report, where map[string][]string) {
	t.Helper()
	ctx := context.Background()
	var objects, legacyKeys, lists int
	marker := false
	err := st.List(ctx, "", "", func(it store.ListItem) error {
		switch {
		case it.Key == format.LegacyFoldedMarker:
			marker = true
		case strings.HasPrefix(it.Key, format.PackPrefix):
			if _, _, ok := format.ParseEntryListName(it.Key); ok {
				lists++
			}
			return nil
		default:
			if _, err := format.ParseKey(it.Key); err != nil {
				legacyKeys++
			}
		}
		objects++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if marker {
		objects--
	}
	if objects != rep.Objects {
		t.Errorf("objects: the store holds %d, report %d", objects, rep.Objects)
	}
	if legacyKeys != rep.LegacyKeys {
		t.Errorf("older one-list keys: the store holds %d, report %d", legacyKeys, rep.LegacyKeys)
	}
	if marker != rep.Marker || marker != (g.Fold && g.Legacy > 0) {
		t.Errorf("marker: the store holds it %v, report %v", marker, rep.Marker)
	}
	if !g.Fold {
		sn, err := st.ReadSnapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.JournalLines != g.Entries || len(sn.Journal) != g.Entries || !slices.Equal(journalKeys(sn), sortedSet(where["journal"])) {
			t.Errorf("journal: report %d lines, journal holds %d, of %d entries", rep.JournalLines, len(sn.Journal), g.Entries)
		}
		return
	}
	want := sortedSet(append(slices.Clone(where["list"]), where["legacy"]...))
	data, err := st.Get(ctx, rep.List)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := format.DecodeEntryList(data, func(k []byte) error { got = append(got, string(k)); return nil }); err != nil {
		t.Fatal(err)
	}
	if lists != 1 || !slices.Equal(got, want) || rep.ListEntries != len(want) {
		t.Errorf("list %s (%d lists): holds %d keys, report %d, want %d", rep.List, lists, len(got), rep.ListEntries, len(want))
	}
}

func sortedSet(keys []string) []string {
	slices.Sort(keys)
	return slices.Compact(keys)
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// journalKeys returns the keys of the snapshot's journal lines, sorted,
// unique.
func journalKeys(sn *store.Snapshot) []string {
	var keys []string
	for _, l := range sn.Journal {
		keys = append(keys, l.Key)
	}
	return sortedSet(keys)
}
