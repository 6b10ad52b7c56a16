package lyingproxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Op is what a request does, as the proxy classifies it.
type Op string

// The operations the proxy tells apart.
const (
	OpList   Op = "LIST"   // a listing of a bucket or container
	OpGet    Op = "GET"    // an object's bytes
	OpHead   Op = "HEAD"   // an object's attributes (GCS: its JSON metadata)
	OpPut    Op = "PUT"    // a write (a multipart or block part included)
	OpDelete Op = "DELETE" // an object's deletion
	OpOther  Op = "OTHER"  // anything else (bucket creation, ...)
)

var ops = []Op{OpList, OpGet, OpHead, OpPut, OpDelete, OpOther}

// request is what a protocol reads of one request.
type request struct {
	op     Op
	key    string // the object's name (GET, HEAD, PUT, DELETE)
	prefix string // the prefix asked for (LIST)
}

// protocol is what differs per server kind (s3.go, gcs.go, azure.go).
type protocol interface {
	classify(r *http.Request) request
	// prefixParam and tokenParam name a LIST's query parameters.
	prefixParam() string
	tokenParam() string
	// resign signs r again after its query was changed (a no-op where
	// the server checks no signature).
	resign(r *http.Request) error
	decodeList(body []byte) (listPage, error)
	// padAt is where whitespace may go in a LIST page (before its
	// closing tag or brace); -1 if nowhere.
	padAt(body []byte) int
	notFound(w http.ResponseWriter, r *http.Request)
	deleted(w http.ResponseWriter)
	// errorBody is the head and tail of an error answer of status,
	// padding goes between them, and the headers it carries.
	errorBody(status int) (head, tail string, h http.Header)
}

// listPage is one decoded LIST page.
type listPage interface {
	// keys are the names of its items (objects and common prefixes) in
	// order.
	keys() []string
	// keep keeps the items i for which keep(i) holds.
	keep(func(i int) bool)
	// token is the continuation it carries ("" none).
	token() string
	// setToken sets the continuation ("" none) and, on S3, IsTruncated.
	setToken(tok string, truncated bool)
	encode() ([]byte, error)
}

// Proxy is a reverse proxy in front of one server. It is safe for
// concurrent use; Set changes what it does from the next request on.
type Proxy struct {
	kind   string
	proto  protocol
	target *url.URL
	srv    *httptest.Server
	rp     *httputil.ReverseProxy

	cfg      atomic.Pointer[config]
	emptyN   atomic.Int64    // the continuations EndlessEmptyPages made
	stripped atomic.Int64    // the writes StripConditions stripped
	count    [6]atomic.Int64 // by index in ops

	// The listeners a Redirect sends clients to: another host
	// (127.0.0.2, or another port when that cannot be bound) and
	// another port of 127.0.0.1.
	otherHost, otherPort *Recorder
}

// Start starts a proxy for a server of kind ("s3", "gcs" or "azure", as
// testservers names them) at target (its http://127.0.0.1:PORT URL), on a
// free port of 127.0.0.1. It passes everything through until Set says
// otherwise, and stops when the test ends.
func Start(t testing.TB, kind, target string) *Proxy {
	t.Helper()
	p, err := New(kind, target)
	if err != nil {
		t.Fatalf("lyingproxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// New is Start without a test: Close stops it.
func New(kind, target string) (*Proxy, error) {
	tu, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", target, err)
	}
	p := &Proxy{kind: kind, target: tu}
	switch kind {
	case "s3":
		p.proto = s3Protocol{}
	case "gcs":
		p.proto = gcsProtocol{}
	case "azure":
		p.proto = azureProtocol{}
	default:
		return nil, fmt.Errorf("unknown kind %q (want s3, gcs or azure)", kind)
	}
	p.cfg.Store(&config{})
	p.rp = newReverseProxy(tu, kind != "s3")
	p.srv = httptest.NewServer(p)
	other, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		other, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		p.srv.Close()
		return nil, fmt.Errorf("listen for redirects: %w", err)
	}
	p.otherHost = newRecorder(other, newReverseProxy(tu, true))
	port, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("listen for redirects: %w", err)
	}
	p.otherPort = newRecorder(port, newReverseProxy(tu, true))
	return p, nil
}

// newReverseProxy forwards to target; hostHeader sends target's host as
// Host (S3 keeps the client's: its signature covers it).
func newReverseProxy(target *url.URL, hostHeader bool) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path, pr.Out.URL.RawPath = pr.In.URL.Path, pr.In.URL.RawPath
			if !hostHeader {
				pr.Out.Host = pr.In.Host
			}
			// Keep the client's headers as sent (no X-Forwarded-*: a
			// signature may cover them).
			pr.Out.Header.Del("X-Forwarded-For")
		},
		ErrorLog: nil,
	}
}

