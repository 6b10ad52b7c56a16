package integration

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCatEverySignatureWithReadAhead: with read-ahead on (the default), a
// `cat` of every signature of a folded store on S3, in sorted order, sends
// exactly one GET per signature, no HEAD and no LIST: read-ahead fetches
// ahead of the reader but never fetches a signature twice.
func TestCatEverySignatureWithReadAhead(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	const entries, signers = 800, 4
	genFolded(t, srv, url, entries, signers)
	mnt := t.TempDir()
	startMount(t, srv, url, mnt)
	r0 := readStatus(t, mnt).Requests

	sigs := lines(run(t, "find", filepath.Join(mnt, "sig"), "-type", "f"))
	if len(sigs) == 0 {
		t.Fatal("no signatures in the generated store")
	}
	// One cat per file, in sorted order, as `cat sig/*/*/*` would.
	for _, p := range slices.Sorted(slices.Values(sigs)) {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			t.Fatalf("read %s: %d bytes, %v", p, len(data), err)
		}
	}
	d := settledRequests(t, mnt).Sub(r0)
	t.Logf("cat of %d signatures with read-ahead: %s", len(sigs), d)
	if d.Get != int64(len(sigs)) || d.Head != 0 || d.List != 0 || d.Put != 0 {
		t.Errorf("cat of every signature sent %s, want exactly get=%d and nothing else", d, len(sigs))
	}
}
