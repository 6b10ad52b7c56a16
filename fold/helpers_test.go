package fold

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// t0 is where every test clock starts: a plausible wall time in ms.
const t0 = int64(1_700_000_000_000)

// backend opens a fresh, empty store of one kind.
type backend struct {
	name string
	open func(t testing.TB, clk store.Clock) *store.Store
}

// backends are the stores every behavioural test runs against.
var backends = []backend{
	{"mem", func(t testing.TB, clk store.Clock) *store.Store { return openStore(t, "mem://", clk) }},
	{"file", func(t testing.TB, clk store.Clock) *store.Store {
		return openStore(t, (&url.URL{Scheme: "file", Path: t.TempDir()}).String(), clk)
	}},
}

func openStore(t testing.TB, u string, clk store.Clock) *store.Store {
	t.Helper()
	return storefixture.Open(t, u, store.Options{Layout: store.LayoutBucket, Clock: clk, StoreClock: clk})
}

// newMem opens an empty mem store on a fake clock standing at t0.
func newMem(t testing.TB) (*store.Store, *store.FakeClock) {
	clk := store.NewFakeClock(t0)
	return openStore(t, "mem://", clk), clk
}

// forBackends runs a test against every backend.
func forBackends(t *testing.T, fn func(t *testing.T, st *store.Store, clk *store.FakeClock)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			clk := store.NewFakeClock(t0)
			fn(t, b.open(t, clk), clk)
		})
	}
}

// ekey formats an entry key.
func ekey(kind format.Kind, object, value string) string {
	return format.Entry{Kind: kind, Object: object, Value: value}.Key()
}

// write writes entries the way a writer does: each key's own object first
// (a signature's bytes, or empty), then one journal append for all of them.
func write(t testing.TB, st *store.Store, keys ...string) journal.AppendResult {
	t.Helper()
	storefixture.PutObjects(t, st, keys...)
	res, err := journal.Append(context.Background(), st, keys)
	if err != nil {
		t.Fatalf("append %v: %v", keys, err)
	}
	return res
}

// putRecord writes a record's raw text.
func putRecord(t testing.TB, st *store.Store, key, text string) {
	t.Helper()
	if err := st.Put(context.Background(), key, []byte(text)); err != nil {
		t.Fatal(err)
	}
}

// readRecordText reads a record as text.
func readRecordText(t testing.TB, st *store.Store, key string) string {
	t.Helper()
	data, _, err := st.ReadRecord(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// snapshot reads the store's snapshot.
func snapshot(t testing.TB, st *store.Store) *store.Snapshot {
	t.Helper()
	sn, err := st.ReadSnapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

// perObjectKeys lists every entry prefix: the keys every writer writes first.
func perObjectKeys(t testing.TB, st *store.Store) []string {
	t.Helper()
	var keys []string
	for _, k := range format.Kinds {
		err := st.List(context.Background(), k.Prefix(), "", func(it store.ListItem) error {
			keys = append(keys, it.Key)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(keys)
	return keys
}

// exists reports whether a key exists.
func exists(t testing.TB, st *store.Store, key string) bool {
	t.Helper()
	ok, err := st.Exists(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// readerView is what a fresh reader of spec §13.7 "Reading" finds.
type readerView struct {
	folded bool
	keys   map[string]bool
}

// freshReader opens the store as a new handle would: on a folded store it
// reads every live list and the journal, folded lines included, and lists
// nothing else; on a store that is not folded it lists the per-object
// prefixes and reads the older one-list keys unless the marker is there.
//
// It reads the retired record before the pack listing (readSnapshot), and
// opens again when a live list vanished before it was read: a collection
// deleted it, an hour after a fold retired it.
func freshReader(ctx context.Context, st *store.Store) (readerView, error) {
	var err error
	for range listAttempts {
		var v readerView
		v, err = readOnce(ctx, st)
		if !errors.Is(err, store.ErrNotFound) {
			return v, err
		}
	}
	return readerView{}, err
}

func readOnce(ctx context.Context, st *store.Store) (readerView, error) {
	v := readerView{keys: map[string]bool{}}
	sn, err := readSnapshot(ctx, st)
	if err != nil {
		return v, err
	}
	v.folded = sn.Folded()
	if v.folded {
		for _, l := range sn.Journal {
			v.keys[l.Key] = true
		}
		for _, l := range sn.LiveLists() {
			data, err := st.Get(ctx, l.Name)
			if err != nil {
				return v, fmt.Errorf("reader: live list: %w", err)
			}
			if _, err := format.DecodeEntryList(data, func(k []byte) error {
				v.keys[string(k)] = true
				return nil
			}); err != nil {
				return v, fmt.Errorf("reader: %s: %w", l.Name, err)
			}
		}
		return v, nil
	}
	for _, k := range format.Kinds {
		if err := st.List(ctx, k.Prefix(), "", func(it store.ListItem) error {
			v.keys[it.Key] = true
			return nil
		}); err != nil {
			return v, err
		}
	}
	if sn.Marker {
		return v, nil
	}
	for _, ll := range format.LegacyLists() {
		err := st.List(ctx, ll.Prefix, "", func(it store.ListItem) error {
			kind, obj, ok := format.ParseLegacyKey(it.Key)
			if !ok {
				return nil
			}
			data, err := st.Get(ctx, it.Key)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			es, _ := decodeLegacy(kind, obj, data)
			for _, e := range es {
				v.keys[e.key] = true
			}
			return nil
		})
		if err != nil {
			return v, err
		}
	}
	return v, nil
}

// liveLists returns the live lists of the store.
func liveLists(t testing.TB, st *store.Store) []store.ListInfo {
	t.Helper()
	return snapshot(t, st).LiveLists()
}

// mustComplete runs a complete fold and fails the test on an error.
func mustComplete(t testing.TB, st *store.Store) Report {
	t.Helper()
	rep, err := Complete(context.Background(), st, Options{Warn: func(s string) { t.Logf("warn: %s", s) }})
	if err != nil {
		t.Fatalf("complete fold: %v", err)
	}
	return rep
}

// hour is format.GracePeriod, for clock arithmetic in tests.
const hour = format.GracePeriod

// ms is a duration in wall milliseconds.
func ms(d time.Duration) int64 { return d.Milliseconds() }
