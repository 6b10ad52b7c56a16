package store

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleTransportKeepsItsConnections: the GCS client's transport keeps
// as many idle connections as the store may have requests in flight, so
// bursts of GETs as wide as read-ahead's reuse the first burst's
// connections (net/http's default keeps 2 a host and reconnects the rest).
func TestIdleTransportKeepsItsConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "signature")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: idleTransport(DefaultMaxRequests)}
	const width = 48
	burst := func() {
		var wg sync.WaitGroup
		for range width {
			wg.Go(func() {
				resp, err := client.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		wg.Wait()
		time.Sleep(100 * time.Millisecond) // the last connections go back to the pool after their bodies
	}
	for range 4 {
		burst()
	}
	// A request that finds no idle connection dials one, and uses
	// whichever comes first, the dial or a connection another request
	// gives back: a busy machine may open a few more than width. Keeping
	// 10 idle (the SDK's default) or 2 (net/http's), 4 bursts open ~140.
	if n := conns.Load(); n == 0 || n > width+width/2 {
		t.Errorf("4 bursts of %d GETs opened %d connections; want at most %d", width, n, width+width/2)
	}
}
