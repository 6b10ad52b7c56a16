package sim

import (
	"context"
	"testing"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestReproOwnWriteOfForgottenObject is the shortest sequence the
// simulation found for class D2o (seed 1, mem, op 49): a handle's own write
// of an object a collection then forgets stays in its view after a refresh,
// while a fresh reader no longer shows it.
func TestReproOwnWriteOfForgottenObject(t *testing.T) {
	ctx := context.Background()
	clk := store.NewFakeClock(t0)
	st := storefixture.Open(t, "mem://", store.Options{Layout: store.LayoutBucket, Clock: clk})
	h, err := index.Open(ctx, st, index.Options{Warn: nopWarn, ReadAhead: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := fold.Complete(ctx, st, fold.Options{}); err != nil { // folded, empty
		t.Fatal(err)
	}
	if err := h.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	e := format.Entry{Kind: format.KindSeal, Object: "cd0405", Value: "bob"}
	if err := h.Put(ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fold.Collect(ctx, st, fold.CollectOptions{ForgetObjects: []fold.ForgetObject{{Object: "cd0405"}}, Apply: true}); err != nil {
		t.Fatal(err)
	}
	if err := h.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	got, _, err := walk(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("after forgetting cd0405 and a refresh the handle shows %v, want nothing", got)
	}
}
