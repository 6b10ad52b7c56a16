package index

import (
	"bytes"
	"context"
	"testing"

	"github.com/oxyfs/oxyfs/internal/storefixture"
	"github.com/oxyfs/oxyfs/store"
)

// TestARefreshOfAnOwnWritesLineMovesNoVersion (the ESTALE double move of
// integration/TestManyHandlesOnOneBucket): this handle re-signs, which
// moves the signature's version once; the refresh that then sees the
// write's own journal line must not move it again — the bytes are the
// same, and a reader the first move sent to look the name up again (the
// kernel retries a stale open once) would be sent again, and fail. A
// refresh after another writer re-signed still shows the new bytes, with
// a new version.
func TestARefreshOfAnOwnWritesLineMovesNoVersion(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	k := storefixture.Ent(store.KindSig, objA, "alice")
	storefixture.PutEntries(t, st, k)
	storefixture.WriteEntryList(t, st, true, k)
	ix, _ := openIndex(t, st)
	if _, err := ix.ReadSig(ctx, k); err != nil {
		t.Fatal(err)
	}
	v0 := ix.SigVersion(k)
	own := bytes.Repeat([]byte("own "), 20)
	if err := ix.Put(ctx, k, own); err != nil {
		t.Fatal(err)
	}
	v1 := ix.SigVersion(k)
	if v1 == v0 {
		t.Fatal("the own write did not move the version")
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if v := ix.SigVersion(k); v != v1 {
		t.Errorf("the refresh that saw only the own write's line moved the version %d → %d (the bytes are the same)", v1, v)
	}
	if got, err := ix.ReadSig(ctx, k); err != nil || !bytes.Equal(got, own) {
		t.Fatalf("read after the refresh: %q %v", got, err)
	}
	if v := ix.SigVersion(k); v != v1 {
		t.Errorf("a read of the own bytes after the refresh moved the version %d → %d", v1, v)
	}

	// Another writer re-signs after this handle's write: the refresh
	// cannot tell its line from the own one by the journal; it reads the
	// key, finds other bytes, and moves the version.
	if err := ix.Put(ctx, k, bytes.Repeat([]byte("own again "), 3)); err != nil {
		t.Fatal(err)
	}
	v2 := ix.SigVersion(k)
	other, _ := openIndex(t, st)
	theirs := []byte("theirs")
	if err := other.Put(ctx, k, theirs); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if v := ix.SigVersion(k); v == v2 {
		t.Error("the refresh after the other writer's re-sign kept the version (it must read the key and find other bytes)")
	}
	if n, err := ix.Stat(ctx, k.Key()); err != nil || n.Size >= 0 {
		t.Errorf("after a refresh that saw a new line: size %d %v, want unknown (-1) until read", n.Size, err)
	}
	if got, err := ix.ReadSig(ctx, k); err != nil || !bytes.Equal(got, theirs) {
		t.Fatalf("read after the other writer's re-sign: %q %v, want %q", got, err, theirs)
	}
	if v := ix.SigVersion(k); v == v2 {
		t.Error("the other writer's re-sign, read after the refresh, did not move the version")
	}
	// And a line of a signature this handle never wrote moves it at the
	// refresh, as before.
	v3 := ix.SigVersion(k)
	if err := other.Put(ctx, k, []byte("theirs again")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if v := ix.SigVersion(k); v == v3 {
		t.Error("a refresh that saw another writer's line of a signature this handle did not write last kept its version")
	}
}
