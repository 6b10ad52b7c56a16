package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// Issue 42 on S3 (versitygw): check says what to run, and the repair it
// names cleans the journal by compare-and-swap without losing a line.

// s3Folded is a fresh folded bucket: keys written as a writer writes them,
// then folded.
func s3Folded(t *testing.T) (*testservers.Server, string, *store.Store, []string) {
	t.Helper()
	srv := testservers.Start(t, "s3")
	url := srv.NewBucket(t)
	st, err := store.Open(context.Background(), url, store.Options{Layout: store.LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	obj := newObject(t)
	keys := []string{
		format.Entry{Kind: format.KindSig, Object: obj, Value: "alice"}.Key(),
		format.Entry{Kind: format.KindSeal, Object: obj, Value: "change-1"}.Key(),
	}
	storefixture.PutObjects(t, st, keys...)
	if _, err := journal.Append(context.Background(), st, keys); err != nil {
		t.Fatal(err)
	}
	if _, err := fold.Complete(context.Background(), st, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	return srv, url, st, keys
}

// checkProblems runs oxyfs check --json and returns its exit code and its
// problems' codes, with the first problem whole.
func checkProblems(t *testing.T, srv *testservers.Server, url string) (int, []string, fold.Problem) {
	t.Helper()
	r := oxyfs(t, srv, "check", "--layout", "bucket", "--json", url)
	var rep fold.CheckReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("check --json does not parse: %v\n%s", err, r)
	}
	var codes []string
	var first fold.Problem
	for i, p := range rep.Problems {
		codes = append(codes, p.Code)
		if i == 0 {
			first = p
		}
	}
	return r.code, codes, first
}

// TestS3CheckJSONAndDropMalformed: a journal with CRLF line endings and a
// garbage line: check --json names one problem, journal-malformed-line,
// with its key and the fix; the fix, run as named, saves the line and
// removes it; check then exits 0 and the entries the CRLF lines name are
// read.
func TestS3CheckJSONAndDropMalformed(t *testing.T) {
	srv, url, st, keys := s3Folded(t)
	ctx := context.Background()
	text, _, err := st.ReadRecord(ctx, format.JournalKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, format.JournalKey, []byte(strings.ReplaceAll(string(text), "\n", "\r\n")+"garbage\r\n")); err != nil {
		t.Fatal(err)
	}
	code, codes, p := checkProblems(t, srv, url)
	// The URL's query ("?…&…") is quoted, so that the fix runs as printed.
	fix := "oxyfs fold --drop-malformed bad-lines.txt '" + st.URL() + "'"
	if code != 1 || !slices.Equal(codes, []string{fold.CodeJournalMalformedLine}) || !slices.Equal(p.Keys, []string{format.JournalKey}) ||
		p.Severity != fold.SeverityProblem || !strings.HasPrefix(p.Fix, fix) {
		t.Fatalf("check --json of a CRLF journal with a garbage line: exit %d, %v, %+v", code, codes, p)
	}
	saved := filepath.Join(t.TempDir(), "bad-lines.txt")
	r := mustOxyfs(t, srv, "fold", "--layout", "bucket", "--drop-malformed", saved, url)
	if got, err := os.ReadFile(saved); err != nil || !strings.Contains(string(got), "\ngarbage\r\n") {
		t.Errorf("saved %q, %v\n%s", got, err, r)
	}
	if code, codes, _ := checkProblems(t, srv, url); code != 0 || len(codes) != 0 {
		t.Errorf("check after the repair: exit %d, %v", code, codes)
	}
	lines := journalLines(t, st)
	for _, k := range keys {
		if !slices.ContainsFunc(lines, func(l format.JournalLine) bool { return l.Key == k }) {
			t.Errorf("the repair lost the line of %s: %v", k, lines)
		}
	}
}

// TestS3DropMalformedKeepsALineAppendedMeanwhile: another writer appends
// a line while the repair runs (between its read and its conditional
// write, from the save hook): versitygw refuses the repair's write, the
// repair reads again, and the line stays; the bad line is saved once.
func TestS3DropMalformedKeepsALineAppendedMeanwhile(t *testing.T) {
	_, _, st, _ := s3Folded(t)
	ctx := context.Background()
	text, _, err := st.ReadRecord(ctx, format.JournalKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, format.JournalKey, append(text, "garbage\n"...)); err != nil {
		t.Fatal(err)
	}
	other := format.Entry{Kind: format.KindSig, Object: newObject(t), Value: "bob"}.Key()
	var saved []string
	raced := false
	rep, err := fold.Complete(ctx, st, fold.Options{DropMalformed: true, SaveDropped: func(record string, lines []string) error {
		saved = append(saved, lines...)
		if !raced && record == format.JournalKey {
			raced = true
			storefixture.PutObjects(t, st, other)
			if _, err := journal.Append(ctx, st, []string{other}); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(saved, []string{"garbage"}) || rep.DroppedMalformed.CASTries < 3 {
		t.Errorf("saved %q in %d tries; want the line once, after a lost race", saved, rep.DroppedMalformed.CASTries)
	}
	lines := journalLines(t, st)
	if !slices.ContainsFunc(lines, func(l format.JournalLine) bool { return l.Key == other }) {
		t.Errorf("the line appended during the repair is gone: %v", lines)
	}
	if after, _, _ := st.ReadRecord(ctx, format.JournalKey); strings.Contains(string(after), "garbage") {
		t.Errorf("journal after the repair: %q", after)
	}
}

// TestS3CheckGroupsATruncatedList: a truncated complete list is one
// problem, list-corrupt, whose follow-on keys are a detail under it; the
// fold it names puts it right.
func TestS3CheckGroupsATruncatedList(t *testing.T) {
	srv, url, st, _ := s3Folded(t)
	ctx := context.Background()
	sn, err := st.ReadSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name := sn.LiveLists()[0].Name
	data, err := st.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, name, data[:len(data)/2]); err != nil {
		t.Fatal(err)
	}
	code, codes, p := checkProblems(t, srv, url)
	if code != 1 || !slices.Equal(codes, []string{fold.CodeListCorrupt}) || !slices.Equal(p.Keys, []string{name}) ||
		p.Fix != "oxyfs fold '"+st.URL()+"' (retires it and writes a complete list of the listing and the journal)" {
		t.Fatalf("check --json of a truncated list: exit %d, %v, %+v", code, codes, p)
	}
	mustOxyfs(t, srv, "fold", "--layout", "bucket", url)
	if code, codes, _ := checkProblems(t, srv, url); code != 0 {
		t.Errorf("check after the fold: exit %d, %v", code, codes)
	}
}
