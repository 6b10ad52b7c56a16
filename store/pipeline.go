package store

// Pipelined GETs (RFC 9112 §9.3.2): read-ahead's GETs of signatures
// (GetAdmittedBatch, getbatch.go) written on one HTTP/1.1 connection back
// to back, in one write, and their answers read in order on the caller's
// goroutine. One GET at a time through net/http costs the mount, per
// signature, a write, two reads and a poll on the socket, and hand-overs
// between the caller, the transport's write loop and its read loop (each
// a thread woken on another CPU); a cold `cat` of every signature spent
// more CPU on that than on the FUSE requests themselves
// (docs/performance.md, Target 3). Pipelined, a batch of n GETs costs one
// write and about one read per socket buffer of answers, and no hand-over.
//
//	handled    the lean path's GETs (no body), http:// or https:// (TLS
//	           with the driver transport's TLSClientConfig, ALPN
//	           http/1.1 only), when the transport dials itself and no
//	           proxy serves the origin (newPipeline); else none
//	framing    each answer is framed by Content-Length or chunked, as
//	           HTTP/1.1 requires of an answer on a kept connection; one
//	           that is not, or says Connection: close, or is HTTP/1.0, is
//	           the connection's last: the GETs after it are owed
//	owed       GETs written whose answers did not come (the server closed
//	           the connection, a timeout) are returned to the caller
//	           unanswered: it sends them again one at a time (getbatch.go)
//	verified   a pipeline starts at depth 2 and deepens by one every
//	           pipeDeeper batches answered whole and in time. HTTP/1.1
//	           lets a server close a connection with requests unanswered;
//	           one that does so, or lets the timeout pass, with pipelined
//	           GETs owed (after some answers, or before any on a fresh
//	           connection) halves the depth, from 2 to 1 for good — GETs
//	           one at a time on the same connections — and says so in
//	           PipelineStats: a server or a proxy that does not take
//	           pipelined requests costs a timeout and a few re-sent GETs,
//	           never a wrong or lost answer. An error answer other than
//	           404 ends its batch (one sent unasked would make every
//	           answer after it one GET late)
//	stale      an idle connection is peeked (non-blocking) when taken:
//	           one on which anything arrived while it was idle (an unasked
//	           408, EOF) is closed, never read as the next answer; one the
//	           server closed before a byte of the first answer, or whose
//	           first answer is a 408 (one that raced the peek: net/http
//	           reads it so too), is retried once on a fresh connection; a
//	           408 later in a batch leaves the GETs from it on owed
//	context    each answer must come within the per-request timeout of the
//	           previous one (or of the write); the caller's context ending
//	           sets a past deadline (context.AfterFunc), which unblocks the
//	           read or write at once, and the connection is closed
//	idle       at most idle connections, each closed after
//	           pipeIdleTimeout unused
//
// An answer is tied to its request only by its place in the order: the
// same trust every keep-alive client places in HTTP/1.1 framing (the
// answers of a connection come in the order of its requests), extended
// to requests written before the previous answer came. The stale peek and
// the framing rules above are what make it hold.
//
// Lock order: pipeline.mu is a leaf (nothing is locked under it;
// connections are closed after it is released).

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultPipelineDepth is how many GETs a connection carries written
// ahead of their answers when Options.PipelineDepth is 0.
const DefaultPipelineDepth = 16

// pipeIdleTimeout is how long an idle pipelining connection is kept
// (net/http's DefaultTransport's IdleConnTimeout).
const pipeIdleTimeout = 90 * time.Second

// pipeDrain is the most of an unread answer's body that is read past to
// keep its connection, and only what is already buffered.
const pipeDrain = 4 << 10

// pipeMax1xx is how many informational answers are skipped before the
// real one (net/http allows 5).
const pipeMax1xx = 5

// pipeline is the pipelined GETs of one origin.
type pipeline struct {
	scheme, host string // the origin's; read-only
	addr         string // host:port; read-only
	tr           *http.Transport
	dial         func(ctx context.Context, network, addr string) (net.Conn, error) // read-only
	idle         int                                                               // read-only: idle connections kept
	maxDepth     int                                                               // read-only

	depth   atomic.Int32 // GETs written ahead at most now: maxDepth, halved by each connection closed with GETs owed
	cut     atomic.Int64 // connections the server closed with pipelined GETs owed
	owed    atomic.Int64 // GETs written whose answers did not come (the caller sent them again)
	stale   atomic.Int64 // idle connections closed when taken: something had arrived on them
	batches atomic.Int64 // writes of more than one GET
	good    atomic.Int64 // batches answered whole and in time since the depth last fell (deeper)
	spread  atomic.Int64 // batches whose answers came spread out: the depth halved (paced)
	pinned  atomic.Bool  // the depth stays 1: a cut at depth 2 (shallower)

	mu    sync.Mutex  // protects the following; a leaf
	pool  []*pipeConn // guarded by mu: idle connections, oldest first
	sweep *time.Timer // guarded by mu: armed while any connection is idle
}

