package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDelayIsOnTheWire: through the wire delay, a request reaches the
// server no sooner than the delay after it was sent; requests pipelined
// on one connection arrive together (the delay once per batch, not once
// per request), and each is answered in order, intact, on a connection
// the server keeps (its background reads stop at the deadline it sets).
func TestDelayIsOnTheWire(t *testing.T) {
	const delay = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var d atomic.Int64
	d.Store(int64(delay))
	var mu sync.Mutex
	var arrived []time.Time
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived = append(arrived, time.Now())
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s:%s", r.URL.Path, body)
	})}
	go srv.Serve(&delayListener{Listener: ln, d: &d})
	defer srv.Close()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var batch strings.Builder
	for i := range 4 {
		fmt.Fprintf(&batch, "POST /r%d HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nb%d", i, i)
	}
	sent := time.Now()
	if _, err := io.WriteString(c, batch.String()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i := range 4 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if want := fmt.Sprintf("/r%d:b%d", i, i); string(body) != want {
			t.Fatalf("answer %d: %q, want %q", i, body, want)
		}
	}
	mu.Lock()
	first, spread := arrived[0].Sub(sent), arrived[3].Sub(arrived[0])
	mu.Unlock()
	if first < delay {
		t.Errorf("the first request reached the server %v after it was sent, before the delay of %v", first, delay)
	}
	if spread >= delay {
		t.Errorf("four pipelined requests reached the server over %v: the delay was added per request, not once per batch of %v", spread, delay)
	}
	// The connection is kept: one more request on it, one delay later.
	if _, err := io.WriteString(c, "GET /again HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("a request after the batch: %v", err)
	}
	if body, _ := io.ReadAll(resp.Body); string(body) != "/again:" {
		t.Errorf("a request after the batch: %q", body)
	}
}
