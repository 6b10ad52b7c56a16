package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// batchResult is what GetAdmittedBatch handed one key.
type batchResult struct {
	data  []byte
	mod   time.Time
	err   error
	calls int
}

// getBatch runs GetAdmittedBatch and collects each key's result, failing
// the test when a key is handed no result or more than one.
func getBatch(t *testing.T, st *store.Store, keys []string, admit func(int64) (func(), error)) []batchResult {
	t.Helper()
	res := make([]batchResult, len(keys))
	st.GetAdmittedBatch(context.Background(), keys, admit, func(i int, data []byte, mod time.Time, err error) {
		res[i].data, res[i].mod, res[i].err = data, mod, err
		res[i].calls++
	})
	for i, r := range res {
		if r.calls != 1 {
			t.Errorf("key %q was handed %d results, want 1", keys[i], r.calls)
		}
	}
	return res
}

// TestBatchAnswersAsOneAtATime: on every backend's real server, a batch
// of GETs — pipelined on one connection (Pipeline says so: the servers
// take pipelined requests) — hands each key the bytes and Last-Modified
// GetAdmitted reads, ErrNotFound for the missing ones, and a key the lean
// path does not send as it is through the SDK; each key one GET in Counts
// (and on S3 on the wire), none sent again.
func TestBatchAnswersAsOneAtATime(t *testing.T) {
	for _, kind := range leanKinds {
		t.Run(kind, func(t *testing.T) {
			srv := testservers.Start(t, kind)
			lean, _ := leanPair(t, kind, srv.NewBucket(t))
			if !strings.Contains(lean.ReadPath(), "pipelined") {
				t.Fatalf("read path %q, want pipelined", lean.ReadPath())
			}
			ctx := context.Background()
			var keys []string
			want := map[string][]byte{}
			for i := range 45 {
				k := fmt.Sprintf("sig/%02x/cdef/signer-%d", i, i)
				switch {
				case i%11 == 5:
					// missing
				case i == 7:
					k = "sig/07/cdef/a%20b" // sent through the SDK (leanKey)
					want[k] = []byte("escaped")
				case i == 8:
					want[k] = []byte{} // empty
				default:
					want[k] = bytes.Repeat([]byte{byte('a' + i%26)}, 1+i*97)
				}
				if v, ok := want[k]; ok {
					if err := lean.Put(ctx, k, v); err != nil {
						t.Fatal(err)
					}
				}
				keys = append(keys, k)
			}
			before, beforeWire, ps0 := lean.Counts(), wire(lean), pipeStats(t, lean)
			retries := lean.Retries()
			var a admitAll
			res := getBatch(t, lean, keys, a.admit)
			for i, k := range keys {
				v, ok := want[k]
				r := res[i]
				switch {
				case !ok && !errors.Is(r.err, store.ErrNotFound):
					t.Errorf("missing %q: %v, want ErrNotFound", k, r.err)
				case ok && (r.err != nil || !bytes.Equal(r.data, v)):
					t.Errorf("%q: %d bytes, %v; want %d bytes", k, len(r.data), r.err, len(v))
				case ok:
					one, mod, err := lean.GetAdmitted(ctx, k, nil)
					if err != nil || !bytes.Equal(one, r.data) || !mod.Equal(r.mod) {
						t.Errorf("%q: batch read %d bytes at %v; one at a time %d bytes at %v, %v", k, len(r.data), r.mod, len(one), mod, err)
					}
				}
			}
			// Each body admitted before it is read (an empty one asked
			// again for a slab, as one at a time: a 0 may be S3's SDK
			// saying nothing), and every admission released.
			if a.calls < len(want) || a.released != a.calls {
				t.Errorf("admission asked %d times, released %d, want at least %d, each released", a.calls, a.released, len(want))
			}
			ps := pipeStats(t, lean)
			if ps.Batches == ps0.Batches {
				t.Errorf("no pipelined batch was written: %+v", ps)
			}
			if ps.Cut != 0 || ps.Owed != 0 || lean.Retries() != retries {
				t.Errorf("the server's answers were not all taken: %+v, %d retries", ps, lean.Retries()-retries)
			}
			// Counts: one GET a key in the batch, and one for each key
			// read again one at a time above.
			if d := lean.Counts().Sub(before); d != (store.Counts{Get: int64(len(keys) + len(want))}) {
				t.Errorf("sent %v, want %d GETs", d, len(keys)+len(want))
			}
			if kind == "s3" {
				if d := wire(lean).Sub(beforeWire); d != (store.Counts{Get: int64(len(keys) + len(want))}) {
					t.Errorf("on the wire %v, want %d GETs", d, len(keys)+len(want))
				}
			}
		})
	}
}

func pipeStats(t *testing.T, st *store.Store) store.PipelineStats {
	t.Helper()
	ps, ok := st.Pipeline()
	if !ok {
		t.Fatalf("read path %q: no pipeline", st.ReadPath())
	}
	return ps
}

// TestBatchThroughLies: through a server that lies (lyingproxy, a Go
// server in front of each backend's), a batch's key answered 503 is sent
// again and read; a key flooded past its cap is refused, and the keys
// after it on the connection still read; every key one result.
func TestBatchThroughLies(t *testing.T) {
	for _, kind := range leanKinds {
		t.Run(kind, func(t *testing.T) {
			st, p := liarStore(t, kind, store.Options{})
			keys := []string{"a/1", "a/2", "b/1"}
			for _, k := range keys {
				if _, _, err := st.GetAdmitted(context.Background(), k, nil); err != nil {
					t.Fatalf("%s: %v", k, err)
				}
			}
			p.Set(lyingproxy.FloodBody(5000, "a/2"))
			res := getBatch(t, st, keys, nil)
			for i, k := range keys {
				if k == "a/2" {
					continue
				}
				if res[i].err != nil || string(res[i].data) != k {
					t.Errorf("beside a flooded answer, %q: %q, %v", k, res[i].data, res[i].err)
				}
			}
			p.Set(lyingproxy.ErrorBodies(503, 100, lyingproxy.OpGet))
			retries := st.Retries()
			done := make(chan []batchResult)
			go func() { done <- getBatch(t, st, keys, nil) }()
			time.Sleep(150 * time.Millisecond)
			p.Set() // honest again while the GETs are sent again
			res = <-done
			for i, k := range keys {
				if res[i].err != nil || string(res[i].data) != k {
					t.Errorf("after a 503, %q: %q, %v", k, res[i].data, res[i].err)
				}
			}
			if st.Retries() == retries {
				t.Errorf("no GET was sent again after the 503s")
			}
		})
	}
}
