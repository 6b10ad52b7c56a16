package store

// The lean GETs' HTTP/1.1 transport: a GET written and its answer read on
// the caller's goroutine. net/http's transport runs a read loop and a write
// loop goroutine per connection, and hands every request between them and
// the caller (channel sends, wake-ups across CPUs); a lean GET (leanget.go)
// is one small request and one small answer, and most of the CPU left in
// it was that hand-over. syncTransport writes the request with req.Write
// and reads the answer with http.ReadResponse (net/http's own writer and
// parser) on a keep-alive connection of its own pool:
//
//	handled    GET, no body, http:// or https:// (TLS with the fallback's
//	           TLSClientConfig, ALPN http/1.1 only), no proxy for the URL
//	falls back everything else (other methods, bodies, a proxy, trailers,
//	           a transport with its own TLS dialer or no keep-alives) goes
//	           to fallback, the net/http transport, unchanged
//	reuse      a body read to its end (framed by Content-Length or chunked,
//	           no Connection: close either way, HTTP/1.1) puts its
//	           connection back; closed before its end, the connection is
//	           closed unless what is left (≤ syncDrain) is already
//	           buffered
//	stale      a pooled connection the server closed while it was idle
//	           (EOF, reset, broken pipe before a byte of the answer) is
//	           retried once on a fresh one, as net/http does
//	context    its deadline is the connection's; its end sets a past
//	           deadline (context.AfterFunc), which unblocks the read or
//	           write at once; the connection is then closed, and the error
//	           wraps ctx.Err()
//	idle       at most idle connections an origin, each closed after
//	           syncIdleTimeout unused (a sweep timer, and a check when
//	           taken)
//	gzip       as net/http: when the request names no Accept-Encoding
//	           (and no Range), it asks for gzip and undoes it
//	           (resp.Uncompressed)
//
// Lock order: syncTransport.mu is a leaf (no other lock is taken under it;
// connections are closed after it is released).

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// syncIdleTimeout is how long an idle connection is kept (net/http's
// DefaultTransport's IdleConnTimeout).
const syncIdleTimeout = 90 * time.Second

// syncDrain is the most of an unread body a Close reads to keep its
// connection, and only what is already buffered.
const syncDrain = 4 << 10

// syncMax1xx is how many informational answers are skipped before the
// real one (net/http allows 5).
const syncMax1xx = 5

// syncTransport is the lean GETs' transport (above); the rest goes to
// fallback.
type syncTransport struct {
	fallback *http.Transport // read-only after construction
	idle     int             // read-only: idle connections kept an origin
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	// retries counts the requests sent again on a fresh connection (a
	// pooled one had been closed by the server). It locks itself.
	retries atomic.Int64

	mu    sync.Mutex             // protects the following; a leaf
	pools map[string][]*syncConn // guarded by mu: idle connections by origin, oldest first
	sweep *time.Timer            // guarded by mu: armed while any connection is idle
}

// newSyncTransport is a syncTransport over fallback keeping idle
// connections an origin.
func newSyncTransport(fallback *http.Transport, idle int) *syncTransport {
	t := &syncTransport{fallback: fallback, idle: max(idle, 1), pools: map[string][]*syncConn{}}
	t.dial = fallback.DialContext
	if t.dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second} // net/http's default
		t.dial = d.DialContext
	}
	return t
}

// syncConn is one connection of a syncTransport. Its fields are used by
// one request at a time: the pool hands it out once.
type syncConn struct {
	key    string // the origin, "scheme://host:port"
	host   string // host:port, for errors
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	tls    *tls.ConnectionState // https: the handshake's; nil on http
	idleAt time.Time            // guarded by syncTransport.mu while pooled
	reused bool                 // taken from the pool (not dialed for this request)
}

// handles reports whether the request is one the transport sends itself.
func (t *syncTransport) handles(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != "" {
		return false
	}
	if (r.Body != nil && r.Body != http.NoBody) || r.ContentLength != 0 || len(r.TransferEncoding) > 0 || r.Trailer != nil {
		return false
	}
	if r.URL == nil || r.URL.Host == "" || (r.URL.Scheme != "http" && r.URL.Scheme != "https") {
		return false
	}
	f := t.fallback
	if f.DisableKeepAlives || f.DialTLSContext != nil || f.DialTLS != nil || f.Dial != nil || f.GetProxyConnectHeader != nil { //nolint:staticcheck // Dial and DialTLS: a transport that sets them dials its own way
		return false
	}
	if f.Proxy != nil {
		if u, err := f.Proxy(r); err != nil || u != nil {
			return false
		}
	}
	return true
}

// originKey is the pool's key of u: scheme://host:port.
func originKey(scheme, host string) (key, addr string) {
	addr = host
	if _, _, err := net.SplitHostPort(host); err != nil {
		port := "80"
		if scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(strings.Trim(host, "[]"), port)
	}
	return scheme + "://" + addr, addr
}

