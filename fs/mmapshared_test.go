package fs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestSharedMappingsOfChangedSignatures (issue 37, item 6): mmap with
// MAP_SHARED and PROT_READ (Python's mmap default, many tools') works on a
// signature this mount just created, one another writer re-signed and one
// this mount re-signed — all opened with direct I/O, which without
// FUSE_DIRECT_IO_ALLOW_MMAP fails such a mapping with ENODEV — and shows
// its bytes; a shared mapping held across a replacement keeps showing the
// version it mapped, whole. The mappings are read in a child process
// (mapShared), never in this one, which serves the mount.
func TestSharedMappingsOfChangedSignatures(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	ctx := context.Background()
	check := func(what, p string, want []byte) *sharedMap {
		t.Helper()
		m, err := mapShared(t, p)
		if err != nil {
			t.Errorf("mmap MAP_SHARED of %s: %v", what, err)
			return nil
		}
		if got := m.read(); !bytes.Equal(got, want) {
			t.Errorf("MAP_SHARED mapping of %s: %d bytes %.16q…, want the %d written", what, len(got), got, len(want))
		}
		return m
	}

	// Just created by this mount.
	fresh := storefixture.Ent(format.KindSig, "ab12cd34", "dave")
	freshBytes := bytes.Repeat([]byte("fresh signature "), 300)
	if err := os.MkdirAll(filepath.Dir(srv.path(fresh)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(srv.path(fresh), freshBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	check("a signature this mount just wrote", srv.path(fresh), freshBytes)

	// Re-signed by another writer, with a shared mapping of the old
	// version held across the replacement.
	alice := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	old := f.sigs[alice.Key()]
	held := check("a signature before its re-sign", srv.path(alice), old)
	resigned := bytes.Repeat([]byte("R"), 3*len(old)+11)
	if err := otherWriter(t, f).Put(ctx, alice, resigned); err != nil {
		t.Fatal(err)
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Invalidate()
	check("a signature another writer re-signed", srv.path(alice), resigned)
	if held != nil {
		if got := held.read(); !bytes.Equal(got, old) {
			t.Errorf("a shared mapping held across the re-sign: %d bytes %.16q…, want the %d it mapped", len(got), got, len(old))
		}
	}

	// Re-signed through this mount.
	bob := storefixture.Ent(format.KindSig, "ab12cd34", "bob")
	mine := bytes.Repeat([]byte("mine "), 1000)
	if err := os.WriteFile(srv.path(bob), mine, 0o644); err != nil {
		t.Fatal(err)
	}
	check("a signature this mount re-signed", srv.path(bob), mine)
}
