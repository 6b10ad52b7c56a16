package index

import (
	"context"
	"errors"
	"slices"
	"testing"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// lyingStore is a mem store over a blobtest driver whose lies a test sets.
func lyingStore(t *testing.T) (*store.Store, *blobtest.Bucket) {
	t.Helper()
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: store.NewFakeClock(1_700_000_000_000)})
	t.Cleanup(func() { st.Close() })
	return st, drv
}

// TestRefreshKeepsItsViewWhenARecordAnswers404 (issue 23 item 7): a refresh
// that gets 404 for pack-entries or pack-retired after the handle read it
// keeps the view it had and says why. Taken as the record's absence, the
// journal's 404 dropped the entries only the journal names; the retired
// record's made every retired list live again, and a forgotten object's
// entries came back.
func TestRefreshKeepsItsViewWhenARecordAnswers404(t *testing.T) {
	ctx := context.Background()
	a := storefixture.Ent(format.KindSig, objA, "alice")
	x := storefixture.Ent(format.KindSig, objB, "xavier") // forgotten
	j := storefixture.Ent(format.KindSeal, objC, "s1")    // only in the journal
	for _, record := range []string{format.JournalKey, format.RetiredKey} {
		t.Run(record, func(t *testing.T) {
			st, drv := lyingStore(t)
			storefixture.PutEntries(t, st, a, x)
			if _, err := fold.Complete(ctx, st, fold.Options{}); err != nil {
				t.Fatal(err)
			}
			opts := fold.CollectOptions{Apply: true, ForgetObjects: []fold.ForgetObject{{Object: objB}}}
			if _, err := fold.Collect(ctx, st, opts); err != nil {
				t.Fatal(err)
			}
			wix, _ := openIndex(t, st)
			if err := wix.Put(ctx, j, nil); err != nil {
				t.Fatal(err)
			}
			ix, w := openIndex(t, st)
			if err := ix.Load(ctx); err != nil {
				t.Fatal(err)
			}
			want := keysOf([]format.Entry{a, j})
			if got := walkEntries(t, ix); !slices.Equal(got, want) {
				t.Fatalf("before: %v, want %v", got, want)
			}
			drv.SetLiar(blobtest.Liar{NotFound: func(op blobtest.Op, key string) bool { return key == record }})
			if err := ix.Refresh(ctx); !errors.Is(err, ErrRecordVanished) {
				t.Errorf("refresh with %s answering 404: %v, want ErrRecordVanished", record, err)
			}
			if got := walkEntries(t, ix); !slices.Equal(got, want) {
				t.Errorf("after a 404 for %s the view shows %v, want %v as before", record, got, want)
			}
			if !hasWarning(w.all(), record) {
				t.Errorf("nothing said of the 404 for %s: %q", record, w.all())
			}
			drv.SetLiar(blobtest.Liar{})
			if err := ix.Refresh(ctx); err != nil {
				t.Fatalf("refresh once the record answers: %v", err)
			}
			if got := walkEntries(t, ix); !slices.Equal(got, want) {
				t.Errorf("once the record answers: %v, want %v", got, want)
			}
		})
	}
}
