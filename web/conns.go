package web

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimiter is a listener that serves at most max connections at once and,
// when a connection arrives at the cap, closes the connection idle longest
// (kept alive between requests, http.StateIdle) to make room: kept-alive
// connections cannot lock out other clients (issue 41, item 9: 256 idle
// connections, each asking something every two minutes, held every slot).
// With none idle, the new connection waits until one closes or becomes idle
// (looked at every idleRecheck), and the next ones wait in the kernel's
// accept queue, as with netutil.LimitListener. A connection that gets its
// next request just as it is closed is lost to its client, which retries
// (an idempotent request on a kept-alive connection, as net/http's
// Transport does).
//
// The server reports each connection's state through its ConnState hook
// (NewServer sets it: trackConnState); a connection wrapped in TLS is found
// through tls.Conn.NetConn.
//
// Locks: mu guards conns and every limitedConn's idleSince; slots (a
// buffered channel of max tokens) is the cap, taken by Accept and given
// back once by a connection's Close.
type connLimiter struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{} // closed by Close: a waiting Accept gives up
	closeOnce sync.Once

	mu    sync.Mutex
	conns map[*limitedConn]struct{} // open connections
}

func newConnLimiter(ln net.Listener, max int) *connLimiter {
	return &connLimiter{Listener: ln, slots: make(chan struct{}, max), done: make(chan struct{}), conns: map[*limitedConn]struct{}{}}
}

// idleRecheck is how often an Accept waiting at the cap looks again for an
// idle connection to close.
const idleRecheck = 100 * time.Millisecond

// Accept waits for a connection and a slot. At the cap it closes the
// connection idle longest, if any, and takes its slot; with none idle it
// waits for a slot, looking again every idleRecheck.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for got := false; !got; {
		select {
		case l.slots <- struct{}{}:
			got = true
			continue
		default:
		}
		l.closeOldestIdle()
		t := time.NewTimer(idleRecheck)
		select {
		case l.slots <- struct{}{}:
			got = true
		case <-t.C:
		case <-l.done:
			t.Stop()
			c.Close()
			return nil, net.ErrClosed
		}
		t.Stop()
	}
	lc := &limitedConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

// Close closes the listener; an Accept waiting for a slot returns.
func (l *connLimiter) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// closeOldestIdle closes the connection idle longest; none idle, it does
// nothing.
func (l *connLimiter) closeOldestIdle() {
	l.mu.Lock()
	var oldest *limitedConn
	for c := range l.conns {
		if !c.idleSince.IsZero() && (oldest == nil || c.idleSince.Before(oldest.idleSince)) {
			oldest = c
		}
	}
	if oldest != nil {
		oldest.idleSince = time.Time{} // closed once
	}
	l.mu.Unlock()
	if oldest != nil {
		oldest.Close()
	}
}

// setIdle records whether c waits for its next request.
func (l *connLimiter) setIdle(c *limitedConn, idle bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, open := l.conns[c]; !open {
		return
	}
	if idle {
		c.idleSince = time.Now()
	} else {
		c.idleSince = time.Time{}
	}
}

// limitedConn is a connection of a connLimiter.
type limitedConn struct {
	net.Conn
	l         *connLimiter
	idleSince time.Time // zero: not idle (l.mu)
	closeOnce sync.Once
}

// Close closes the connection and gives its slot back, once.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		<-c.l.slots
	})
	return err
}

// trackConnState is the ConnState hook NewServer sets: it tells a
// connection's connLimiter when it is idle.
func trackConnState(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	switch s {
	case http.StateIdle:
		lc.l.setIdle(lc, true)
	case http.StateActive, http.StateHijacked:
		lc.l.setIdle(lc, false)
	}
}