// pipeConn is one connection of a pipeline, used by one batch at a time.
type pipeConn struct {
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time // guarded by pipeline.mu while pooled
	reused bool      // taken from the pool, not dialed for this batch
}

// newPipeline is the pipeline of origin scheme://host over transport tr
// (its dialer, TLS configuration and proxy), or nil and why not: a
// transport that dials its own way, keeps no connections or sends the
// origin's requests through a proxy is left to net/http.
func newPipeline(scheme, host string, tr *http.Transport, idle, depth int) (*pipeline, string) {
	switch {
	case depth == 1:
		return nil, "depth 1"
	case tr == nil:
		return nil, "no transport of its own"
	case scheme != "http" && scheme != "https":
		return nil, "scheme " + scheme
	case tr.DisableKeepAlives:
		return nil, "keep-alives off"
	case tr.DialTLSContext != nil || tr.DialTLS != nil || tr.Dial != nil || tr.GetProxyConnectHeader != nil: //nolint:staticcheck // Dial and DialTLS: a transport that sets them dials its own way
		return nil, "a transport that dials its own way"
	}
	if tr.Proxy != nil {
		u, err := tr.Proxy(&http.Request{URL: &url.URL{Scheme: scheme, Host: host}})
		if err != nil || u != nil {
			return nil, "a proxy"
		}
	}
	if depth <= 0 {
		depth = DefaultPipelineDepth
	}
	p := &pipeline{scheme: scheme, host: host, addr: originAddr(scheme, host), tr: tr, idle: max(idle, 1), maxDepth: depth}
	p.dial = tr.DialContext
	if p.dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second} // net/http's default
		p.dial = d.DialContext
	}
	p.depth.Store(int32(min(depth, pipeStart)))
	return p, ""
}

