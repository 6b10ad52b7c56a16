package storefixture

import (
	"context"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// Open opens the store at url with opts, closed at the test's cleanup.
func Open(t testing.TB, url string, opts store.Options) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// NewMem opens a fresh, empty in-memory store of the bucket layout.
func NewMem(t testing.TB) *store.Store {
	t.Helper()
	return Open(t, "mem://", store.Options{Layout: store.LayoutBucket})
}

// Delta runs fn and returns the requests st sent meanwhile.
func Delta(st *store.Store, fn func()) store.Counts {
	before := st.Counts()
	fn()
	return st.Counts().Sub(before)
}

// Ent is the entry of kind on object with value (a signer, a change, …).
func Ent(kind format.Kind, object, value string) format.Entry {
	return format.Entry{Kind: kind, Object: object, Value: value}
}

// SigBytes are the bytes PutObjects writes for a signature's key.
func SigBytes(key string) []byte { return []byte("sig of " + key) }

// PutObjects writes each key's own object, as every writer does first: a
// signature's bytes (SigBytes), or an empty object for the other kinds.
func PutObjects(t testing.TB, st *store.Store, keys ...string) {
	t.Helper()
	for _, k := range keys {
		var data []byte
		if strings.HasPrefix(k, format.KindSig.Prefix()) {
			data = SigBytes(k)
		}
		if err := st.Put(context.Background(), k, data); err != nil {
			t.Fatal(err)
		}
	}
}

// PutEntries is PutObjects of the entries' keys.
func PutEntries(t testing.TB, st *store.Store, es ...format.Entry) {
	t.Helper()
	PutObjects(t, st, Keys(es...)...)
}

// Keys returns the entries' keys, in their order.
func Keys(es ...format.Entry) []string {
	keys := make([]string, len(es))
	for i, e := range es {
		keys[i] = e.Key()
	}
	return keys
}

// WriteList writes an entry list of keys, complete or partial, as a fold
// would have; it returns the list's name.
func WriteList(t testing.TB, st *store.Store, complete bool, keys ...string) string {
	t.Helper()
	id, data, err := format.EncodeEntryList(keys)
	if err != nil {
		t.Fatal(err)
	}
	name := format.EntryListName(id, complete)
	if err := st.Put(context.Background(), name, data); err != nil {
		t.Fatal(err)
	}
	return name
}

// WriteEntryList is WriteList of the entries' keys.
func WriteEntryList(t testing.TB, st *store.Store, complete bool, es ...format.Entry) string {
	t.Helper()
	return WriteList(t, st, complete, Keys(es...)...)
}

// ReadList reads one entry list, checks it against its name and returns
// its keys.
func ReadList(t testing.TB, st *store.Store, name string) []string {
	t.Helper()
	data, err := st.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if err := format.VerifyEntryList(name, data); err != nil {
		t.Fatal(err)
	}
	keys, err := format.DecodeEntryListAll(data)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// WriteJournal replaces the journal with one line per entry, folded at
// foldedAt (0: unfolded).
func WriteJournal(t testing.TB, st *store.Store, foldedAt int64, es ...format.Entry) {
	t.Helper()
	lines := make([]format.JournalLine, len(es))
	for i, e := range es {
		lines[i] = format.JournalLine{FoldedAt: foldedAt, Key: e.Key()}
	}
	WriteJournalText(t, st, string(format.Journal(lines)))
}

// WriteJournalText replaces the journal with text, by a compare-and-swap
// update as a writer makes.
func WriteJournalText(t testing.TB, st *store.Store, text string) {
	t.Helper()
	_, err := st.UpdateRecord(context.Background(), format.JournalKey, func([]byte, bool) ([]byte, error) {
		return []byte(text), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Retire replaces the retired record with one line per key (retired at 1).
func Retire(t testing.TB, st *store.Store, keys ...string) {
	t.Helper()
	lines := make([]format.RetiredLine, len(keys))
	for i, k := range keys {
		lines[i] = format.RetiredLine{RetiredAt: 1, Key: k}
	}
	_, err := st.UpdateRecord(context.Background(), format.RetiredKey, func([]byte, bool) ([]byte, error) {
		return format.Retired(lines), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ReadJournal reads and parses the journal; a line that does not parse
// fails the test.
func ReadJournal(t testing.TB, st *store.Store) []format.JournalLine {
	t.Helper()
	data, _, err := st.ReadRecord(context.Background(), format.JournalKey)
	if err != nil {
		t.Fatal(err)
	}
	lines, bad := format.ParseJournal(data)
	if bad.Count > 0 {
		t.Fatalf("journal has bad lines: %v", bad)
	}
	return lines
}

// JournalKeys returns the keys of the journal's lines, in its order.
func JournalKeys(t testing.TB, st *store.Store) []string {
	t.Helper()
	var keys []string
	for _, l := range ReadJournal(t, st) {
		keys = append(keys, l.Key)
	}
	return keys
}

// WriteRetiredText replaces the retired record with text, by a
// compare-and-swap update as a writer makes.
func WriteRetiredText(t testing.TB, st *store.Store, text string) {
	t.Helper()
	_, err := st.UpdateRecord(context.Background(), format.RetiredKey, func([]byte, bool) ([]byte, error) {
		return []byte(text), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
