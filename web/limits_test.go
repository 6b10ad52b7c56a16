package web

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingReader serves n bytes of a PROPFIND body that never closes its
// element, and counts what was read of it.
type countingReader struct {
	n, read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.read >= c.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), c.n-c.read)]
	for i := range p {
		p[i] = "<x/>"[(c.read+int64(i))%4]
	}
	c.read += int64(len(p))
	return len(p), nil
}

func TestOversizedPropfindIsRefusedHavingReadOnlyTheLimit(t *testing.T) {
	const limit = 1024
	f := newFixture(t, Options{})
	h := Handler(f.ix, Options{MaxRequestBody: limit, Logf: t.Logf})

	// Sent as it comes (no Content-Length): read up to the limit, no further.
	body := &countingReader{n: 4 << 20}
	r := httptest.NewRequest("PROPFIND", "/dav/", io.NopCloser(body))
	r.ContentLength = -1
	r.Header.Set("Depth", "1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge || body.read != limit+1 {
		t.Fatalf("chunked PROPFIND of 4 MiB: status %d having read %d bytes, want 413 having read %d", w.Code, body.read, limit+1)
	}

	// Announced by Content-Length: refused before a byte is read.
	body = &countingReader{n: 4 << 20}
	r = httptest.NewRequest("PROPFIND", "/dav/", io.NopCloser(body))
	r.ContentLength = body.n
	r.Header.Set("Depth", "1")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge || body.read != 0 {
		t.Fatalf("PROPFIND with Content-Length 4 MiB: status %d having read %d bytes, want 413 having read 0", w.Code, body.read)
	}

	// A PROPFIND of the usual size is answered.
	prop := `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`
	r = httptest.NewRequest("PROPFIND", "/dav/", strings.NewReader(prop))
	r.Header.Set("Depth", "1")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMultiStatus {
		t.Fatalf("PROPFIND of %d bytes: status %d, want 207", len(prop), w.Code)
	}
}

// serveLimited serves the fixture's index with limits on a loopback port.
func serveLimited(t *testing.T, l Limits) string {
	t.Helper()
	addr, _ := serveLimitedListener(t, l)
	return addr
}

// serveLimitedListener is serveLimited, with its listener.
func serveLimitedListener(t *testing.T, l Limits) (string, net.Listener) {
	t.Helper()
	f := newFixture(t, Options{})
	ln, err := Listen("127.0.0.1:0", l)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(Handler(f.ix, Options{Logf: t.Logf}), l, nil)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), ln
}

func TestTricklingClientIsCutOffAtTheReadTimeout(t *testing.T) {
	addr := serveLimited(t, Limits{ReadTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const bodyLen = 1000
	if _, err := io.WriteString(conn, "PROPFIND /dav/ HTTP/1.1\r\nHost: 127.0.0.1\r\nDepth: 1\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// One byte every 20 ms: 20 s for the whole body.
	var sent atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for range bodyLen {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := conn.Write([]byte("<")); err != nil {
				return
			}
			sent.Add(1)
		}
	}()
	conn.SetReadDeadline(time.Now().Add(time.Minute)) // only so a broken server cannot hang the test
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	resp.Body.Close()
	if n := sent.Load(); resp.StatusCode != http.StatusRequestTimeout || n >= bodyLen {
		t.Fatalf("trickled PROPFIND: status %d after %d of %d bytes, want 408 before the end", resp.StatusCode, n, bodyLen)
	}
}

func TestConnectionsPastTheCapWaitForOneToClose(t *testing.T) {
	addr := serveLimited(t, Limits{MaxConns: 2, ReadHeaderTimeout: time.Minute, ReadTimeout: time.Minute})
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	third, err := net.Dial("tcp", addr) // the kernel accepts it; the server does not
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := io.WriteString(third, "GET /.oxy/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(third)
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if resp, err := http.ReadResponse(br, nil); err == nil {
		resp.Body.Close()
		t.Fatalf("a third connection was served (status %d) while two held the cap of 2", resp.StatusCode)
	} else if ne := net.Error(nil); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("third connection: %v, want it waiting", err)
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("third connection once one closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("third connection once one closed: status %d, want 200", resp.StatusCode)
	}
}

// TestDefaultLimitsCannotBeChanged: DefaultLimits is a value each call, so
// a caller changing its copy changes no other server's defaults; a zero
// Limits gives a server those defaults.
func TestDefaultLimitsCannotBeChanged(t *testing.T) {
	d := DefaultLimits()
	d.MaxConns, d.ReadTimeout = 1, time.Nanosecond
	if again := DefaultLimits(); again.MaxConns == 1 || again.ReadTimeout == time.Nanosecond {
		t.Fatalf("DefaultLimits changed by a caller: %+v", again)
	}
	want := DefaultLimits()
	srv := NewServer(http.NotFoundHandler(), Limits{}, nil)
	if srv.ReadTimeout != want.ReadTimeout || srv.ReadHeaderTimeout != want.ReadHeaderTimeout || srv.WriteTimeout != want.WriteTimeout || srv.IdleTimeout != want.IdleTimeout {
		t.Errorf("a zero Limits serves with %v %v %v %v, want %+v", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, want)
	}
}
