package store

// The lean GET: a signature's bytes read with one request the store builds
// and signs itself, on the driver's own HTTP client, instead of through the
// backend's SDK. A CPU profile of a mount reading signatures cold spent a
// quarter of its time in the AWS SDK's per-request middleware (its retryer,
// user agent, endpoint rules, payload hashing, a CRC-64 table built per
// request); the lean path does what a GET needs and nothing else:
//
//	s3     the endpoint resolved once at open by the SDK's own rules, each
//	       GET signed with SigV4 (sigv4.go: the SDK's signature, made
//	       from parts fixed at open), credentials from the
//	       client's cached provider; the full-object checksum the answer
//	       carries (x-amz-checksum-mode) checked, as the SDK does
//	gcs    an XML-API media GET (scheme://host/BUCKET/OBJECT, as the Go
//	       client reads), on the client whose transport adds the bearer
//	       token; X-Goog-Hash crc32c checked, as the client does
//	azure  GET of the blob's URL with Shared Key (the canonical string of
//	       the Blob service, HMAC-SHA256 with the account key) or the
//	       SAS the container URL carries
//
// Everything around the request is the Store's, as on the SDK path: the
// request slot, the per-request timeout, the retries (read), one GET in
// Counts (and on S3 on the wire: the same counting client), ErrNotFound on
// a 404, the cap refused before the body when the answer declares a size
// and one byte past it when not, the admission asked before the body
// (readCapped), errors wrapped with the operation and the key and without
// the URL's query (a SAS). The key's Last-Modified comes from the answer's
// header.
//
// Which path a store reads with is decided once, at open (ReadPath says
// which and why): what the lean path does not know (gocloud's own S3
// opener, gRPC GCS, a connection string or Entra ID on Azure, SigV4a
// endpoints, a store made with New) stays on the SDK path, and so does
// Options.SDKReads. A key the SDKs' blob drivers would escape (leanKey)
// is read through the SDK, per call, so both paths name the same object.
// Only GetAdmitted (signature reads: getOpts.lean, get.go) takes it;
// conditional reads, records and streams stay on the SDK path.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// httpDoer sends one request: an *http.Client, or S3's wire-counting client.
type httpDoer interface {
	Do(r *http.Request) (*http.Response, error)
}

// leanBackend is what one backend's lean GET needs to know.
type leanBackend interface {
	// request is the signed GET of name (the key with the bucket's
	// prefix), with ctx.
	request(ctx context.Context, name string) (*http.Request, error)
	// verify checks a body read whole against the checksum its answer
	// carries (none: nil).
	verify(resp *http.Response, data []byte) error
}

// leanPath is a store's lean GET, made at open (nil on the SDK path).
type leanPath struct {
	be     leanBackend // read-only after open
	client httpDoer    // read-only after open: the driver's own client
	prefix string      // read-only after open: the bucket's prefix= (added to keys)
	label  string      // read-only after open: what ReadPath says
	sent   atomic.Int64

	// The pipelined GETs (pipeline.go, getbatch.go); all read-only after
	// the store is made.
	scheme, host string          // the origin the requests go to
	tr           *http.Transport // the driver's transport: its dialer, TLS and proxy; nil: no pipeline
	pipe         *pipeline       // nil: none (pipeWhy says why)
	pipeWhy      string
	// authorize adds what the driver's transport adds to a request
	// (GCS: the bearer token); nil: nothing.
	authorize func(r *http.Request) error
	wire      func(n int) // counts n GETs on the wire where the driver does (S3); nil: none
	dates     *storeClock // is handed each answer's Date, as the driver's client does; nil: none
}

// leanChoice is what a driver's open decided: the lean path, or (nil) why
// not.
type leanChoice struct {
	path *leanPath
	why  string // with path nil: why the SDK path is used
}

// sdkPath is the choice of the SDK path for reason why.
func sdkPath(why string) leanChoice { return leanChoice{why: why} }

// orNotFromURL is c, or for a driver New made (no choice) the SDK path.
func orNotFromURL(c leanChoice) leanChoice {
	if c.path == nil && c.why == "" {
		return sdkPath("a bucket not opened from a URL")
	}
	return c
}

// leanDriver is a driver that may read signatures on the lean path.
type leanDriver interface {
	leanChoice() leanChoice
}

// ReadPath says how the store reads signatures (GetAdmitted): "lean (s3:
// SigV4)" and the like, or "sdk" and why, for the status page.
func (s *Store) ReadPath() string {
	if s.lean != nil {
		if s.lean.pipe != nil {
			return fmt.Sprintf("lean (%s; pipelined, depth %d of %d)", s.lean.label, s.lean.pipe.depth.Load(), s.lean.pipe.maxDepth)
		}
		return "lean (" + s.lean.label + "; not pipelined: " + s.lean.pipeWhy + ")"
	}
	return "sdk (" + s.leanWhy + ")"
}

// LeanGets is how many GETs the lean path has sent (each is also one GET
// in Counts).
func (s *Store) LeanGets() int64 {
	if s.lean == nil {
		return 0
	}
	return s.lean.sent.Load()
}

