package index

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// bodyHookStore is a mem store whose GET bodies of entry lists body wraps.
func bodyHookStore(t *testing.T, body func(ctx context.Context, r io.Reader) io.Reader) *store.Store {
	t.Helper()
	drv := blobtest.New(nil)
	drv.SetHooks(blobtest.Hooks{Body: func(ctx context.Context, key string, r io.Reader) io.Reader {
		if strings.HasSuffix(key, format.EntryListSuffix) {
			return body(ctx, r)
		}
		return r
	}})
	st := store.New(blob.NewBucket(drv), "mem", "", store.Options{Layout: store.LayoutBucket})
	t.Cleanup(func() { st.Close() })
	return st
}

// heldBody passes the first part bytes of a body on, then waits for
// release (or the GET's end) before the rest; ended is set once the whole
// body was read.
type heldBody struct {
	ctx     context.Context
	r       io.Reader
	part    int
	release <-chan struct{}
	held    *atomic.Bool // the first part was passed on, the rest held
	ended   *atomic.Bool
}

func (h *heldBody) Read(p []byte) (int, error) {
	if h.part <= 0 {
		h.held.Store(true)
		select {
		case <-h.release:
		case <-h.ctx.Done():
			return 0, h.ctx.Err()
		}
		n, err := h.r.Read(p)
		if err == io.EOF {
			h.ended.Store(true)
		}
		return n, err
	}
	n, err := h.r.Read(p[:min(len(p), h.part)])
	h.part -= n
	return n, err
}

// A list is decoded as its body arrives, not once it has all arrived: a
// list past the cap on keys is refused while the rest of its body is still
// held on the wire (the open falls back to prefix listing), and its GET is
// then stopped. Read whole first, the open would wait for the body.
func TestListIsDecodedAsItsBodyArrives(t *testing.T) {
	const n = 200_000 // 98 KB of list
	release := make(chan struct{})
	var held, ended atomic.Bool
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	st := bodyHookStore(t, func(ctx context.Context, r io.Reader) io.Reader {
		return &heldBody{ctx: ctx, r: r, part: 32 << 10, release: release, held: &held, ended: &ended}
	})
	storefixture.WriteList(t, st, true, listKeys(n, 0)...)
	setLimits(t, format.MaxEntryListsInFlight, 1000)
	// Should the open wait for the whole body (as it did), let it come.
	timer := time.AfterFunc(20*time.Second, free)
	defer timer.Stop()
	ix, w := openLoaded(t, st)
	if !held.Load() || ended.Load() {
		t.Fatalf("list body held: %v, read to its end: %v; want the open to refuse the list while the rest of its body was held", held.Load(), ended.Load())
	}
	if ix.Status().Mode != ModePrefixListing || !hasWarning(w.all(), "cap of all live lists") {
		t.Fatalf("mode %s, warnings %q; want prefix listing past the cap", ix.Status().Mode, w.all())
	}
}

// A list whose body fails midway is read again (one more GET) and decoded
// again from its start: the set holds every entry once.
func TestListBodyThatFailsMidwayIsReadAgain(t *testing.T) {
	const n = 100_000 // 58 KB of list
	var cuts atomic.Int32
	st := bodyHookStore(t, func(_ context.Context, r io.Reader) io.Reader {
		if cuts.Add(1) == 1 {
			return &cutReader{r: r, after: 20 << 10}
		}
		return r
	})
	keys := listKeys(n, 0)
	storefixture.WriteList(t, st, true, keys...)
	before := st.Counts()
	ix, w := openLoaded(t, st)
	s := ix.Status()
	if s.Mode != ModeFolded || s.Entries != n || len(w.all()) != 0 {
		t.Fatalf("mode %s, %d entries, warnings %q; want folded, %d entries, none", s.Mode, s.Entries, w.all(), n)
	}
	if d := st.Counts().Sub(before); cuts.Load() != 2 || d.Get != 4 {
		t.Fatalf("%d bodies of the list, %v; want 2 (the cut one, then the whole) and 4 GETs (journal, retired, list twice)", cuts.Load(), d)
	}
	for _, k := range []string{keys[0], keys[n/2], keys[n-1]} {
		if _, err := ix.Stat(context.Background(), k); err != nil {
			t.Fatalf("stat %s: %v", k, err)
		}
	}
}

// cutReader fails with a connection reset once it has passed after bytes on.
type cutReader struct {
	r     io.Reader
	after int
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.after <= 0 {
		return 0, fmt.Errorf("read: %w", syscall.ECONNRESET)
	}
	n, err := c.r.Read(p[:min(len(p), c.after)])
	c.after -= n
	return n, err
}
