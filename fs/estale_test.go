package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestOpensNeverFailWhileSignaturesChange (issue 37, item 8): with a
// signature cache of 1 byte (every open reads the store), another writer
// re-signing a few signatures (16 B–128 KiB) as fast as it can and
// refreshes with Invalidate running all the while, no open fails: each
// read returns one whole version the writer wrote. A version can move
// again between the kernel's second look-up of a name (after an ESTALE)
// and its open, and the kernel retries only once: the open must not fail
// then (it did, ESTALE, 1–2 in ~100,000 opens at one refresh a second).
// Bounded by operations, not time: the readers make readOps opens.
func TestOpensNeverFailWhileSignaturesChange(t *testing.T) {
	const (
		readers = 4
		readOps = 2500 // per reader
	)
	f := buildFixture(t)
	ctx := context.Background()
	ix, err := index.Open(ctx, f.st, index.Options{Warn: func(string) {}, ReadAhead: -1, SigCacheBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	srv, _ := testMount(t, ix, Options{})
	other := otherWriter(t, f)
	sigs := []format.Entry{
		storefixture.Ent(format.KindSig, "ab12cd34", "alice"),
		storefixture.Ent(format.KindSig, "ab12cd34", "bob"),
	}
	// Every version written: a read must return one of them, whole.
	var mu sync.Mutex
	written := map[string]map[string]bool{}
	for _, e := range sigs {
		written[e.Key()] = map[string]bool{string(f.sigs[e.Key()]): true}
	}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { // the other writer
		defer bg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e := sigs[i%len(sigs)]
			n := 16 << rng.IntN(14) // 16 B … 128 KiB
			data := bytes.Repeat([]byte{byte('a' + i%26)}, n)
			copy(data, fmt.Sprintf("#%d#", i))
			mu.Lock()
			written[e.Key()][string(data)] = true
			mu.Unlock()
			if err := other.Put(ctx, e, data); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() { // the refresher
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := ix.Refresh(ctx); err != nil {
				t.Error(err)
				return
			}
			srv.Invalidate()
		}
	}()
	var failed, opens atomic.Int64
	var rd sync.WaitGroup
	for r := range readers {
		rd.Add(1)
		go func() {
			defer rd.Done()
			for i := range readOps {
				e := sigs[(r+i)%len(sigs)]
				data, err := os.ReadFile(srv.path(e))
				opens.Add(1)
				if err != nil {
					if failed.Add(1) <= 5 {
						t.Errorf("open/read %s (op %d of reader %d): %v (ESTALE: %v)", e.Key(), i, r, err, errors.Is(err, syscall.ESTALE))
					}
					continue
				}
				mu.Lock()
				ok := written[e.Key()][string(data)]
				mu.Unlock()
				if !ok && failed.Add(1) <= 5 {
					t.Errorf("read %s (op %d of reader %d): %d bytes %.8q…, not a version written", e.Key(), i, r, len(data), data)
				}
			}
		}()
	}
	rd.Wait()
	close(stop)
	bg.Wait()
	t.Logf("%d opens, %d failed", opens.Load(), failed.Load())
}
