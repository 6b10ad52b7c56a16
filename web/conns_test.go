package web

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// keptAlive is a real TCP connection that has asked one request and keeps
// the connection open, idle, for the next.
type keptAlive struct {
	c  net.Conn
	br *bufio.Reader
}

func dialKeptAlive(t *testing.T, addr string) *keptAlive {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	k := &keptAlive{c: c, br: bufio.NewReader(c)}
	if err := k.ask(); err != nil {
		t.Fatalf("first request: %v", err)
	}
	return k
}

// askIdle has k ask again and waits until the server marks its end of
// the connection idle since after the ask began: a client reads its answer
// before the server's ConnState hook runs, so under load the order the
// test made its connections idle in is not the server's without it.
func (k *keptAlive) askIdle(t *testing.T, l *connLimiter) {
	t.Helper()
	began := time.Now()
	if err := k.ask(); err != nil {
		t.Fatal(err)
	}
	k.waitIdle(t, l, began)
}

// waitIdle waits (a minute at most) until the server's end of k has been
// idle since after began.
func (k *keptAlive) waitIdle(t *testing.T, l *connLimiter, began time.Time) {
	t.Helper()
	local := k.c.LocalAddr().String()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		var since time.Time
		for c := range l.conns {
			if c.RemoteAddr().String() == local {
				since = c.idleSince
			}
		}
		l.mu.Unlock()
		if since.After(began) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's end of %s not idle a minute after its answer (idle since %v)", local, since)
		}
	}
}

// ask sends one GET and reads its answer, within a minute (only so a broken
// server cannot hang the test).
func (k *keptAlive) ask() error {
	k.c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(k.c, "GET /.oxy/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(k.br, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// TestIdleConnectionsDoNotLockOutANewClient (issue 41, item 9): with every
// slot held by an idle kept-alive connection, a new client is served: the
// connection idle longest is closed for it, and the others stay.
func TestIdleConnectionsDoNotLockOutANewClient(t *testing.T) {
	const max = 3
	// An hour's idle timeout: only the cap can make room.
	addr, ln := serveLimitedListener(t, Limits{MaxConns: max, IdleTimeout: time.Hour})
	l, ok := ln.(*connLimiter)
	if !ok {
		t.Fatalf("Listen with MaxConns %d gave a %T, not a connLimiter", max, ln)
	}
	var held []*keptAlive
	for range max {
		began := time.Now()
		k := dialKeptAlive(t, addr)
		k.waitIdle(t, l, began)
		held = append(held, k)
	}
	// The second asks again: it is now idle for less long than the third.
	held[1].askIdle(t, l)
	newcomer := dialKeptAlive(t, addr) // waits an hour before the fix, and fails at the minute
	_ = newcomer
	held[0].c.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := held[0].br.ReadByte(); err != io.EOF {
		t.Errorf("the connection idle longest: read %v, %v; want it closed (EOF)", n, err)
	}
	for _, k := range held[1:] {
		if err := k.ask(); err != nil {
			t.Errorf("a connection idle less long was closed: %v", err)
		}
	}
}

// TestBusyConnectionsAreNotClosedAtTheCap: a connection in the middle of
// a request keeps its slot; the newcomer waits, and is served once that
// connection, answered, waits idle for its next request.
func TestBusyConnectionsAreNotClosedAtTheCap(t *testing.T) {
	addr := serveLimited(t, Limits{MaxConns: 1, IdleTimeout: time.Hour, ReadHeaderTimeout: time.Minute, ReadTimeout: time.Minute})
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	// Half a request: the connection is active, not idle.
	if _, err := io.WriteString(busy, "GET /.oxy/status HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if _, err := io.WriteString(second, "GET /.oxy/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	second.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := http.ReadResponse(bufio.NewReader(second), nil); err == nil {
		t.Fatal("a second connection was served while the only slot was busy")
	}
	if _, err := io.WriteString(busy, "Host: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatalf("the busy connection was closed: %v", err)
	}
	busy.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the busy connection: %v", err)
	}
	resp.Body.Close()
	second.SetReadDeadline(time.Now().Add(time.Minute)) // an hour's idle timeout: only the cap can make room
	resp, err = http.ReadResponse(bufio.NewReader(second), nil)
	if err != nil {
		t.Fatalf("the newcomer, once the busy connection is idle: %v", err)
	}
	resp.Body.Close()
}
