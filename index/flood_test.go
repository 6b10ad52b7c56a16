package index

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
	"github.com/oxyfs/oxyfs/testkit/memtest"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// TestFloodedStatsStayWithinTheReadersBudget: a server that floods every
// signature's body (no length, without end; issue 36). Stats (SigSize)
// and reads (ReadSig), and the read-ahead they start, are admitted against
// the readers' budget as opens are: six in parallel hold at most the budget
// (and a slab each), not a 64 MiB cap each (a mount's RSS reached 470 MB
// with six cats before: ReadSig and read-ahead sent plain GETs). Each read
// fails with the budget's refusal or the cap, never with bytes.
func TestFloodedStatsStayWithinTheReadersBudget(t *testing.T) {
	srv := testservers.Start(t, "s3")
	p := lyingproxy.Start(t, srv.Kind, srv.URL)
	ctx := context.Background()
	st, err := store.Open(ctx, p.StoreURL(srv.NewBucket(t)), store.Options{Layout: store.LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var sigs []format.Entry
	if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 40, Seed: 7, Fold: true, OnEntry: func(e format.Entry, _ string) {
		if e.Kind == format.KindSig {
			sigs = append(sigs, e)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	const readers, budget = 6, 8 << 20
	if len(sigs) < readers {
		t.Fatalf("%d signatures generated, want %d", len(sigs), readers)
	}
	ix := openWith(t, st, Options{ReaderBytes: budget, ReadAhead: 4})
	p.Set(lyingproxy.FloodBody(-1))
	errs := make([]error, readers)
	var wg sync.WaitGroup
	peak := memtest.Peak(func() {
		for i := range readers {
			wg.Go(func() {
				if i%2 == 0 {
					_, errs[i] = ix.SigSize(ctx, sigs[i])
				} else {
					_, errs[i] = ix.ReadSig(ctx, sigs[i])
				}
			})
		}
		wg.Wait()
	})
	p.Set()
	t.Logf("%d flooded stats and reads against a %d MiB readers' budget: heap peak %.1f MiB", readers, budget>>20, float64(peak)/memtest.MiB)
	for i, err := range errs {
		if err == nil || !(errors.Is(err, ErrBusy) || errors.Is(err, store.ErrTooLarge)) {
			t.Errorf("flooded read %d of %s: %v, want the budget's refusal or the cap", i, sigs[i].Key(), err)
		}
	}
	if bound := uint64(budget + 8*memtest.MiB); peak > bound {
		t.Errorf("%d flooded reads against a %d MiB budget took %.1f MiB of heap, over %d MiB", readers, budget>>20, float64(peak)/memtest.MiB, bound>>20)
	}
}
