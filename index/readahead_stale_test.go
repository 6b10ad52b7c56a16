package index

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/internal/blobtest"
	"github.com/oxyfs/oxyfs/internal/storefixture"
	"github.com/oxyfs/oxyfs/store/format"
)

// pausedBody is a GET's body that gives nothing until released: the bytes are
// the version the GET found, arriving after whatever happens meanwhile.
type pausedBody struct {
	r       io.Reader
	held    chan<- struct{} // told once, at the first Read
	release <-chan struct{}
	once    *sync.Once
}

func (b pausedBody) Read(p []byte) (int, error) {
	b.once.Do(func() { b.held <- struct{}{} })
	<-b.release
	return b.r.Read(p)
}

// TestReadAheadFetchRacingARefreshIsNotKept: a signature fetched ahead whose
// GET read the old version while another writer re-signed it and the
// reader refreshed is not kept: the next read is the new version. (A
// read-ahead fetch that kept its bytes regardless served the old signature
// until it left the cache: scripts/simtool/mutations/prefetch-keeps-stale.)
func TestReadAheadFetchRacingARefreshIsNotKept(t *testing.T) {
	f, drv := newResignFixtureOn(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")
	b := storefixture.Ent(format.KindSig, objA, "bob") // after a in key order: read-ahead's first
	old, again := bytes.Repeat([]byte("o"), 13), bytes.Repeat([]byte("n"), 21)
	f.put(t, a, old)
	f.put(t, b, old)
	f.complete(t)
	f.refresh(t)

	held, release := make(chan struct{}, 1), make(chan struct{})
	var releaseOnce, heldOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	drv.SetHooks(blobtest.Hooks{Body: func(_ context.Context, key string, body io.Reader) io.Reader {
		if key != b.Key() {
			return body
		}
		return pausedBody{r: body, held: held, release: release, once: &heldOnce}
	}})
	f.read(t, a, old, "the read that fetches b ahead")
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatalf("read-ahead did not fetch %s (sent %d)", b.Key(), f.reader.Status().ReadAhead.Sent)
	}
	// b's GET has the old bytes in hand; another writer re-signs b, and
	// the reader's refresh sees the new line.
	f.put(t, b, again)
	f.refresh(t)
	releaseOnce.Do(func() { close(release) })
	// Wait for the read-ahead fetch to land (its flight gone).
	for deadline := time.Now().Add(30 * time.Second); ; {
		f.reader.sigs.mu.Lock()
		_, flying := f.reader.sigs.flight[b.Key()]
		f.reader.sigs.mu.Unlock()
		if !flying {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the read-ahead fetch did not land")
		}
		time.Sleep(time.Millisecond)
	}
	drv.SetHooks(blobtest.Hooks{})
	f.read(t, b, again, "after the re-sign and the refresh")
	if got := f.reader.Status().ReadAhead.Sent; got == 0 {
		t.Errorf("read-ahead sent no GET")
	}
}
