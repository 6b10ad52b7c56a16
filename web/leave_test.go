package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/blobtest"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// TestPropfindStopsWhenTheClientLeaves: a PROPFIND Depth 1 of a signer
// with many signatures reads every one's size (a GET each). The client
// leaves while it runs; what the server sends after that is bounded by
// read-ahead (its queue and its GETs in flight), not by the signer's
// signatures. Before, WebDAV read through the io/fs view on
// context.Background and went on to the last one.
func TestPropfindStopsWhenTheClientLeaves(t *testing.T) {
	const (
		n        = 2000 // signatures of one signer
		leaveAt  = 50   // the client leaves during this GET
		ahead    = 16   // index.Options.ReadAhead
		inFlight = 4    // index.Options.ReadAheadWorkers
	)
	ctx := context.Background()
	drv := blobtest.New(nil)
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket, RequestTimeout: time.Minute})
	t.Cleanup(func() { st.Close() })
	for i := range n {
		e := format.Entry{Kind: format.KindSig, Object: fmt.Sprintf("%064x", i), Value: "signer"}
		if err := st.Put(ctx, e.Key(), []byte("sig "+e.Object)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fold.Complete(ctx, st, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(ctx, st, index.Options{ReadAhead: ahead, ReadAheadWorkers: inFlight})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	h := Handler(ix, Options{Logf: t.Logf})
	served := make(chan context.Context, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served <- r.Context()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	client, leave := context.WithCancel(ctx)
	defer leave()
	var gets, after atomic.Int64
	var left atomic.Bool
	leftCh := make(chan struct{}) // closed once left is set
	drv.SetHooks(blobtest.Hooks{Before: func(_ context.Context, op blobtest.Op, key string) error {
		if op != blobtest.OpGet || !strings.HasPrefix(key, "sig/") {
			return nil
		}
		if left.Load() {
			after.Add(1)
			return nil
		}
		if gets.Add(1) == leaveAt {
			leave()
			<-(<-served).Done() // the server saw the client go
			left.Store(true)
			close(leftCh)
		}
		return nil
	}})
	req, err := http.NewRequestWithContext(client, "PROPFIND", srv.URL+"/dav/by-signer/signer/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Depth", "1")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("PROPFIND ended (%s) before the client left", resp.Status)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	srv.Close() // waits for the handler to return
	ix.Close()  // and read-ahead to stop
	// The GET that made the client leave may run in a shared read's own
	// goroutine (neither the handler's nor read-ahead's): wait for its hook
	// to see the server notice.
	select {
	case <-leftCh:
	case <-time.After(30 * time.Second):
		t.Fatalf("the store saw %d GETs (the client leaves at the %dth) and the server did not see the client go", gets.Load(), leaveAt)
	}
	t.Logf("GETs: %d before the client left, %d after", gets.Load(), after.Load())
	if limit := int64(ahead + inFlight); after.Load() > limit {
		t.Errorf("the server sent %d GETs after the client left, over %d (read-ahead's queue and GETs in flight)", after.Load(), limit)
	}
}
