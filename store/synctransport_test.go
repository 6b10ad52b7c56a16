package store

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// syncServer is an httptest server counting the connections it accepted,
// keeping them so that a test can close them, and a syncTransport for it.
type syncServer struct {
	srv   *httptest.Server
	tr    *syncTransport
	news  atomic.Int64
	mu    sync.Mutex
	conns []net.Conn // guarded by mu: every connection accepted
}

func newSyncServer(t *testing.T, tlsOn bool, idle int, h http.HandlerFunc) *syncServer {
	t.Helper()
	s := &syncServer{srv: httptest.NewUnstartedServer(h)}
	s.srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.news.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}
	if tlsOn {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	t.Cleanup(s.srv.Close)
	base := s.srv.Client().Transport.(*http.Transport).Clone()
	base.Proxy = nil
	s.tr = newSyncTransport(base, idle)
	t.Cleanup(s.tr.CloseIdleConnections)
	return s
}

// key is the pool's key of the server.
func (s *syncServer) key() string {
	u, _ := url.Parse(s.srv.URL)
	k, _ := originKey(u.Scheme, u.Host)
	return k
}

// closeServerSide closes every connection the server accepted.
func (s *syncServer) closeServerSide() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

func (s *syncServer) get(t *testing.T, ctx context.Context, method, path string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, s.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s.tr.RoundTrip(req)
}

// getAll is one GET read whole, which must succeed.
func (s *syncServer) getAll(t *testing.T, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := s.get(t, context.Background(), http.MethodGet, path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF { //nolint:errorlint // the io.Reader contract: EOF itself
		t.Fatalf("a read after the end: %d, %v; want 0, EOF", n, err)
	}
	resp.Body.Close()
	return resp, data
}

func TestSyncKeepsOneConnection(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 3000)
	s := newSyncServer(t, false, 4, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.Write(body[:1000])
			w.(http.Flusher).Flush() // no Content-Length: chunked
			w.Write(body[1000:])
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	})
	for i := range 10 {
		path := "/cl"
		if i%2 == 1 {
			path = "/chunked"
		}
		resp, data := s.getAll(t, path)
		if !bytes.Equal(data, body) {
			t.Fatalf("%s: %d bytes, want %d", path, len(data), len(body))
		}
		if _, ok := resp.Body.(*syncBody); !ok {
			t.Fatalf("%s: a %T body: not sent by the sync transport", path, resp.Body)
		}
		if path == "/chunked" && (len(resp.TransferEncoding) != 1 || resp.ContentLength != -1) {
			t.Fatalf("/chunked: Transfer-Encoding %q, Content-Length %d", resp.TransferEncoding, resp.ContentLength)
		}
		if path == "/cl" && resp.ContentLength != int64(len(body)) {
			t.Fatalf("/cl: Content-Length %d", resp.ContentLength)
		}
	}
	if n := s.news.Load(); n != 1 {
		t.Fatalf("10 GETs opened %d connections, want 1", n)
	}
	if n := s.tr.idleCount(s.key()); n != 1 {
		t.Fatalf("%d idle connections, want 1", n)
	}
}

func TestSyncRetriesAConnectionClosedWhileIdle(t *testing.T) {
	s := newSyncServer(t, false, 4, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	// Two connections idle, both closed by the server: the retry dials
	// rather than take the other stale one.
	r1, err := s.get(t, context.Background(), http.MethodGet, "/a")
	if err != nil {
		t.Fatal(err)
	}
	s.getAll(t, "/a")
	io.ReadAll(r1.Body)
	r1.Body.Close()
	if n := s.tr.idleCount(s.key()); n != 2 {
		t.Fatalf("%d idle, want 2", n)
	}
	s.closeServerSide()
	time.Sleep(20 * time.Millisecond) // the FIN arrives
	_, data := s.getAll(t, "/b")
	if string(data) != "ok" {
		t.Fatalf("%q", data)
	}
	if n := s.news.Load(); n != 3 {
		t.Fatalf("%d connections, want 3 (the two closed ones, then a fresh one)", n)
	}
	if n := s.tr.retries.Load(); n != 1 {
		t.Fatalf("%d retries, want 1", n)
	}
}

func TestSyncDoesNotRetryAFreshConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close() // no answer at all
		}
	}()
	tr := newSyncTransport(http.DefaultTransport.(*http.Transport).Clone(), 2)
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/k?X-Amz-Signature=SECRET", nil)
	_, err = tr.RoundTrip(req)
	if err == nil {
		t.Fatal("a server that closes at once answered")
	}
	if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "lean GET "+ln.Addr().String()) {
		t.Fatalf("error %q: want the host, never the query", err)
	}
	if n := accepted.Load(); n != 1 {
		t.Fatalf("%d connections, want 1: a fresh connection's failure is returned", n)
	}
}

