package web

import (
	"bytes"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"time"
)

// Limits bound what one client can make a server hold: memory (the body of
// a request), time (a request trickled a byte at a time, a response read
// never) and connections. Zero fields take DefaultLimits' values; a
// negative one turns that limit off.
type Limits struct {
	// MaxRequestBody is the most bytes of a request's body the handler
	// reads (Options.MaxRequestBody); a PROPFIND's XML is a few hundred.
	MaxRequestBody int64
	// ReadHeaderTimeout bounds reading a request's headers, ReadTimeout
	// the whole request, body included; WriteTimeout bounds the response
	// (from the end of the headers); IdleTimeout a kept-alive connection
	// waiting for its next request.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConns is the most connections served at once. A connection that
	// arrives at the cap closes the one idle longest (kept alive, waiting
	// for its next request); with none idle it waits (in the kernel's
	// accept queue) until one closes.
	MaxConns int
}

// DefaultLimits returns the limits of `oxyfs serve` and of the metrics
// server: what a zero field of Limits stands for. A function, not a variable:
// nothing can change the defaults of every server in the process.
func DefaultLimits() Limits {
	return Limits{
		MaxRequestBody:    DefaultMaxRequestBody,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      5 * time.Minute,
		IdleTimeout:       30 * time.Second,
		MaxConns:          256,
	}
}

// DefaultMaxRequestBody is the default of Options.MaxRequestBody.
const DefaultMaxRequestBody = 64 << 10

func (l Limits) orDefault() Limits {
	pick := func(v, d time.Duration) time.Duration {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0 // http.Server: no timeout
		}
		return v
	}
	d := DefaultLimits()
	l.ReadHeaderTimeout = pick(l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	l.ReadTimeout = pick(l.ReadTimeout, d.ReadTimeout)
	l.WriteTimeout = pick(l.WriteTimeout, d.WriteTimeout)
	l.IdleTimeout = pick(l.IdleTimeout, d.IdleTimeout)
	if l.ReadTimeout > 0 && (l.ReadHeaderTimeout == 0 || l.ReadHeaderTimeout > l.ReadTimeout) {
		l.ReadHeaderTimeout = l.ReadTimeout
	}
	if l.MaxConns == 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxRequestBody == 0 {
		l.MaxRequestBody = d.MaxRequestBody
	}
	return l
}

// NewServer returns an http.Server for h with l's timeouts (errorLog may
// be nil). Serve it on Listen's listener, which holds l's connection cap:
// the server tells it which connections are idle (ConnState), so a new one
// at the cap closes the one idle longest.
func NewServer(h http.Handler, l Limits, errorLog *log.Logger) *http.Server {
	l = l.orDefault()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          errorLog,
		ConnState:         trackConnState,
	}
}

// Listen listens on a TCP address and serves at most l.MaxConns
// connections at once (LimitListener).
func Listen(addr string, l Limits) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return LimitListener(ln, l), nil
}

// LimitListener caps ln at l.MaxConns connections at once (none when
// negative): at the cap, a new connection closes the one idle longest, or
// waits for one to close (connLimiter; the server must be NewServer's).
func LimitListener(ln net.Listener, l Limits) net.Listener {
	if n := l.orDefault().MaxConns; n > 0 {
		return newConnLimiter(ln, n)
	}
	return ln
}

// limitBody caps r's body at max bytes (none when max < 0). A PROPFIND's
// body is read here, whole, before WebDAV parses it: one longer than max
// (by Content-Length or as it comes) is 413, one that arrives too slowly
// (the server's ReadTimeout) is 408, and only max bytes are ever held. It
// reports whether the request may go on.
func limitBody(w http.ResponseWriter, r *http.Request, max int64) bool {
	if max < 0 || r.Body == nil || r.Body == http.NoBody {
		return true
	}
	if r.ContentLength > max {
		tooLarge(w, max)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, max)
	if r.Method != "PROPFIND" {
		return true // the handler never reads it; the server drains or closes
	}
	body, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		tooLarge(w, max)
		return false
	case errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		http.Error(w, "request body too slow", http.StatusRequestTimeout)
		return false
	case err != nil:
		w.Header().Set("Connection", "close")
		http.Error(w, "read request body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}

func tooLarge(w http.ResponseWriter, max int64) {
	w.Header().Set("Connection", "close")
	http.Error(w, "request body larger than the limit of the server", http.StatusRequestEntityTooLarge)
}
