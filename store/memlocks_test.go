package store

import (
	"context"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob"
)

// TestMemLocksAreFreedAfterUse: the compare-and-swap lock of a mem://
// bucket lives while a write holds it or waits for it, and no longer:
// after concurrent updates of twenty buckets, memLocks holds none of them
// (it used to keep every bucket the process ever wrote, and the bucket
// with it), and every update landed (the lock still excluded).
func TestMemLocksAreFreedAfterUse(t *testing.T) {
	ctx := context.Background()
	const stores, writers = 20, 8
	var buckets []*blob.Bucket
	for range stores {
		st, err := Open(ctx, "mem://", Options{Layout: LayoutBucket})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				_, err := st.UpdateRecord(ctx, "record", func(old []byte, _ bool) ([]byte, error) {
					return append(old, "line\n"...), nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		data, _, err := st.ReadRecord(ctx, "record")
		if err != nil || strings.Count(string(data), "line\n") != writers {
			t.Fatalf("record after %d updates = %q, %v", writers, data, err)
		}
		buckets = append(buckets, st.Bucket())
	}
	memLocks.mu.Lock()
	held := 0
	for _, b := range buckets {
		if memLocks.m[b] != nil {
			held++
		}
	}
	memLocks.mu.Unlock()
	if held != 0 {
		t.Errorf("memLocks holds the locks of %d of %d buckets no write uses (%d in all)", held, stores, memLocksHeld())
	}
}
