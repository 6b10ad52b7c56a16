package index

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPrefetchBatchLandsEachKeyForItsWaiters: a reader that asks for a key
// of a read-ahead batch in flight waits for that batch's GET of it (no GET
// of its own) and gets its bytes; a key the batch failed, or never landed,
// leaves its waiter to read it itself, never with the batch's error and
// never waiting forever.
func TestPrefetchBatchLandsEachKeyForItsWaiters(t *testing.T) {
	c := newSigCache(1<<20, 1<<10)
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.prefetchBatch([]string{"k/a", "k/b", "k/c"}, func(keys []string, land func(int, []byte, time.Time, error)) {
			close(started)
			<-release
			land(0, []byte("a"), time.Time{}, nil)
			land(1, nil, time.Time{}, errors.New("the batch's own failure"))
			// k/c: never landed
		})
	}()
	<-started
	type res struct {
		key  string
		data string
		err  error
		own  bool
	}
	out := make(chan res, 3)
	for _, k := range []string{"k/a", "k/b", "k/c"} {
		go func() {
			own := false
			f, err := c.fetch(ctx, ctx, k, false, func(context.Context) ([]byte, time.Time, error) {
				own = true
				return []byte("own " + k), time.Time{}, nil
			})
			out <- res{k, string(f.data), err, own}
		}()
	}
	time.Sleep(50 * time.Millisecond) // the readers wait on the batch
	close(release)
	<-done
	want := map[string]res{"k/a": {data: "a"}, "k/b": {data: "own k/b", own: true}, "k/c": {data: "own k/c", own: true}}
	for range 3 {
		select {
		case r := <-out:
			w := want[r.key]
			if r.err != nil || r.data != w.data || r.own != w.own {
				t.Errorf("%s: %q, %v (own GET %v); want %q (own GET %v)", r.key, r.data, r.err, r.own, w.data, w.own)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a reader still waits on a batch that ended")
		}
	}
}
