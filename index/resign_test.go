package index

import (
	"bytes"
	"context"
	"testing"

	"github.com/oxyfs/oxyfs/internal/storefixture"
	"github.com/oxyfs/oxyfs/store"
)

// TestResignWithOneFoldedLineBeforeAndAfterIsSeen (issue 22, item 1): a
// signer signs again an hour after a fold, the journal update that appends
// the new line drops the old folded one past its hour, and a fold marks the
// new line. The key has one folded line before and after: a reader that
// counted lines kept serving the old bytes from its cache. The refresh
// sees a line folded after its view's newest fold, and the reader reads the
// new bytes, with a new SigVersion.
func TestResignWithOneFoldedLineBeforeAndAfterIsSeen(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	k := storefixture.Ent(store.KindSig, objA, "alice")
	other := storefixture.Ent(store.KindSig, objC, "bob")
	old, resigned := bytes.Repeat([]byte("o"), 64), bytes.Repeat([]byte("n"), 100)
	if err := st.Put(ctx, k.Key(), old); err != nil {
		t.Fatal(err)
	}
	storefixture.PutEntries(t, st, other)
	storefixture.WriteEntryList(t, st, true, k, other)
	storefixture.WriteJournal(t, st, 1_000_000, k, other)
	reader, _ := openIndex(t, st)
	if got, err := reader.ReadSig(ctx, k); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("first read: %q %v", got, err)
	}
	v0, o0 := reader.SigVersion(k), reader.SigVersion(other)

	// The re-sign: new bytes, the old line dropped, the new one folded
	// later (the other key's line stays as it was).
	if err := st.Put(ctx, k.Key(), resigned); err != nil {
		t.Fatal(err)
	}
	storefixture.WriteJournalText(t, st, string(store.FormatJournal([]store.JournalLine{
		{FoldedAt: 1_000_000, Key: other.Key()},
		{FoldedAt: 1_000_000 + 3_600_000, Key: k.Key()},
	})))
	if err := reader.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := reader.ReadSig(ctx, k); err != nil || !bytes.Equal(got, resigned) {
		t.Fatalf("after the re-sign and a refresh: %d bytes %v, want the new %d", len(got), err, len(resigned))
	}
	if reader.SigVersion(k) == v0 {
		t.Error("SigVersion of the re-signed signature did not move")
	}
	if reader.SigVersion(other) != o0 {
		t.Error("SigVersion of a signature whose line did not change moved")
	}
}