func TestSyncConnectionCloseIsNotReused(t *testing.T) {
	s := newSyncServer(t, false, 4, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "ok")
	})
	for range 3 {
		s.getAll(t, "/")
	}
	if n := s.news.Load(); n != 3 {
		t.Fatalf("%d connections for 3 GETs answered Connection: close, want 3", n)
	}
	if n := s.tr.idleCount(s.key()); n != 0 {
		t.Fatalf("%d idle connections, want 0", n)
	}
}

func TestSyncHTTP10IsNotReused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				http.ReadRequest(bufio.NewReader(c))
				io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
				time.Sleep(time.Second)
			}()
		}
	}()
	tr := newSyncTransport(http.DefaultTransport.(*http.Transport).Clone(), 2)
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(data) != "ok" {
		t.Fatalf("%q, %v", data, err)
	}
	k, _ := originKey("http", ln.Addr().String())
	if n := tr.idleCount(k); n != 0 {
		t.Fatalf("an HTTP/1.0 answer's connection kept idle (%d)", n)
	}
}

func TestSyncEarlyCloseDropsOrDrains(t *testing.T) {
	big := bytes.Repeat([]byte("b"), 256<<10)
	s := newSyncServer(t, false, 4, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write(big)
			return
		}
		io.WriteString(w, "small body")
	})
	// A big body closed after 10 bytes: the connection is closed.
	resp, err := s.get(t, context.Background(), http.MethodGet, "/big")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 10))
	resp.Body.Close()
	if n := s.tr.idleCount(s.key()); n != 0 {
		t.Fatalf("a body closed 256 KiB before its end left its connection idle (%d)", n)
	}
	// A small body closed unread: drained from the buffer, kept.
	resp, err = s.get(t, context.Background(), http.MethodGet, "/small")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := s.tr.idleCount(s.key()); n != 1 {
		t.Fatalf("a 10-byte body closed unread: %d idle connections, want 1 (drained)", n)
	}
	s.getAll(t, "/small")
	if n := s.news.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the big body's closed, the small one's reused)", n)
	}
}

func TestSyncCancelDuringBody(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := newSyncServer(t, false, 4, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := s.get(t, ctx, http.MethodGet, "/")
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the read ended %v after the cancel", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if n := s.tr.idleCount(s.key()); n != 0 {
		t.Fatalf("a cancelled answer's connection kept idle (%d)", n)
	}
}

func TestSyncDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := newSyncServer(t, false, 4, func(w http.ResponseWriter, r *http.Request) {
		select { // no answer
		case <-release:
		case <-time.After(10 * time.Second):
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.get(t, ctx, http.MethodGet, "/")
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("returned %v after a 100 ms deadline", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want context.DeadlineExceeded", err)
	}
	if n := s.tr.idleCount(s.key()); n != 0 {
		t.Fatalf("a timed-out connection kept idle (%d)", n)
	}
}

func TestSyncFallsBackForOtherRequests(t *testing.T) {
	s := newSyncServer(t, false, 4, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+":"+string(b))
	})
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodHead} {
		req, _ := http.NewRequest(m, s.srv.URL+"/", strings.NewReader("data"))
		if m == http.MethodHead {
			req.Body, req.ContentLength = nil, 0
		}
		resp, err := s.tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := resp.Body.(*syncBody); ok {
			t.Fatalf("%s sent by the sync transport, want net/http's", m)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m != http.MethodHead && string(data) != m+":data" {
			t.Fatalf("%s: %q", m, data)
		}
	}
	// A GET the environment's proxy would carry: net/http's too.
	proxied := false
	s.tr.fallback.Proxy = func(r *http.Request) (*url.URL, error) {
		proxied = true
		return url.Parse(s.srv.URL) // the server answers the absolute URL itself
	}
	resp, err := s.get(t, context.Background(), http.MethodGet, "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, ok := resp.Body.(*syncBody); ok || !proxied {
		t.Fatalf("a proxied GET sent by the sync transport (proxy asked: %v)", proxied)
	}
	if n := s.tr.idleCount(s.key()); n != 0 {
		t.Fatalf("%d sync connections after requests that all fell back", n)
	}
}

func TestSyncTLS(t *testing.T) {
	var proto atomic.Value
	s := newSyncServer(t, true, 4, func(w http.ResponseWriter, r *http.Request) {
		proto.Store(r.Proto)
		io.WriteString(w, "secret bytes")
	})
	for range 3 {
		resp, data := s.getAll(t, "/")
		if string(data) != "secret bytes" || resp.TLS == nil {
			t.Fatalf("%q, TLS %v", data, resp.TLS)
		}
		if _, ok := resp.Body.(*syncBody); !ok {
			t.Fatalf("a %T body: not sent by the sync transport", resp.Body)
		}
	}
	if p := proto.Load(); p != "HTTP/1.1" {
		t.Fatalf("the server saw %v", p)
	}
	if n := s.news.Load(); n != 1 {
		t.Fatalf("3 GETs over TLS opened %d connections, want 1", n)
	}
}

