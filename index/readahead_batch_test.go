package index

import (
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestReadAheadRefillsTheWindowInBatches: a reader that reads every
// signature in order extends read-ahead's window in batches of half of it,
// not by one key a read (each extension a worker started for a lone GET),
// and still sends exactly one GET a signature.
func TestReadAheadRefillsTheWindowInBatches(t *testing.T) {
	st, _, sigs := sigFixture(t, 1200, 0)
	const window = 64
	ix := openWith(t, st, Options{ReadAhead: window})
	d := storefixture.Delta(st, func() {
		catAll(t, ix, sigs)
		ix.Close()
	})
	if d != (store.Counts{Get: int64(len(sigs))}) {
		t.Fatalf("cat of %d signatures sent %v, want one GET each", len(sigs), d)
	}
	ix.ra.mu.Lock()
	refills, spawned := ix.ra.refills, ix.ra.spawned
	ix.ra.mu.Unlock()
	// The window grows from readAheadFirst by doubling (3 refills to 64),
	// then is refilled once every window/2 reads.
	if most := int64(len(sigs)/(window/2) + 8); refills > most {
		t.Fatalf("%d signatures read in order extended the window %d times, want at most %d (batches of %d)", len(sigs), refills, most, window/2)
	}
	t.Logf("%d signatures: %d refills, %d workers started", len(sigs), refills, spawned)
}
