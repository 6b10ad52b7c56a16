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
	burst()
	first := conns.Load()
	for range 3 {
		burst()
	}
	if n := conns.Load() - first; n != 0 {
		t.Errorf("3 more bursts of %d GETs opened %d new connections (the first opened %d); want 0", width, n, first)
	}
}
