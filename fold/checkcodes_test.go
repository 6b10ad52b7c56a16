package fold

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestCheckGroupsTheFollowOnsOfATruncatedList (issue 42 item 3): a
// truncated complete list put its one problem under a note per key it held
// ("an older writer's key?"), thousands of them. Now it is one problem,
// list-corrupt, with the fold as its fix, and the keys that follow from it
// are one detail under it: a count and a few examples.
func TestCheckGroupsTheFollowOnsOfATruncatedList(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		var keys []string
		for i := range 120 {
			keys = append(keys, ekey(format.KindSig, fmt.Sprintf("ab%04x", i), "signer"))
		}
		storefixture.PutObjects(t, st, keys...)
		name := mustComplete(t, st).List.Name
		data, err := st.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		putRecord(t, st, name, string(data[:len(data)/2]))
		rep, err := Check(ctx, st, CheckOptions{MaxItems: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != 1 {
			t.Fatalf("check of a truncated list: want one problem:\n%s", rep)
		}
		p := rep.Problems[0]
		if p.Code != CodeListCorrupt || p.Severity != SeverityProblem || !slices.Equal(p.Keys, []string{name}) ||
			!strings.Contains(p.Fix, "oxyfs fold "+st.URL()) || len(p.Details) != 1 ||
			!strings.Contains(p.Details[0], "follow-on: 120 per-object keys") || !strings.Contains(p.Details[0], keys[0]) || !strings.Contains(p.Details[0], "and 115 more") {
			t.Errorf("the truncated list's problem:\n%s", p)
		}
		if n := noteWith(rep, keys[0]); n != "" || len(rep.Notes) > 2 {
			t.Errorf("follow-on keys are notes of their own:\n%s", rep)
		}
		// The text: code, message, keys, fix on lines of their own.
		text := rep.String()
		for _, want := range []string{"  - " + CodeListCorrupt + ": live list " + name, "    keys (1): " + name, "    fix: oxyfs fold " + st.URL()} {
			if !strings.Contains(text, want) {
				t.Errorf("text lacks %q:\n%s", want, text)
			}
		}
		// JSON: objects with code, severity, keys, count, message, fix.
		js, _ := json.Marshal(rep)
		var back struct {
			Problems []map[string]any `json:"problems"`
		}
		if err := json.Unmarshal(js, &back); err != nil || len(back.Problems) != 1 {
			t.Fatalf("json: %v %s", err, js)
		}
		for _, f := range []string{"code", "severity", "keys", "count", "message", "fix"} {
			if _, ok := back.Problems[0][f]; !ok {
				t.Errorf("json problem lacks %q: %v", f, back.Problems[0])
			}
		}
		// The fix fixes it.
		mustComplete(t, st)
		if rep := mustCheck(t, st); !rep.OK() {
			t.Errorf("check after the fix:\n%s", rep)
		}
	})
}

// TestCheckFindsAnOlderListBesideTheMarker (issue 42 item 4): an older
// one-list key put beside pack-legacy-folded after the fold that wrote the
// marker holds an entry no per-object key holds: readers and folds trust
// the marker, so the entry is invisible, and nothing said so. An older
// list whose entries were copied is no problem.
func TestCheckFindsAnOlderListBesideTheMarker(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, clk *store.FakeClock) {
		write(t, st, ekey(format.KindSig, "abcdef01", "alice"))
		putRecord(t, st, "sigs/ab/cdef01", "alice YQ==\n") // folded by the first fold
		mustComplete(t, st)
		if !exists(t, st, format.LegacyFoldedMarker) {
			t.Fatal("no marker")
		}
		if rep := mustCheck(t, st); !rep.OK() {
			t.Fatalf("check after the fold:\n%s", rep)
		}
		clk.Advance(hour)
		putRecord(t, st, "sigs/12/3456", "zed YQ==\n")
		rep := mustCheck(t, st)
		hidden := ekey(format.KindSig, "123456", "zed")
		if len(rep.Problems) != 1 || problemWith(rep, CodeLegacyListHidden, hidden, "sigs/12/3456", format.LegacyFoldedMarker) == "" {
			t.Fatalf("check of an older list beside the marker:\n%s", rep)
		}
		if st.Backend() != "file" {
			return
		}
		// On a file store the fix runs as printed: its rm, then the fold.
		rm, fold, ok := strings.Cut(rep.Problems[0].Fix, " && ")
		if !ok || !strings.HasPrefix(fold, "oxyfs fold "+st.URL()) {
			t.Fatalf("the fix is not rm && oxyfs fold: %q", rep.Problems[0].Fix)
		}
		if out, err := exec.Command("sh", "-c", rm).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", rm, err, out)
		}
		mustComplete(t, st)
		if rep := mustCheck(t, st); !rep.OK() {
			t.Errorf("check after the fix %q:\n%s", rep.Problems[0].Fix, rep)
		}
	})
}

// TestCheckNamesWhatDisagreeingListsLack (issue 42 item 4): two live
// complete lists whose contents disagree were reported only by a SHA-256;
// the entries one has and the other lacks are named now, from the bits
// check keeps per listed key (no request more).
func TestCheckNamesWhatDisagreeingListsLack(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		var keys []string
		for i := range 7 {
			keys = append(keys, ekey(format.KindSeal, "abcd", fmt.Sprint(i)))
		}
		storefixture.PutObjects(t, st, keys...)
		a := storefixture.WriteList(t, st, true, keys[:5]...)
		b := storefixture.WriteList(t, st, true, keys[2:]...)
		rep := mustCheck(t, st)
		n := noteWith(rep, CodeListsDisagree, "only in "+a+" (2): "+keys[0]+", "+keys[1]+"\n", "only in "+b+" (2): "+keys[5]+", "+keys[6]+"\n")
		if n == "" || !rep.OK() {
			t.Errorf("check of two complete lists from folds side by side:\n%s", rep)
		}
		// b's content replaced by another set: now a problem, beside the
		// id mismatch.
		_, other, _ := format.EncodeEntryList(keys[4:])
		if err := st.Put(ctx, b, other); err != nil {
			t.Fatal(err)
		}
		rep = mustCheck(t, st)
		if problemWith(rep, CodeListIDMismatch, b) == "" || problemWith(rep, CodeListsDisagree, "only in "+a+" (4): "+strings.Join(keys[:4], ", ")+"\n", "only in "+b+" (2): "+keys[5]+", "+keys[6]+"\n") == "" {
			t.Errorf("check of a replaced complete list:\n%s", rep)
		}
	})
}

