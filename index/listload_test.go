package index

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/memtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// listKeys returns n valid signature keys, distinct for each seed.
func listKeys(n, seed int) []string {
	keys := make([]string, n)
	for i := range keys {
		obj := fmt.Sprintf("%02x%06x%08x", i&0xff, seed, i)
		keys[i] = "sig/" + obj[:2] + "/" + obj[2:] + "/v"
	}
	return keys
}

// openLoaded opens and loads an index whose warnings are collected.
func openLoaded(t testing.TB, st *store.Store) (*Index, *warnings) {
	t.Helper()
	ix, w := openIndex(t, st)
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ix, w
}

// setLimits lowers the bounds of loadLists for one test.
func setLimits(t *testing.T, bytesInFlight int64, keys int) {
	oldB, oldK := listBytesInFlight, maxLiveKeys
	listBytesInFlight, maxLiveKeys = bytesInFlight, keys
	t.Cleanup(func() { listBytesInFlight, maxLiveKeys = oldB, oldK })
}

// Six garbage partial lists, each well under the per-list cap: an open
// holds at most the bytes in flight, not all six, and stops at the first.
func TestLiveListsAreDecodedAsTheyArrive(t *testing.T) {
	const each = 48 << 20
	setLimits(t, each, format.MaxEntryListKeys)
	st := storefixture.NewMem(t)
	storefixture.WriteList(t, st, true, listKeys(10, 0)...)
	garbage := bytes.Repeat([]byte("not zstd"), each/8)
	for i := range 6 {
		sum := sha256.Sum256([]byte{byte(i)})
		if err := st.Put(context.Background(), format.EntryListName(hex.EncodeToString(sum[:]), false), garbage); err != nil {
			t.Fatal(err)
		}
	}
	garbage = nil
	var ix *Index
	var w *warnings
	before := st.Counts()
	peak := memtest.Peak(func() { ix, w = openLoaded(t, st) })
	if ix.Status().Mode != ModePrefixListing || !hasWarning(w.all(), "falling back to prefix listing") {
		t.Fatalf("mode %s, warnings %q; want prefix listing and a warning", ix.Status().Mode, w.all())
	}
	// The first garbage list stops the rest: at most one more GET was
	// in flight beside it (the budget holds one list of this size).
	gets := st.Counts().Sub(before).Get
	t.Logf("peak heap %d MiB, %d GETs", peak/memtest.MiB, gets)
	if gets > 5 {
		t.Errorf("open sent %d GETs; want the records, the complete list, the first garbage list and at most one more", gets)
	}
	if peak > 2*each {
		t.Errorf("open of six garbage lists of %d MiB took %d MiB of heap, want < %d (one list in flight)", each/memtest.MiB, peak/memtest.MiB, 2*each/memtest.MiB)
	}
}

// Eight partial lists, each under the cap on keys, whose union is over it:
// the open falls back to prefix listing, as for one list over its cap, and
// stops decoding at the cap.
func TestLiveListsShareOneKeyCap(t *testing.T) {
	const n = 1 << 17
	st := storefixture.NewMem(t)
	storefixture.WriteList(t, st, true, listKeys(10, 0)...)
	for i := range 8 {
		storefixture.WriteList(t, st, false, listKeys(n, i+1)...)
	}
	// Past the cap first (an index a test holds stays live until its
	// cleanup, and would weigh on the GC's target of the second).
	setLimits(t, format.MaxEntryListsInFlight, n+n/4)
	var ix *Index
	var w *warnings
	capped := memtest.Peak(func() { ix, w = openLoaded(t, st) })
	if ix.Status().Mode != ModePrefixListing {
		t.Fatalf("mode %s; want prefix listing past the cap of all live lists", ix.Status().Mode)
	}
	found := false
	for _, m := range w.all() {
		found = found || strings.Contains(m, "cap of all live lists") && strings.Contains(m, "falling back to prefix listing")
	}
	if !found {
		t.Errorf("warnings %q; want one naming the cap of all live lists and the fallback", w.all())
	}
	ix.Close()

	// What the set of all eight lists takes, under no cap on keys.
	maxLiveKeys = 16 * n
	all := memtest.Peak(func() { ix, _ = openLoaded(t, st) })
	if ix.Status().Mode != ModeFolded || ix.Status().Entries < 8*n {
		t.Fatalf("without a cap: mode %s, %d entries; want folded, %d", ix.Status().Mode, ix.Status().Entries, 8*n+10)
	}
	t.Logf("peak heap: %d MiB capped at %d keys, %d MiB for all eight lists", capped/memtest.MiB, n+n/4, all/memtest.MiB)
	if capped*2 > all {
		t.Errorf("open past the cap took %d MiB of heap; want under half of the %d MiB of all eight lists", capped/memtest.MiB, all/memtest.MiB)
	}
}

// Six partial lists that the pack listing shows at 8 bytes each and whose
// GETs bring 48 MiB each (the object replaced between the LIST and the
// GET, as a listing that understates sizes would have it): each GET is
// capped at its listed size, which the budget reserved, so none is read.
func TestLiveListGetIsCappedAtItsListedSize(t *testing.T) {
	const each = 48 << 20
	setLimits(t, each, format.MaxEntryListKeys)
	ctx := context.Background()
	inner := memblob.OpenBucket(nil)
	drv := blobtest.New(inner)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket})
	t.Cleanup(func() { st.Close() })
	storefixture.WriteList(t, st, true, listKeys(10, 0)...)
	lying := map[string]bool{}
	for i := range 6 {
		sum := sha256.Sum256([]byte{byte(i)})
		name := format.EntryListName(hex.EncodeToString(sum[:]), false)
		if err := st.Put(ctx, name, []byte("8 bytes.")); err != nil {
			t.Fatal(err)
		}
		lying[name] = true
	}
	// The big body is written once, before the heap is measured; the hook
	// copies it under a list's name (memblob shares the bytes).
	if err := inner.WriteAll(ctx, "big", bytes.Repeat([]byte("not zstd"), each/8), nil); err != nil {
		t.Fatal(err)
	}
	drv.SetHooks(blobtest.Hooks{Before: func(ctx context.Context, op blobtest.Op, key string) error {
		if op == blobtest.OpGet && lying[key] {
			return inner.Copy(ctx, key, "big", nil)
		}
		return nil
	}})
	var ix *Index
	var w *warnings
	peak := memtest.Peak(func() { ix, w = openLoaded(t, st) })
	t.Logf("peak heap %d MiB", peak/memtest.MiB)
	found := false
	for _, m := range w.all() {
		found = found || strings.Contains(m, "listed at 8 bytes") && strings.Contains(m, "falling back to prefix listing")
	}
	if ix.Status().Mode != ModePrefixListing || !found {
		t.Errorf("mode %s, warnings %q; want prefix listing and a warning naming the listed size", ix.Status().Mode, w.all())
	}
	if peak > each {
		t.Errorf("open took %d MiB of heap, want < %d: no body over its listed size is read", peak/memtest.MiB, each/memtest.MiB)
	}
}