// chooseReadPath settles the store's read path from its driver's choice.
func (s *Store) chooseReadPath(opts Options) {
	s.leanWhy = "no lean GET on " + s.drv.name()
	if ld, ok := s.drv.(leanDriver); ok {
		c := ld.leanChoice()
		s.lean, s.leanWhy = c.path, c.why
	}
	if opts.SDKReads && s.lean != nil {
		s.lean, s.leanWhy = nil, "Options.SDKReads"
	}
	if s.lean != nil {
		s.lean.pipe, s.lean.pipeWhy = newPipeline(s.lean.scheme, s.lean.host, s.lean.tr, idleConns(opts), opts.PipelineDepth)
	}
}

// leanKey reports whether the SDK path sends key as it is (no escaping by
// gocloud's s3blob, gcsblob or azureblob, which the lean path would have
// to mirror): valid UTF-8, no control character, none of \ " # % ?, no
// "../", no "__0x" (gocloud's escape marker), no trailing "/".
func leanKey(key string) bool {
	if key == "" || !utf8.ValidString(key) || strings.HasSuffix(key, "/") ||
		strings.Contains(key, "../") || strings.Contains(key, "__0x") {
		return false
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c < 0x20, c == 0x7f, c == '\\', c == '"', c == '#', c == '%', c == '?':
			return false
		}
	}
	return true
}

// leanReads reports whether get may read key on the lean path: the store
// has one, and the SDK would send the key as it is (leanKey).
func (s *Store) leanReads(key string) bool {
	return s.lean != nil && leanKey(key) && leanKey(s.lean.prefix+key)
}

// getLean is one attempt of get on the lean path: the body read as the
// SDK path reads it (readAdmitted: the cap, the admission), its checksum
// checked where the answer carries one, and the key's Last-Modified.
func (s *Store) getLean(ctx context.Context, key string, o getOpts) (got, error) {
	lp := s.lean
	req, err := lp.be.request(ctx, lp.prefix+key)
	if err != nil {
		return got{}, err
	}
	lp.sent.Add(1)
	resp, err := lp.client.Do(req)
	if err != nil {
		return got{}, redactURLError(err)
	}
	defer resp.Body.Close()
	return lp.answer(resp, o)
}

// answer reads a lean GET's answer (getLean's, or a pipelined one's:
// getbatch.go): an error status as a leanStatusError, else the body as
// the SDK path reads it (readAdmitted: the cap, the admission), its
// checksum checked where the answer carries one, and the key's
// Last-Modified.
func (lp *leanPath) answer(resp *http.Response, o getOpts) (got, error) {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return got{}, statusError(resp) // reads at most maxErrorBody of the body
	}
	data, err := readAdmitted(resp.Body, resp.ContentLength, o) // get.go; -1: not declared
	if err != nil {
		return got{}, err
	}
	if err := lp.be.verify(resp, data); err != nil {
		return got{}, fmt.Errorf("%w: %w", errBodyRead, err)
	}
	g := got{data: data}
	if lm := resp.Header.Get("Last-Modified"); lm != "" {
		if g.mod, err = http.ParseTime(lm); err != nil {
			g.mod = time.Time{} // as the SDKs: no time rather than a wrong one
		}
	}
	return g, nil
}

// leanStatusError is a lean GET's answer other than 2xx: its status (for
// mapStatus, by the common convention) and the backend's error code and
// message where its body or headers say them.
type leanStatusError struct {
	status int
	code   string // the backend's error code ("NoSuchKey", "BlobNotFound"); "" if none
	msg    string
}

func (e *leanStatusError) HTTPStatusCode() int { return e.status }

func (e *leanStatusError) Error() string {
	s := "GET answered " + http.StatusText(e.status)
	if s == "GET answered " {
		s += "status"
	}
	s = fmt.Sprintf("%s (%d)", s, e.status)
	if e.code != "" {
		s += ": " + e.code
	}
	if e.msg != "" {
		s += ": " + e.msg
	}
	return s
}

// statusError reads what an error answer says (its body is at most
// maxErrorBody: the guarded transport cuts it) into a leanStatusError.
func statusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &leanStatusError{status: resp.StatusCode, code: resp.Header.Get("x-ms-error-code")}
	if e.code == "" {
		e.code = xmlField(body, "Code")
	}
	e.msg = xmlField(body, "Message")
	if e.msg == "" {
		e.msg = xmlField(body, "Details") // GCS XML API
	}
	e.code, e.msg = clipText(e.code), clipText(e.msg)
	return e
}

// xmlField is the text of the first <name>…</name> of an error body, "" if
// none: the S3, GCS XML and Azure error documents all name Code and
// Message so.
func xmlField(body []byte, name string) string {
	s := string(body)
	i := strings.Index(s, "<"+name+">")
	if i < 0 {
		return ""
	}
	s = s[i+len(name)+2:]
	j := strings.Index(s, "</"+name+">")
	if j < 0 {
		return ""
	}
	return s[:j]
}

// clipText keeps an error field to one printable line of at most 200 bytes.
func clipText(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "?")), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// redactURLError drops the query of the URL a transport error names: a
// SAS token (Azure) or a signature never goes into a message.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.RawQuery != "" {
			u.RawQuery = "…"
			ue.URL = u.String()
		}
	}
	return err
}
