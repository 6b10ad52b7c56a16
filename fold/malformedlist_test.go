package fold

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// rawList writes an entry list of keys (sorted here) as they are, malformed
// ones included, under the name its text's SHA-256 gives.
func rawList(t *testing.T, st *store.Store, complete bool, keys []string) string {
	t.Helper()
	slices.Sort(keys)
	text := format.EntryListHeader + "\n" + strings.Join(keys, "\n") + "\n"
	sum := sha256.Sum256([]byte(text))
	name := format.EntryListName(hex.EncodeToString(sum[:]), complete)
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	if err := st.Put(context.Background(), name, enc.EncodeAll([]byte(text), nil)); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestFoldSkipsAKeyThatCannotNameAFile (issue 42 item 5): a live list
// holding a key with a ".." component stopped every fold on the file
// backend ("cannot name a file": the guard looked it up), so the fold could
// not repair the store, and what a fold left out was called "gone". The
// fold now leaves it out without a look-up and names it malformed; check
// names it malformed too, with the fold as its fix; after the fold check
// passes and no entry whose key exists was lost.
func TestFoldSkipsAKeyThatCannotNameAFile(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		keys := []string{ekey(format.KindSeal, "abcd", "s1"), ekey(format.KindSig, "abcd", "a")} // sorted
		write(t, st, keys...)
		mustComplete(t, st)
		bad := []string{"sig/ab/../x", "sig/ab/cd/.."}
		list := rawList(t, st, true, append(slices.Clone(keys), bad...))
		crep := mustCheck(t, st)
		if problemWith(crep, CodeListKeyMalformed, list, "malformed, not gone", `"sig/ab/../x"`, "oxyfs fold") == "" {
			t.Errorf("check does not call the list's keys malformed:\n%s", crep)
		}
		var warned []string
		rep, err := Complete(ctx, st, Options{Warn: func(s string) { warned = append(warned, s) }})
		if err != nil {
			t.Fatalf("fold of a list holding %q: %v", bad, err)
		}
		if !slices.Equal(rep.ListMalformed, []string{"sig/ab/../x", "sig/ab/cd/.."}) || rep.LeftOut != 0 ||
			!strings.Contains(rep.String(), "malformed keys the lists read hold") || !strings.Contains(strings.Join(warned, "\n"), `malformed key "sig/ab/../x"`) {
			t.Errorf("fold report does not name the malformed keys (warned %q):\n%s", warned, rep)
		}
		if got := storefixture.ReadList(t, st, rep.List.Name); !slices.Equal(got, keys) {
			t.Errorf("the new list holds %q, want %q", got, keys)
		}
		if crep := mustCheck(t, st); !crep.OK() {
			t.Errorf("check after the fold:\n%s", crep)
		}
	})
}

// TestFoldAndCheckReportAnEmptySignature (issue 42 item 4): fold carried a
// 0-byte signature key into its list without a word. It still lists it
// (the key exists), and names it; check gives its code and the re-sign fix.
func TestFoldAndCheckReportAnEmptySignature(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		write(t, st, ekey(format.KindSig, "abcd", "a"))
		empty := ekey(format.KindSig, "abcd", "empty")
		if err := st.Put(ctx, empty, nil); err != nil {
			t.Fatal(err)
		}
		var warned []string
		rep, err := Complete(ctx, st, Options{Warn: func(s string) { warned = append(warned, s) }})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rep.EmptySignatures, []string{empty}) || !strings.Contains(rep.String(), "0-byte signature keys") ||
			!strings.Contains(strings.Join(warned, "\n"), empty+" is 0 bytes") {
			t.Errorf("fold does not report the 0-byte signature %s (warned %q):\n%s", empty, warned, rep)
		}
		if got := storefixture.ReadList(t, st, rep.List.Name); !slices.Contains(got, empty) {
			t.Errorf("the fold left out %s, whose key exists: %q", empty, got)
		}
		crep := mustCheck(t, st)
		if len(crep.Problems) != 1 || crep.Problems[0].Code != CodeSigEmpty || !slices.Equal(crep.Problems[0].Keys, []string{empty}) ||
			!strings.Contains(crep.Problems[0].Fix, "oxyfs put --force "+st.URL()) {
			t.Errorf("check of a 0-byte signature:\n%s", crep)
		}
	})
}