// originAddr is host with its port (the scheme's default when it names
// none).
func originAddr(scheme, host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// PipelineStats is what a store's pipelined GETs did (Store.Pipeline).
type PipelineStats struct {
	MaxDepth int   `json:"max_depth"` // GETs written ahead at most (Options.PipelineDepth)
	Depth    int   `json:"depth"`     // now: halved by each connection closed with GETs owed
	Batches  int64 `json:"batches"`   // writes of more than one GET
	Cut      int64 `json:"cut"`       // connections the server closed with GETs owed
	Owed     int64 `json:"owed"`      // GETs whose answers did not come, sent again
	Stale    int64 `json:"stale"`     // idle connections closed when taken
	Spread   int64 `json:"spread"`    // batches answered one after another, slowly: the depth halved
}

func (p *pipeline) stats() PipelineStats {
	return PipelineStats{MaxDepth: p.maxDepth, Depth: int(p.depth.Load()), Batches: p.batches.Load(), Cut: p.cut.Load(), Owed: p.owed.Load(), Stale: p.stale.Load(), Spread: p.spread.Load()}
}

// errPipeStale marks a pooled connection the server had closed: it failed
// before a byte of the first answer.
var errPipeStale = errors.New("connection closed by the server while idle")

// pipeAnswer is handed one answer: resp, whose Body it reads (all of it,
// or the connection ends after this answer unless what is left of the
// body is already buffered and at most pipeDrain), and when its request
// was written.
type pipeAnswer func(i int, resp *http.Response, sent time.Time)

// send writes reqs on one connection and hands their answers to answer,
// in order. wrote is told each time requests go on the wire (again: a retry on a
// fresh connection writes them again). It returns how many were answered;
// the rest are owed: err says why (nil when an answer ended the
// connection: Connection: close, no framing, a body not read).
func (p *pipeline) send(ctx context.Context, reqs []*http.Request, timeout time.Duration, wrote func(n int, again bool), answer pipeAnswer) (int, error) {
	for attempt := 0; ; attempt++ {
		pc, err := p.take(ctx, attempt > 0)
		if err != nil {
			return 0, pipeError(ctx, p.addr, err)
		}
		n, err := p.exchange(ctx, pc, reqs, timeout, func(n int) { wrote(n, attempt > 0) }, answer)
		if n == 0 && attempt == 0 && pc.reused && ctx.Err() == nil && errors.Is(err, errPipeStale) {
			continue // the server closed it while idle: once more, on a fresh one
		}
		if n < len(reqs) {
			p.owed.Add(int64(len(reqs) - n))
		}
		if err != nil {
			err = pipeError(ctx, p.addr, err)
		}
		return n, err
	}
}

// exchange is one attempt of send on pc. On an error, or when the answers
// end short of reqs, pc is closed; else it goes back to the pool.
func (p *pipeline) exchange(ctx context.Context, pc *pipeConn, reqs []*http.Request, timeout time.Duration, wrote func(int), answer pipeAnswer) (int, error) {
	deadline := func() time.Time {
		if timeout > 0 {
			return time.Now().Add(timeout)
		}
		d, _ := ctx.Deadline()
		return d
	}
	if err := pc.nc.SetDeadline(deadline()); err != nil {
		pc.nc.Close()
		return 0, err
	}
	stop := context.AfterFunc(ctx, func() { pc.nc.SetDeadline(time.Unix(1, 0)) })
	n, keep, pace, err := p.roundTrips(ctx, pc, reqs, deadline, wrote, answer)
	if !stop() || ctx.Err() != nil {
		keep = false // the context ended: its past deadline is on the connection
	}
	if !keep || n < len(reqs) {
		pc.nc.Close()
		return n, err
	}
	p.paced(n, pace)
	p.put(pc)
	return n, nil
}

// pace is when a batch's first and last answers came, after its write.
type pace struct{ first, last time.Duration }

// roundTrips writes reqs and reads their answers; keep says the
// connection may carry more, pa when the first and last answers came.
func (p *pipeline) roundTrips(ctx context.Context, pc *pipeConn, reqs []*http.Request, deadline func() time.Time, wrote func(int), answer pipeAnswer) (int, bool, pace, error) {
	var pa pace
	for _, r := range reqs {
		if err := r.Write(pc.bw); err != nil {
			return 0, false, pa, staleConn(pc, err)
		}
	}
	sent := time.Now()
	wrote(len(reqs))
	if len(reqs) > 1 {
		p.batches.Add(1)
	}
	if err := pc.bw.Flush(); err != nil {
		return 0, false, pa, staleConn(pc, err)
	}
	// A batch the server dropped, or left unanswered within the timeout,
	// with GETs owed — after some answers, or before any on a fresh
	// connection (a stale pooled one is retried first) — is what a server
	// or a proxy that does not take pipelined requests does: a cut.
	cut := func(i int, err error) {
		if ctx.Err() == nil && (i > 0 || (!pc.reused && len(reqs) > 1)) && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, syscall.ECONNRESET) || errors.Is(err, os.ErrDeadlineExceeded)) {
			p.shallower()
		}
	}
	if _, err := pc.br.Peek(1); err != nil {
		cut(0, err)
		return 0, false, pa, staleConn(pc, err)
	}
	for i, r := range reqs {
		if i > 0 {
			if err := pc.nc.SetReadDeadline(deadline()); err != nil {
				return i, false, pa, err
			}
		}
		resp, err := readAnswer(pc.br, r)
		if err == nil && resp.StatusCode == http.StatusRequestTimeout {
			// A server closing an idle connection says 408 first (net/http
			// takes it so): it came before, not for, this request. The
			// GETs from here on are owed; on a reused connection with
			// none answered, sent again on a fresh one.
			err = staleConn(pc, fmt.Errorf("%w: 408 Request Timeout", io.EOF))
			return i, false, pa, err
		}
		if err != nil {
			cut(i, err)
			return i, false, pa, err
		}
		chunked := len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
		keep := !resp.Close && resp.ProtoAtLeast(1, 1) && (resp.ContentLength >= 0 || chunked)
		body := &pipeBody{rc: resp.Body}
		resp.Body = body
		if tc, ok := pc.nc.(*tls.Conn); ok {
			st := tc.ConnectionState()
			resp.TLS = &st
		}
		if i == 0 {
			pa.first = time.Since(sent)
		}
		pa.last = time.Since(sent)
		answer(i, resp, sent)
		if !body.eof && !body.drain(resp.ContentLength, pc.br) {
			return i + 1, false, pa, nil
		}
		if !keep || (resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotFound) {
			// An error answer other than a missing key ends the batch:
			// one a server sent unasked (a 503 racing the write) would
			// put every answer after it one GET late, so the GETs after
			// it are owed, sent again one at a time.
			return i + 1, false, pa, nil
		}
	}
	return len(reqs), pc.br.Buffered() == 0, pa, nil
}

