package index

import (
	"bytes"
	"context"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestTwoPutsOfAKeyCacheWhatTheStoreHolds: two writers put one signature
// through one handle at once, and the first PUT's response arrives after
// the second's whole write. The handle must then serve the bytes the store
// holds — the second's. Without Index.putLocks the first write recorded its
// bytes in the signature cache last, and the handle served them while the
// store held the second's.
func TestTwoPutsOfAKeyCacheWhatTheStoreHolds(t *testing.T) {
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket})
	t.Cleanup(func() { st.Close() })
	ix, _ := openIndex(t, st)
	ctx := context.Background()
	e := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	first, second := bytes.Repeat([]byte("1"), 10), bytes.Repeat([]byte("2"), 20)

	held, release := drv.HoldFirstPut(e.Key()) // the first PUT landed and waits, until release
	errs := make(chan error, 2)
	go func() { errs <- ix.Put(ctx, e, first) }()
	<-held
	secondDone := make(chan error, 1)
	go func() { secondDone <- ix.Put(ctx, e, second) }()
	// The first write's response goes back once the second write returned
	// (without putLocks), or once the second has waited a while (with
	// them it waits for the first: its PUT has not been sent).
	select {
	case err := <-secondDone:
		errs <- err
		secondDone = nil
	case <-time.After(time.Second):
	}
	release()
	if secondDone != nil {
		errs <- <-secondDone
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	held2, err := st.Get(ctx, e.Key())
	if err != nil {
		t.Fatal(err)
	}
	got, err := ix.ReadSig(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, held2) {
		t.Errorf("the handle serves %q, the store holds %q", got, held2)
	}
	if n := ix.putLocks.Len(); n != 0 {
		t.Errorf("%d keys' write locks kept after the writes", n)
	}
}
