package par

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

func TestForEachRunsEveryCallWithinLimit(t *testing.T) {
	for _, limit := range []int{0, 1, 3, 100} {
		var now, peak, calls atomic.Int64
		var mu sync.Mutex
		seen := make([]int, 50)
		entered := make(chan struct{})
		release := make(chan struct{})
		want := int64(min(max(limit, 1), 50))
		go func() {
			for range want {
				<-entered
			}
			close(release)
		}()
		err := ForEach(context.Background(), 50, limit, func(_ context.Context, i int) error {
			n := now.Add(1)
			mu.Lock()
			peak.Store(max(peak.Load(), n))
			seen[i]++
			mu.Unlock()
			if calls.Add(1) <= want {
				entered <- struct{}{}
			}
			<-release
			now.Add(-1)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("limit %d: call %d ran %d times", limit, i, c)
			}
		}
		if peak.Load() != want {
			t.Fatalf("limit %d: peak %d calls at once, want %d", limit, peak.Load(), want)
		}
	}
}

func TestForEachFirstErrorStopsTheRest(t *testing.T) {
	errBoom := errors.New("boom")
	var calls atomic.Int64
	err := ForEach(context.Background(), 100, 1, func(_ context.Context, i int) error {
		calls.Add(1)
		if i == 3 {
			return fmt.Errorf("read %q: %w", "k3", errBoom)
		}
		return nil
	})
	if !errors.Is(err, errBoom) || err.Error() != `read "k3": boom` {
		t.Fatalf("err %v, want the first error as returned", err)
	}
	if calls.Load() != 4 {
		t.Fatalf("%d calls, want 4 (none after the error, with limit 1)", calls.Load())
	}
}

func TestForEachRunningCallIsNotCanceledBySibling(t *testing.T) {
	errBoom := errors.New("boom")
	failed := make(chan struct{})
	var sawCancel atomic.Bool
	err := ForEach(context.Background(), 2, 2, func(ctx context.Context, i int) error {
		if i == 0 {
			defer close(failed)
			return errBoom
		}
		<-failed
		sawCancel.Store(ctx.Err() != nil)
		return nil
	})
	if !errors.Is(err, errBoom) || sawCancel.Load() {
		t.Fatalf("err %v, running call saw cancel %v; want boom, false", err, sawCancel.Load())
	}
}

func TestForEachCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var calls atomic.Int64
	err := ForEach(ctx, 10, 2, func(context.Context, int) error { calls.Add(1); return nil })
	if !errors.Is(err, context.Canceled) || calls.Load() != 0 {
		t.Fatalf("err %v after %d calls, want context.Canceled after 0", err, calls.Load())
	}
	if err := ForEach(context.Background(), 0, 2, nil); err != nil {
		t.Fatal(err)
	}
}