func (t *syncTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.handles(r) {
		return t.fallback.RoundTrip(r)
	}
	ctx := r.Context()
	key, addr := originKey(r.URL.Scheme, r.URL.Host)
	wr := r
	gz := false
	if !t.fallback.DisableCompression && r.Header.Get("Accept-Encoding") == "" && r.Header.Get("Range") == "" {
		// As net/http: ask for gzip, and undo it below.
		wr = new(http.Request)
		*wr = *r
		wr.Header = r.Header.Clone()
		if wr.Header == nil {
			wr.Header = http.Header{}
		}
		wr.Header["Accept-Encoding"] = []string{"gzip"}
		gz = true
	}
	for attempt := 0; ; attempt++ {
		var pc *syncConn
		if attempt == 0 {
			pc = t.take(key)
		}
		if pc == nil { // none idle, or the retry: a fresh one
			var err error
			if pc, err = t.connect(ctx, r.URL.Scheme, r.URL.Hostname(), key, addr); err != nil {
				return nil, syncError(ctx, addr, err)
			}
		}
		resp, err := t.exchange(ctx, pc, wr, r, gz)
		if err == nil {
			return resp, nil
		}
		if pc.reused && attempt == 0 && ctx.Err() == nil && errors.Is(err, errStaleConn) {
			t.retries.Add(1)
			continue // the server closed it while it was idle: once more on a fresh one
		}
		return nil, syncError(ctx, addr, err)
	}
}

// errStaleConn marks a pooled connection that failed before a byte of the
// answer: the server had closed it.
var errStaleConn = errors.New("connection closed by the server while idle")

// exchange sends wr on pc and reads its answer; r is the caller's request
// (the response's). On an error pc is closed.
func (t *syncTransport) exchange(ctx context.Context, pc *syncConn, wr, r *http.Request, gz bool) (*http.Response, error) {
	deadline, _ := ctx.Deadline() // zero: none
	if err := pc.nc.SetDeadline(deadline); err != nil {
		pc.nc.Close()
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { pc.nc.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		pc.nc.Close()
		return nil, err
	}
	if err := wr.Write(pc.bw); err != nil {
		return fail(staleIf(pc, err))
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(staleIf(pc, err))
	}
	if _, err := pc.br.Peek(1); err != nil {
		return fail(staleIf(pc, err))
	}
	var resp *http.Response
	for n := 0; ; n++ {
		var err error
		if resp, err = http.ReadResponse(pc.br, r); err != nil {
			return fail(err)
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return fail(errors.New("101 Switching Protocols to a GET"))
		}
		if resp.StatusCode >= 200 || n >= syncMax1xx {
			break
		}
		// 1xx: skipped, as net/http does (their bodies are empty).
	}
	if resp.StatusCode < 200 {
		return fail(fmt.Errorf("more than %d informational answers", syncMax1xx))
	}
	resp.TLS = pc.tls
	chunked := len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
	b := &syncBody{
		t: t, pc: pc, rc: resp.Body, ctx: ctx, stop: stop,
		size:  resp.ContentLength,
		reuse: !resp.Close && !r.Close && resp.ProtoAtLeast(1, 1) && (resp.ContentLength >= 0 || chunked),
	}
	resp.Body = b
	if gz && resp.Body != nil && strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") && resp.ContentLength != 0 {
		resp.Body = &syncGzip{body: b}
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
	}
	return resp, nil
}

// staleIf marks err as a stale connection's when pc came from the pool and
// the failure says the server had closed it.
func staleIf(pc *syncConn, err error) error {
	if pc.reused && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		return fmt.Errorf("%w: %w", errStaleConn, err)
	}
	return err
}

// syncError is err of a request to host, wrapping the context's error when
// the context ended (its deadline set the connection's).
func syncError(ctx context.Context, host string, err error) error {
	if cerr := ctxErr(ctx, err); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("lean GET %s: %w (%w)", host, cerr, err)
	}
	return fmt.Errorf("lean GET %s: %w", host, err)
}

