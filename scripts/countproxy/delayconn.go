package main

// The delay on the wire: every byte a client sends reaches the proxy's
// HTTP server only the delay after it arrived, as over a link with that
// one-way latency. A client that sends requests one after another sees the
// delay on each; one that sends them in parallel on several connections
// sees it once per wave; and one that pipelines requests on one connection
// (oxyfs's read-ahead, store/pipeline.go) sees it once per batch, as over
// a real link. A delay slept inside each request instead (the proxy's
// first way) added it again for every request of a batch, since the
// server takes a connection's requests one after another.

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// delayListener hands out connections whose incoming bytes are delayed by
// the current value of d.
type delayListener struct {
	net.Listener
	d *atomic.Int64
}

func (l *delayListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	dc := &delayConn{Conn: c, d: l.d, in: make(chan chunk, 64), kick: make(chan struct{}, 1)}
	go dc.pump()
	return dc, nil
}

// chunk is what one read of the client's connection got, and when it is
// due to the server.
type chunk struct {
	b   []byte
	due time.Time
	err error
}

// delayConn is a client connection seen through the delay. Its read
// deadline is its own (net/http's server sets and clears it to stop a
// background read); the underlying connection is read only by pump.
type delayConn struct {
	net.Conn
	d    *atomic.Int64
	in   chan chunk    // pump's chunks, in order; closed after the one with an error
	kick chan struct{} // a read deadline was set

	mu       sync.Mutex // protects deadline
	deadline time.Time  // guarded by mu

	cur *chunk // what Read delivers now; Read's alone (net/http reads a connection from one goroutine at a time)
}

// pump reads the client's bytes as they come and stamps each chunk with
// the time it is due.
func (c *delayConn) pump() {
	defer close(c.in)
	for {
		b := make([]byte, 32<<10)
		n, err := c.Conn.Read(b)
		c.in <- chunk{b: b[:n], due: time.Now().Add(time.Duration(c.d.Load())), err: err}
		if err != nil {
			return
		}
	}
}

func (c *delayConn) Read(p []byte) (int, error) {
	for {
		if n, again, err := c.readOnce(p); !again {
			return n, err
		}
	}
}

// readOnce waits for the next bytes due, or the read deadline; again says
// the deadline was changed meanwhile (look again).
func (c *delayConn) readOnce(p []byte) (n int, again bool, err error) {
	var deadline <-chan time.Time
	c.mu.Lock()
	dl := c.deadline
	c.mu.Unlock()
	if !dl.IsZero() {
		if !time.Now().Before(dl) {
			return 0, false, os.ErrDeadlineExceeded
		}
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		deadline = t.C
	}
	if c.cur == nil {
		select {
		case ch, ok := <-c.in:
			if !ok {
				return 0, false, io.EOF
			}
			c.cur = &ch
		case <-c.kick:
			return 0, true, nil
		case <-deadline:
			return 0, false, os.ErrDeadlineExceeded
		}
	}
	if w := time.Until(c.cur.due); w > 0 {
		due := time.NewTimer(w)
		defer due.Stop()
		select {
		case <-due.C:
		case <-c.kick:
			return 0, true, nil
		case <-deadline:
			return 0, false, os.ErrDeadlineExceeded
		}
	}
	if len(c.cur.b) > 0 {
		n = copy(p, c.cur.b)
		c.cur.b = c.cur.b[n:]
		if len(c.cur.b) == 0 && c.cur.err == nil {
			c.cur = nil
		}
		return n, false, nil
	}
	err = c.cur.err
	c.cur = nil
	return 0, err == nil, err
}

func (c *delayConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

func (c *delayConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}
