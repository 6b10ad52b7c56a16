package fs

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestOxyRecordsFollowEveryRefresh (issue 37, item 7): .oxy/journal and
// .oxy/retired show what the store holds after every refresh — stat and
// read agree on the new text at once, not the one rendered up to oxyHold
// before (the clock here never moves) — while a descriptor opened before
// the refresh reads the text it opened, whole.
func TestOxyRecordsFollowEveryRefresh(t *testing.T) {
	f, ix, srv, _ := oxyFixture(t)
	ctx := context.Background()
	journal := filepath.Join(srv.Dir(), ".oxy", "journal")
	retired := filepath.Join(srv.Dir(), ".oxy", "retired")
	before := map[string][]byte{}
	for _, p := range []string{journal, retired} {
		statSize(t, p)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		before[p] = data
	}
	// A stat just before the refresh: its text is kept for the open that
	// follows (oxyHold), but not across a refresh that changed it.
	statSize(t, retired)
	held, err := os.Open(journal)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	// Another writer adds a journal line; a fold retires another list.
	if err := otherWriter(t, f).Put(ctx, storefixture.Ent(format.KindSig, "ab77", "erin"), []byte("sig")); err != nil {
		t.Fatal(err)
	}
	newRetired := format.Retired([]format.RetiredLine{
		{RetiredAt: 1700000000000, Key: format.EntryListName(strings.Repeat("0", 64), true)},
		{RetiredAt: 1700000100000, Key: format.EntryListName(strings.Repeat("1", 64), true)},
	})
	if err := f.st.Put(ctx, format.RetiredKey, newRetired); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Invalidate()

	for _, c := range []struct{ p, key string }{{journal, format.JournalKey}, {retired, format.RetiredKey}} {
		want := storeText(t, f.st, c.key)
		if bytes.Equal(want, before[c.p]) {
			t.Fatalf("%s: the store's text did not change", c.key)
		}
		if n := statSize(t, c.p); n != int64(len(want)) {
			t.Errorf("stat %s after the refresh: %d, want the store's %d (before: %d)", c.p, n, len(want), len(before[c.p]))
		}
		if got, err := os.ReadFile(c.p); err != nil || !bytes.Equal(got, want) {
			t.Errorf("read %s after the refresh: %d bytes %v, want the store's %d (before: %d)", c.p, len(got), err, len(want), len(before[c.p]))
		}
	}
	// Both open at once: each descriptor's fstat names what it reads (the
	// kernel names no handle to fstat's GETATTR; go-fuse lends one of the
	// node's: a trial found them disagreeing, 15 of 8,445 opens).
	now, err := os.Open(journal)
	if err != nil {
		t.Fatal(err)
	}
	defer now.Close()
	for _, d := range []struct {
		f    *os.File
		what string
		want []byte
	}{{held, "opened before the refresh", before[journal]}, {now, "opened after it", storeText(t, f.st, format.JournalKey)}} {
		fi, err := d.f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(io.NewSectionReader(d.f, 0, 1<<20))
		if err != nil || !bytes.Equal(got, d.want) {
			t.Errorf("a descriptor %s: %d bytes %v, want the %d it opened", d.what, len(got), err, len(d.want))
		}
		if fi.Size() != int64(len(got)) {
			t.Errorf("a descriptor %s: fstat says %d bytes, it reads %d", d.what, fi.Size(), len(got))
		}
	}
}