// ctxErr is ctx's error, or DeadlineExceeded when err is the connection's
// deadline (the context's) passing a moment before the context's own
// timer fires; nil when the context did not end.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if d, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// take is an idle connection of key from the pool, nil if none; one idle
// too long is closed.
func (t *syncTransport) take(key string) *syncConn {
	var stale []*syncConn
	defer func() {
		for _, c := range stale {
			c.nc.Close()
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pools[key]
	for len(p) > 0 {
		c := p[len(p)-1]
		p[len(p)-1] = nil
		p = p[:len(p)-1]
		if time.Since(c.idleAt) > syncIdleTimeout {
			stale = append(stale, c)
			continue
		}
		t.pools[key] = p
		c.reused = true
		return c
	}
	delete(t.pools, key)
	return nil
}

// put gives pc back to the pool, or closes it when the origin's pool is
// full.
func (t *syncTransport) put(pc *syncConn) {
	if pc.br.Buffered() > 0 { // the server sent past the answer
		pc.nc.Close()
		return
	}
	t.mu.Lock()
	p := t.pools[pc.key]
	if len(p) >= t.idle {
		t.mu.Unlock()
		pc.nc.Close()
		return
	}
	pc.idleAt = time.Now()
	t.pools[pc.key] = append(p, pc)
	if t.sweep == nil {
		t.sweep = time.AfterFunc(syncIdleTimeout, t.sweepIdle)
	}
	t.mu.Unlock()
}

// sweepIdle closes the connections idle longer than syncIdleTimeout, and
// comes back while any is left.
func (t *syncTransport) sweepIdle() {
	var stale []*syncConn
	t.mu.Lock()
	now := time.Now()
	for key, p := range t.pools {
		i := 0
		for i < len(p) && now.Sub(p[i].idleAt) > syncIdleTimeout {
			stale = append(stale, p[i])
			i++
		}
		if i == len(p) {
			delete(t.pools, key)
			continue
		}
		t.pools[key] = append(p[:0], p[i:]...)
		clear(p[len(p)-i:])
	}
	t.sweep = nil
	if len(t.pools) > 0 {
		t.sweep = time.AfterFunc(syncIdleTimeout, t.sweepIdle)
	}
	t.mu.Unlock()
	for _, c := range stale {
		c.nc.Close()
	}
}

// CloseIdleConnections closes the idle connections, the fallback's too.
func (t *syncTransport) CloseIdleConnections() {
	t.mu.Lock()
	pools := t.pools
	t.pools = map[string][]*syncConn{}
	if t.sweep != nil {
		t.sweep.Stop()
		t.sweep = nil
	}
	t.mu.Unlock()
	for _, p := range pools {
		for _, c := range p {
			c.nc.Close()
		}
	}
	t.fallback.CloseIdleConnections()
}

// idleCount is how many connections of key are idle (tests).
func (t *syncTransport) idleCount(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pools[key])
}

// connect dials a fresh connection to addr (TLS for https, with server
// name host).
func (t *syncTransport) connect(ctx context.Context, scheme, host, key, addr string) (*syncConn, error) {
	nc, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	pc := &syncConn{key: key, host: addr, nc: nc}
	if scheme == "https" {
		cfg := &tls.Config{}
		if t.fallback.TLSClientConfig != nil {
			cfg = t.fallback.TLSClientConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(nc, cfg)
		hctx := ctx
		if d := t.fallback.TLSHandshakeTimeout; d > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		if err := tc.HandshakeContext(hctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		st := tc.ConnectionState()
		pc.nc, pc.tls = tc, &st
	}
	pc.br = bufio.NewReaderSize(pc.nc, 4<<10)
	pc.bw = bufio.NewWriterSize(pc.nc, 4<<10)
	return pc, nil
}

// syncBody is an answer's body on a syncTransport connection: at its end
// the connection goes back to the pool (reuse) or is closed. Read and
// Close are not called at once (getLean reads, then closes).
type syncBody struct {
	t     *syncTransport
	pc    *syncConn
	rc    io.ReadCloser // http.ReadResponse's body
	ctx   context.Context
	stop  func() bool // stops the context's AfterFunc: false if it ran
	size  int64       // Content-Length, -1 if not declared
	read  int64       // bytes read so far
	reuse bool        // the answer's framing and headers allow reuse
	done  bool        // the connection was given back or closed
	eof   bool        // read to its end: reads say EOF again
}

func (b *syncBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.done {
		return 0, errors.New("read on a closed body")
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	switch {
	case errors.Is(err, io.EOF):
		b.eof = true
		b.finish(b.reuse)
	case err != nil:
		b.finish(false)
		err = syncError(b.ctx, b.pc.host, err)
	}
	return n, err
}

// Close keeps the connection when the body was read to its end, or what
// is left of it (at most syncDrain) is already buffered; else closes it.
func (b *syncBody) Close() error {
	if b.done {
		return nil
	}
	if left := b.size - b.read; b.reuse && b.size >= 0 && left <= syncDrain && left <= int64(b.pc.br.Buffered()) {
		if _, err := io.Copy(io.Discard, b.rc); err == nil {
			b.finish(true)
			return nil
		}
	}
	b.finish(false)
	return nil
}

// finish gives the connection back (keep, and the context did not end) or
// closes it.
func (b *syncBody) finish(keep bool) {
	b.done = true
	if !b.stop() { // the context ended: its AfterFunc ran
		keep = false
	}
	if keep {
		b.t.put(b.pc)
		return
	}
	b.pc.nc.Close()
}

// syncGzip undoes a gzip Content-Encoding the transport asked for.
type syncGzip struct {
	body *syncBody
	zr   *gzip.Reader
	err  error
}

func (g *syncGzip) Read(p []byte) (int, error) {
	if g.zr == nil && g.err == nil {
		g.zr, g.err = gzip.NewReader(g.body)
	}
	if g.err != nil {
		return 0, g.err
	}
	return g.zr.Read(p)
}

func (g *syncGzip) Close() error { return g.body.Close() }