// Close stops the proxy and its redirect listeners.
func (p *Proxy) Close() {
	if p.srv != nil {
		p.srv.CloseClientConnections()
		p.srv.Close()
	}
	for _, r := range []*Recorder{p.otherHost, p.otherPort} {
		if r != nil {
			r.close()
		}
	}
}

// URL is the proxy's http://127.0.0.1:PORT.
func (p *Proxy) URL() string { return p.srv.URL }

// Addr is the proxy's 127.0.0.1:PORT.
func (p *Proxy) Addr() string { return strings.TrimPrefix(p.srv.URL, "http://") }

// StoreURL turns a blob URL of the server (as testservers hands them out)
// into one whose requests go through the proxy: S3's endpoint= and
// Azure's domain= are replaced; a gs:// URL gets endpoint= (which
// store.Open reads; STORAGE_EMULATOR_HOST still says no credentials).
func (p *Proxy) StoreURL(bucketURL string) string {
	u, err := url.Parse(bucketURL)
	if err != nil {
		return bucketURL
	}
	q := u.Query()
	switch p.kind {
	case "s3":
		q.Set("endpoint", p.URL())
	case "azure":
		q.Set("domain", p.Addr())
	case "gcs":
		q.Set("endpoint", p.URL()+"/storage/v1/")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Count is how many requests of op the proxy has received.
func (p *Proxy) Count(op Op) int64 {
	for i, o := range ops {
		if o == op {
			return p.count[i].Load()
		}
	}
	return 0
}

// ResetCounts zeroes the counts.
func (p *Proxy) ResetCounts() {
	for i := range p.count {
		p.count[i].Store(0)
	}
}

// OtherHost is the listener a Redirect(OtherHost) sends clients to.
func (p *Proxy) OtherHost() *Recorder { return p.otherHost }

// OtherPort is the listener a Redirect(OtherPort) sends clients to.
func (p *Proxy) OtherPort() *Recorder { return p.otherPort }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := p.proto.classify(r)
	for i, o := range ops {
		if o == req.op {
			p.count[i].Add(1)
		}
	}
	cfg := p.cfg.Load()
	if cfg.dateShift != 0 || cfg.noDate {
		w = &dateWriter{ResponseWriter: w, shift: cfg.dateShift, drop: cfg.noDate}
	}
	if rd := cfg.redirect; rd != nil && rd.ops.has(req.op) {
		to := p.otherHost
		if rd.to == OtherPort {
			to = p.otherPort
		}
		w.Header().Set("Location", to.URL()+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	if f := cfg.fail; f != nil && f.ops.has(req.op) {
		p.failWith(w, f.status, f.size)
		return
	}
	switch req.op {
	case OpGet, OpHead:
		if cfg.notFound[req.key] {
			p.proto.notFound(w, r)
			return
		}
		if f := cfg.flood; f != nil && req.op == OpGet && f.applies(req.key) {
			p.floodAnswer(w, r, f)
			return
		}
	case OpPut:
		if cfg.drops(req.key) {
			p.dropped(w, r)
			return
		}
		if cfg.stripConditions {
			out, err := p.stripConditions(r)
			if err != nil {
				http.Error(w, "lyingproxy: sign: "+err.Error(), http.StatusInternalServerError)
				return
			}
			r = out
		}
	case OpDelete:
		if cfg.keepAll || cfg.keep[req.key] {
			p.proto.deleted(w)
			return
		}
	case OpList:
		if cfg.listLies() && cfg.listApplies(req.prefix) {
			p.list(w, r, cfg)
			return
		}
	}
	p.rp.ServeHTTP(w, r)
}

// fakeToken is the continuation RepeatToken answers with, every time.
const fakeToken = "lyingproxy-repeat"

// list answers a LIST through cfg's lies: the request is changed (prefix
// dropped, the fake token dropped) and signed again, the server's page
// decoded, changed and encoded, or padded.
func (p *Proxy) list(w http.ResponseWriter, r *http.Request, cfg *config) {
	q := r.URL.Query()
	changed := false
	if cfg.ignorePrefix && q.Has(p.proto.prefixParam()) {
		q.Del(p.proto.prefixParam())
		changed = true
	}
	if (cfg.repeatToken || cfg.endlessEmpty) && strings.HasPrefix(q.Get(p.proto.tokenParam()), fakeToken) {
		q.Del(p.proto.tokenParam())
		changed = true
	}
	out := r.Clone(r.Context())
	if p.kind != "s3" {
		// A page to rewrite comes plain. (The S3 SDK asks for identity
		// itself, in a header its signature covers.)
		out.Header.Del("Accept-Encoding")
	}
	if changed {
		out.URL.RawQuery = q.Encode()
		out.RequestURI = ""
		if err := p.proto.resign(out); err != nil {
			http.Error(w, "lyingproxy: sign: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	rec := &recordWriter{header: http.Header{}}
	p.rp.ServeHTTP(rec, out)
	body := rec.body.Bytes()
	if rec.status != 0 && rec.status != http.StatusOK {
		copyHeader(w.Header(), rec.header)
		w.WriteHeader(rec.status)
		w.Write(body)
		return
	}
	if cfg.pageChanges() {
		pg, err := p.proto.decodeList(body)
		if err != nil {
			http.Error(w, "lyingproxy: decode page: "+err.Error(), http.StatusBadGateway)
			return
		}
		keys := pg.keys()
		if len(cfg.omit) > 0 {
			pg.keep(func(i int) bool { return !cfg.omit[keys[i]] })
		}
		switch {
		case cfg.emptyPages:
			pg.keep(func(int) bool { return false })
			pg.setToken("", false)
		case cfg.cutPage:
			n := len(pg.keys()) / 2
			i := 0
			pg.keep(func(int) bool { i++; return i <= n })
			pg.setToken("", cfg.truncatedNoToken)
		case cfg.truncatedNoToken:
			pg.setToken("", true)
		}
		if cfg.repeatToken {
			pg.setToken(fakeToken, true)
		}
		if cfg.endlessEmpty {
			pg.keep(func(int) bool { return false })
			pg.setToken(fakeToken+"-"+strconv.FormatInt(p.emptyN.Add(1), 10), true)
		}
		if body, err = pg.encode(); err != nil {
			http.Error(w, "lyingproxy: encode page: "+err.Error(), http.StatusBadGateway)
			return
		}
	}
	copyHeader(w.Header(), rec.header)
	w.Header().Del("Content-Encoding")
	if cfg.pad <= 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body)
		return
	}
	at := p.proto.padAt(body)
	if at < 0 {
		http.Error(w, "lyingproxy: no place to pad the page", http.StatusBadGateway)
		return
	}
	// No Content-Length: a client cannot refuse the page before reading
	// it, only by counting what it read.
	w.Header().Del("Content-Length")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(body[:at]); err != nil {
		return
	}
	if err := writeFill(w, ' ', cfg.pad); err != nil {
		return
	}
	w.Write(body[at:])
}

// failWith answers status with a body of about size bytes, streamed.
func (p *Proxy) failWith(w http.ResponseWriter, status int, size int64) {
	head, tail, h := p.proto.errorBody(status)
	copyHeader(w.Header(), h)
	fill := max(size-int64(len(head)+len(tail)), 0)
	w.Header().Set("Content-Length", strconv.FormatInt(int64(len(head)+len(tail))+fill, 10))
	w.WriteHeader(status)
	if _, err := io.WriteString(w, head); err != nil {
		return
	}
	if err := writeFill(w, 'x', fill); err != nil {
		return
	}
	io.WriteString(w, tail)
}

// writeFill writes n bytes c in 64 KiB writes: the proxy holds one chunk
// whatever n is.
func writeFill(w io.Writer, c byte, n int64) error {
	chunk := bytes.Repeat([]byte{c}, 64<<10)
	for n > 0 {
		k := min(n, int64(len(chunk)))
		if _, err := w.Write(chunk[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = append([]string(nil), v...)
	}
}

// recordWriter keeps a LIST answer to rewrite it. A LIST page is at most
// a few MB from the servers the proxy fronts.
type recordWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recordWriter) Header() http.Header { return r.header }
func (r *recordWriter) WriteHeader(s int) {
	if r.status == 0 {
		r.status = s
	}
}
func (r *recordWriter) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// Recorder is a listener a Redirect sends clients to: it records what
// arrives and forwards it to the server.
type Recorder struct {
	srv *http.Server
	url string
	rp  http.Handler

	mu    sync.Mutex // guards the fields below
	n     int
	auths []string // the Authorization headers that arrived
}

func newRecorder(l net.Listener, rp http.Handler) *Recorder {
	r := &Recorder{url: "http://" + l.Addr().String(), rp: rp}
	r.srv = &http.Server{Handler: r}
	go r.srv.Serve(l)
	return r
}

func (r *Recorder) close() { r.srv.Close() }

// URL is the listener's http://HOST:PORT.
func (r *Recorder) URL() string { return r.url }

// Requests is how many requests arrived.
func (r *Recorder) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Authorizations are the Authorization headers that arrived (one per
// request that carried one).
func (r *Recorder) Authorizations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}

func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.n++
	if a := req.Header.Get("Authorization"); a != "" {
		r.auths = append(r.auths, a)
	}
	r.mu.Unlock()
	r.rp.ServeHTTP(w, req)
}