// TestOperationsDocListsEveryCode: docs/operations.md says what each code
// means and what to run.
func TestOperationsDocListsEveryCode(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Codes {
		if !strings.Contains(string(doc), "### `"+c+"`") {
			t.Errorf("docs/operations.md has no section for %s", c)
		}
	}
}

// TestCheckSaysNotFoldedOverACorruptList (issue 42 item 5): over a live
// complete list that does not decode, check's report said "folded: yes"
// (and "folded": true in --json) while readers list the per-object
// prefixes and `oxyfs status` says "folded no"; it now says not folded,
// as status does.
func TestCheckSaysNotFoldedOverACorruptList(t *testing.T) {
	forBackends(t, func(t *testing.T, st *store.Store, _ *store.FakeClock) {
		ctx := context.Background()
		storefixture.PutObjects(t, st, ekey(format.KindSig, "abcd", "a"), ekey(format.KindSig, "abce", "b"))
		name := mustComplete(t, st).List.Name
		if rep := mustCheck(t, st); !rep.Folded {
			t.Fatalf("check of a folded store says not folded:\n%s", rep)
		}
		data, err := st.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		putRecord(t, st, name, string(data[:len(data)/2]))
		rep := mustCheck(t, st)
		if rep.Folded || strings.Contains(rep.String(), "folded: yes") || problemWith(rep, CodeListCorrupt) == "" {
			t.Errorf("check over a list that does not decode:\n%s", rep)
		}
	})
}

// TestCheckFixRunsAsPrinted (issue 42 item 3): a fix names the store by
// its URL, and a URL with a query (s3://b?endpoint=…&region=…&prefix=…)
// was printed bare: pasted into a shell, the command was cut at the first
// "&" and ran without the rest of the URL — on another store. A shell now
// reads the printed command's last word as the store's URL.
func TestCheckFixRunsAsPrinted(t *testing.T) {
	u := (&url.URL{Scheme: "file", Path: t.TempDir(), RawQuery: "metadata=skip&no_tmp_dir=true"}).String()
	st := openStore(t, u, store.NewFakeClock(t0))
	write(t, st, ekey(format.KindSig, "abcd", "a"))
	putRecord(t, st, format.JournalKey, readRecordText(t, st, format.JournalKey)+"garbage\n")
	rep := mustCheck(t, st)
	if problemWith(rep, CodeJournalMalformedLine) == "" {
		t.Fatalf("no journal-malformed-line problem:\n%s", rep)
	}
	for _, p := range rep.Problems {
		cmd, _, _ := strings.Cut(p.Fix, " (")
		out, err := exec.Command("sh", "-c", "set -- "+cmd+`; shift $(($# - 1)); printf %s "$1"`).Output()
		if err != nil || string(out) != st.URL() {
			t.Errorf("a shell reads the fix %q as naming the store %q (%v), not %q", cmd, out, err, st.URL())
		}
	}
}

// TestCheckIrregularPackKeyIsItsKey (issue 42 item 3): a symbolic link
// under pack- on a file store was reported with "keys" holding
// "pack-x.entries (symbolic link, not followed)", not a key a script can
// act on; the key is now the key, and what it is a detail.
func TestCheckIrregularPackKeyIsItsKey(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, (&url.URL{Scheme: "file", Path: dir}).String(), store.NewFakeClock(t0))
	write(t, st, ekey(format.KindSig, "abcd", "a"))
	if err := os.Symlink("/nonexistent", dir+"/pack-link.entries"); err != nil {
		t.Fatal(err)
	}
	rep := mustCheck(t, st)
	for _, p := range rep.Problems {
		if p.Code == CodePackKeyIrregular {
			if !slices.Equal(p.Keys, []string{"pack-link.entries"}) || p.Count != 1 || len(p.Details) != 1 || !strings.Contains(p.Details[0], "symbolic link") {
				t.Errorf("the link's finding: keys %q, details %q", p.Keys, p.Details)
			}
			return
		}
	}
	t.Errorf("no %s problem:\n%s", CodePackKeyIrregular, rep)
}

// TestCheckDisagreeingListsNameNoneAsNone: of two complete lists one of
// which holds all the other does, the detail of the smaller read
// "only in NAME (0): " and stopped; it says "none".
func TestCheckDisagreeingListsNameNoneAsNone(t *testing.T) {
	st, _ := newMem(t)
	var keys []string
	for i := range 4 {
		keys = append(keys, ekey(format.KindSeal, "abcd", fmt.Sprint(i)))
	}
	storefixture.PutObjects(t, st, keys...)
	a := storefixture.WriteList(t, st, true, keys...)
	b := storefixture.WriteList(t, st, true, keys[:2]...)
	rep := mustCheck(t, st)
	if noteWith(rep, CodeListsDisagree, "only in "+b+": none", "only in "+a+" (2): "+keys[2]+", "+keys[3]) == "" || strings.Contains(rep.String(), "(0): ") {
		t.Errorf("check of a complete list beside one holding less:\n%s", rep)
	}
}