func TestSyncPoolBound(t *testing.T) {
	const bound, callers = 4, 64
	var arrived atomic.Int64
	all := make(chan struct{})
	s := newSyncServer(t, false, bound, func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == 16 {
			close(all)
		}
		select { // hold the first 16 until 16 are in flight: 16 connections at least
		case <-all:
		case <-time.After(5 * time.Second):
		}
		io.WriteString(w, "ok")
	})
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/", nil)
			resp, err := s.tr.RoundTrip(req)
			if err != nil {
				errs <- err
				return
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(data) != "ok" {
				errs <- errors.New("bad body: " + string(data))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := s.news.Load(); n < 16 {
		t.Fatalf("only %d connections: the bound was not tested", n)
	}
	if n := s.tr.idleCount(s.key()); n > bound || n == 0 {
		t.Fatalf("%d idle connections after %d GETs, want 1..%d", n, s.news.Load(), bound)
	}
}

func TestSyncIdleTimeout(t *testing.T) {
	s := newSyncServer(t, false, 4, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	s.getAll(t, "/")
	s.tr.mu.Lock()
	for _, c := range s.tr.pools[s.key()] {
		c.idleAt = time.Now().Add(-syncIdleTimeout - time.Second)
	}
	s.tr.mu.Unlock()
	s.getAll(t, "/")
	if n := s.news.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: one idle past %v is not reused", n, syncIdleTimeout)
	}
	s.tr.sweepIdle() // nothing stale now: the fresh one stays
	if n := s.tr.idleCount(s.key()); n != 1 {
		t.Fatalf("%d idle after a sweep, want 1", n)
	}
	s.tr.CloseIdleConnections()
	if n := s.tr.idleCount(s.key()); n != 0 {
		t.Fatalf("%d idle after CloseIdleConnections", n)
	}
}

func TestSyncGzipAndInformational(t *testing.T) {
	plain := bytes.Repeat([]byte("signature "), 100)
	s := newSyncServer(t, false, 4, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusEarlyHints) // a 1xx first
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Write(plain)
			return
		}
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(plain)
		zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		w.Write(b.Bytes())
	})
	for range 2 {
		resp, data := s.getAll(t, "/")
		if resp.StatusCode != http.StatusOK || !resp.Uncompressed || !bytes.Equal(data, plain) {
			t.Fatalf("status %d, uncompressed %v, %d bytes", resp.StatusCode, resp.Uncompressed, len(data))
		}
	}
	// A request naming its encoding gets the bytes as sent.
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/", nil)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := s.tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Uncompressed || !bytes.Equal(data, plain) {
		t.Fatalf("identity: uncompressed %v, %d bytes", resp.Uncompressed, len(data))
	}
	if n := s.news.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// innermostSync is the syncTransport under a lean path's client, nil if
// there is none.
func innermostSync(x any) *syncTransport {
	for {
		switch v := x.(type) {
		case *countingClient:
			x = v.next
		case *http.Client:
			x = v.Transport
		case *boundedTransport:
			x = v.next
		case *syncTransport:
			return v
		default:
			return nil
		}
	}
}

// TestLeanGetsGoThroughTheSyncTransport: on every backend the lean path's
// client sends through the driver's guards onto a syncTransport, and a
// signature read leaves its connection idle in that transport's pool.
func TestLeanGetsGoThroughTheSyncTransport(t *testing.T) {
	for _, kind := range []string{"s3", "gcs", "azure"} {
		t.Run(kind, func(t *testing.T) {
			srv := testservers.Start(t, kind)
			ctx := context.Background()
			s, err := Open(ctx, srv.NewBucket(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.lean == nil {
				t.Fatalf("read path %s", s.ReadPath())
			}
			st := innermostSync(s.lean.client)
			if st == nil {
				t.Fatalf("the lean client %T does not send through a syncTransport", s.lean.client)
			}
			if err := s.Put(ctx, "sig/k", []byte("signature")); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if data, _, err := s.GetAdmitted(ctx, "sig/k", nil); err != nil || string(data) != "signature" {
					t.Fatalf("%q, %v", data, err)
				}
			}
			st.mu.Lock()
			idle := 0
			for _, p := range st.pools {
				idle += len(p)
			}
			st.mu.Unlock()
			if idle != 1 {
				t.Fatalf("%d connections idle in the sync transport after 3 lean GETs, want 1", idle)
			}
			t.Logf("%d of 3 GETs sent again on a fresh connection", st.retries.Load())
		})
	}
}
