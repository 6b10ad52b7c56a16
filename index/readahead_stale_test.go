package index

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
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
// reader refreshed is not kept, nor given to a read that began after the
// refresh: that read is the new version, whether it asks once the fetch
// landed or while it is still in flight. (Before, a read that began after
// the refresh joined the fetch made stale and got the old bytes; the
// simulation, whose checks wait for every read, does not meet this.)
func TestReadAheadFetchRacingARefreshIsNotKept(t *testing.T) {
	for _, whileInFlight := range []bool{false, true} {
		name := "read once it landed"
		if whileInFlight {
			name = "read while it is in flight"
		}
		t.Run(name, func(t *testing.T) { testReadAheadRacingARefresh(t, whileInFlight) })
	}
}

func testReadAheadRacingARefresh(t *testing.T, whileInFlight bool) {
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
	drv.SetHooks(blobtest.Hooks{Body: func(ctx context.Context, key string, body io.Reader) io.Reader {
		if key != b.Key() || !IsReadAhead(ctx) {
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
	if whileInFlight {
		type result struct {
			data []byte
			err  error
		}
		got := make(chan result, 1)
		go func() {
			data, err := f.reader.ReadSig(f.ctx, b)
			got <- result{data, err}
		}()
		select {
		case r := <-got:
			if r.err != nil || !bytes.Equal(r.data, again) {
				t.Errorf("read while the stale fetch is in flight: %q, %v; want %q", r.data, r.err, again)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("a read after the refresh waited for the read-ahead fetch made stale")
		}
	}
	releaseOnce.Do(func() { close(release) })
	// Wait for the read-ahead fetch to land: read-ahead counts its GET
	// once the cache has its result.
	for deadline := time.Now().Add(30 * time.Second); f.reader.Status().ReadAhead.Sent == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the read-ahead fetch did not land")
		}
		time.Sleep(time.Millisecond)
	}
	drv.SetHooks(blobtest.Hooks{})
	f.read(t, b, again, "after the re-sign and the refresh")
}
