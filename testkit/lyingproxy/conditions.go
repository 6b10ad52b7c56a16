package lyingproxy

// StripConditions and FloodBody: a server that ignores the conditions of
// its writes, and one that sends a body without end.

import (
	"io"
	"net/http"
	"strings"
)

// StripConditions forwards every write (OpPut) without its conditions, so
// the server writes unconditionally and answers as if the condition held:
// S3 and Azure lose If-Match and If-None-Match (the request is signed
// again), GCS loses ifGenerationMatch and ifGenerationNotMatch (query) and
// x-goog-if-generation-match / -not-match (headers). A server that accepts
// the conditions and ignores them; Proxy.Stripped counts the writes that
// carried one.
func StripConditions() Mode { return func(c *config) { c.stripConditions = true } }

// FloodBody answers GETs of keys (none: every GET) with the server's own
// answer and body followed by n more bytes (n < 0: without end, until the
// client hangs up), with no Content-Length: a body a client can refuse only
// by counting what it read. The proxy holds 64 KiB of it.
func FloodBody(n int64, keys ...string) Mode {
	return func(c *config) {
		c.flood = &flood{extra: n}
		if len(keys) > 0 {
			c.flood.keys = map[string]bool{}
			for _, k := range keys {
				c.flood.keys[k] = true
			}
		}
	}
}

type flood struct {
	extra int64
	keys  map[string]bool // nil: every key
}

func (f *flood) applies(key string) bool { return f.keys == nil || f.keys[key] }

// conditionHeaders are the headers a write's condition travels in.
var conditionHeaders = []string{"If-Match", "If-None-Match", "X-Goog-If-Generation-Match", "X-Goog-If-Generation-Not-Match"}

// conditionParams are the query parameters a GCS write's condition travels in.
var conditionParams = []string{"ifGenerationMatch", "ifGenerationNotMatch"}

// stripConditions returns r without its write conditions (r itself when
// it carried none), signed again where the server checks a signature.
func (p *Proxy) stripConditions(r *http.Request) (*http.Request, error) {
	out := r.Clone(r.Context())
	changed := false
	for _, h := range conditionHeaders {
		if out.Header.Get(h) != "" {
			out.Header.Del(h)
			changed = true
		}
	}
	q := out.URL.Query()
	for _, k := range conditionParams {
		if q.Has(k) {
			q.Del(k)
			changed = true
		}
	}
	if !changed {
		return r, nil
	}
	p.stripped.Add(1)
	if raw := q.Encode(); raw != out.URL.RawQuery && (out.URL.RawQuery != "" || raw != "") {
		out.URL.RawQuery = raw
	}
	out.RequestURI = ""
	return out, p.proto.resign(out)
}

// Stripped is how many writes StripConditions forwarded without the
// condition they carried.
func (p *Proxy) Stripped() int64 { return p.stripped.Load() }

// floodAnswer forwards a GET and answers with the server's status,
// headers (but Content-Length) and body, then f.extra more bytes.
func (p *Proxy) floodAnswer(w http.ResponseWriter, r *http.Request, f *flood) {
	rec := &recordWriter{header: http.Header{}}
	p.rp.ServeHTTP(rec, r)
	copyHeader(w.Header(), rec.header)
	if rec.status != http.StatusOK {
		w.WriteHeader(rec.status)
		w.Write(rec.body.Bytes())
		return
	}
	for k := range w.Header() {
		if strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "X-Goog-Stored-Content-Length") {
			w.Header().Del(k)
		}
	}
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(rec.body.Bytes()); err != nil {
		return
	}
	if f.extra >= 0 {
		writeFill(w, 'x', f.extra)
		return
	}
	for writeFill(w, 'x', 1<<30) == nil {
	}
}

// DropWrites answers writes (OpPut) of keys (none: every key) with 200 and
// never forwards them: a server that acknowledges a write it does not
// keep. Its answer carries an ETag, Content-MD5 and X-Goog-Hash of no
// bytes written (the MD5 of nothing).
func DropWrites(keys ...string) Mode {
	return func(c *config) {
		c.drop = map[string]bool{}
		for _, k := range keys {
			c.drop[k] = true
		}
		c.dropAll = len(keys) == 0
	}
}

func (c *config) drops(key string) bool { return c.dropAll || c.drop[key] }

// dropped answers a write that is not forwarded.
func (p *Proxy) dropped(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
	}
	h := w.Header()
	h.Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
	h.Set("Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==")
	h.Set("X-Goog-Hash", "md5=1B2M2Y8AsgTpgAmY7PhCfg==")
	if p.kind == "gcs" {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"kind":"storage#object","name":"dropped","generation":"1","md5Hash":"1B2M2Y8AsgTpgAmY7PhCfg=="}`)
		return
	}
	w.WriteHeader(http.StatusCreated)
}