// readAnswer reads the answer to r, past informational ones.
func readAnswer(br *bufio.Reader, r *http.Request) (*http.Response, error) {
	for n := 0; ; n++ {
		resp, err := http.ReadResponse(br, r)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("101 Switching Protocols to a GET")
		case resp.StatusCode >= 200:
			return resp, nil
		case n >= pipeMax1xx:
			return nil, fmt.Errorf("more than %d informational answers", pipeMax1xx)
		}
	}
}

// pipeBody is an answer's body: it knows whether it was read to its end.
type pipeBody struct {
	rc   io.ReadCloser
	read int64
	eof  bool
}

func (b *pipeBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

// Close does nothing: the connection is the pipeline's.
func (b *pipeBody) Close() error { return nil }

// drain reads past what is left of a body of size bytes when it is at
// most pipeDrain and already buffered; it reports whether the body's end
// was reached.
func (b *pipeBody) drain(size int64, br *bufio.Reader) bool {
	left := size - b.read
	if size < 0 || left > pipeDrain || left > int64(br.Buffered()) {
		return false
	}
	_, err := io.Copy(io.Discard, b)
	return err == nil && b.eof
}

// shallower halves the depth: a connection was closed, or fell silent,
// with pipelined GETs owed after answering some — what a server or a
// proxy that does not take pipelined requests does (a server ending a
// connection politely says Connection: close in an answer, and that is
// not taken as this). From 2 it goes to 1 for good: the server is taken
// not to pipeline, and the GETs go one at a time.
func (p *pipeline) shallower() {
	p.cut.Add(1)
	p.good.Store(0)
	for {
		d := p.depth.Load()
		next := d / 2
		if d <= 2 {
			next = 1
			p.pinned.Store(true)
		}
		if d <= 1 || p.depth.CompareAndSwap(d, next) {
			return
		}
	}
}

// paced is told of a batch of n answered whole, and when its first and
// last answers came. A server that takes a connection's GETs one after
// another, each costing it more than a round trip's share (a slow disk
// behind it, or a test's latency added per request), answers a deep batch
// far later than its first GET: the batch's last answer after more than
// twice its first's wait (and pipeSlack) says the depth only queues GETs
// behind each other, so it halves (not pinned: this is no cut). A server
// that reads a batch and answers it at once, or whose answers come within
// that, lets the depth grow back (deeper).
func (p *pipeline) paced(n int, pa pace) {
	if n >= 2 && pa.last > 2*pa.first+pipeSlack {
		p.spread.Add(1)
		p.good.Store(0)
		for {
			d := p.depth.Load()
			if d <= 1 || p.depth.CompareAndSwap(d, d/2) {
				return
			}
		}
	}
	p.deeper()
}

// pipeSlack is what a batch's last answer may come after twice its
// first's without the depth being halved (paced): more than a local server
// takes to answer a whole batch of small GETs one by one (versitygw: about
// 150 µs a GET, 2.4 ms for 16), which costs a reader nothing (read-ahead
// is far ahead of it), and less than a connection's GETs queued behind a
// few milliseconds each.
const pipeSlack = 5 * time.Millisecond

// deeper is told of a batch answered whole, in time: every pipeDeeper of
// them in a row deepen by one, back up to maxDepth, unless the depth is
// pinned at 1.
func (p *pipeline) deeper() {
	if p.pinned.Load() || int(p.depth.Load()) >= p.maxDepth {
		return
	}
	if p.good.Add(1)%pipeDeeper == 0 {
		if d := p.depth.Load(); int(d) < p.maxDepth {
			p.depth.CompareAndSwap(d, d+1)
		}
	}
}

// pipeStart is a pipeline's first depth: it grows to maxDepth as batches
// are answered whole and in time (deeper), so a server that never answers
// pipelined GETs costs one request timeout, at depth 2, before the depth
// is pinned at 1 — not one a batch at the full depth.
const pipeStart = 2

// pipeDeeper is how many batches answered whole and in time in a row
// deepen the pipeline by one.
const pipeDeeper = 2

// staleConn marks err as a pooled connection's that the server had closed
// (EOF, reset or a broken pipe before a byte of the first answer).
func staleConn(pc *pipeConn, err error) error {
	if pc.reused && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		return fmt.Errorf("%w: %w", errPipeStale, err)
	}
	return err
}

// pipeError is err of a batch to addr, wrapping the context's error when
// the context ended (its end set the connection's deadline).
func pipeError(ctx context.Context, addr string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("pipelined GETs to %s: %w (%w)", addr, cerr, err)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("pipelined GETs to %s: no answer within the request timeout: %w", addr, err)
	}
	return fmt.Errorf("pipelined GETs to %s: %w", addr, err)
}
