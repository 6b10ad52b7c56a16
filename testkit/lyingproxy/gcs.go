package lyingproxy

// GCS (fake-gcs-server): the JSON API under /storage/v1/, /upload/ and
// /download/, and XML-API reads of /BUCKET/OBJECT, which the Go client
// sends for object bytes. Object names are path-escaped in JSON-API paths.
// No signatures: a changed LIST goes on as it is.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

type gcsProtocol struct{}

func (gcsProtocol) prefixParam() string { return "prefix" }
func (gcsProtocol) tokenParam() string  { return "pageToken" }

func (gcsProtocol) classify(r *http.Request) request {
	path := r.URL.EscapedPath()
	object := func(rest string) string {
		name, err := url.PathUnescape(rest)
		if err != nil {
			return rest
		}
		return name
	}
	switch {
	case strings.HasPrefix(path, "/storage/v1/b/"):
		_, rest, _ := strings.Cut(strings.TrimPrefix(path, "/storage/v1/b/"), "/")
		if rest == "o" {
			if r.Method == http.MethodGet {
				return request{op: OpList, prefix: r.URL.Query().Get("prefix")}
			}
			return request{op: OpPut}
		}
		name, ok := strings.CutPrefix(rest, "o/")
		if !ok || strings.Contains(name, "/") { // a bucket's metadata, compose, rewrite
			return request{op: OpOther}
		}
		key := object(name)
		switch r.Method {
		case http.MethodGet:
			if r.URL.Query().Get("alt") == "media" {
				return request{op: OpGet, key: key}
			}
			return request{op: OpHead, key: key}
		case http.MethodDelete:
			return request{op: OpDelete, key: key}
		case http.MethodPatch, http.MethodPut, http.MethodPost:
			return request{op: OpPut, key: key}
		}
		return request{op: OpOther, key: key}
	case strings.HasPrefix(path, "/upload/"):
		return request{op: OpPut, key: r.URL.Query().Get("name")}
	case strings.HasPrefix(path, "/download/storage/v1/b/"):
		_, rest, _ := strings.Cut(strings.TrimPrefix(path, "/download/storage/v1/b/"), "/")
		return request{op: OpGet, key: object(strings.TrimPrefix(rest, "o/"))}
	}
	// An XML-API read: /BUCKET/OBJECT.
	_, rest, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !ok || rest == "" {
		return request{op: OpOther}
	}
	switch r.Method {
	case http.MethodGet:
		return request{op: OpGet, key: object(rest)}
	case http.MethodHead:
		return request{op: OpHead, key: object(rest)}
	}
	return request{op: OpOther, key: object(rest)}
}

func (gcsProtocol) resign(*http.Request) error { return nil }

func (gcsProtocol) decodeList(body []byte) (listPage, error) {
	p := &gcsPage{}
	if err := json.Unmarshal(body, &p.fields); err != nil {
		return nil, err
	}
	if raw, ok := p.fields["items"]; ok {
		if err := json.Unmarshal(raw, &p.items); err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
	}
	if raw, ok := p.fields["prefixes"]; ok {
		if err := json.Unmarshal(raw, &p.prefixes); err != nil {
			return nil, fmt.Errorf("prefixes: %w", err)
		}
	}
	return p, nil
}

func (gcsProtocol) padAt(body []byte) int { return bytes.LastIndexByte(body, '}') }

func (gcsProtocol) notFound(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/storage/v1/") || strings.HasPrefix(r.URL.Path, "/download/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"code":404,"message":"No such object","errors":[{"reason":"notFound","message":"No such object"}]}}`))
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusNotFound)
	if r.Method != http.MethodHead {
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>No such object</Message></Error>`))
	}
}

func (gcsProtocol) deleted(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }

func (gcsProtocol) errorBody(status int) (string, string, http.Header) {
	h := http.Header{"Content-Type": {"application/json"}}
	return fmt.Sprintf(`{"error":{"code":%d,"message":"`, status), `"}}`, h
}

// gcsPage is an objects list: its items' names and its prefixes are the
// items, in that order; every other field passes through.
type gcsPage struct {
	fields   map[string]json.RawMessage
	items    []map[string]json.RawMessage
	prefixes []string
}

func (p *gcsPage) itemName(i int) string {
	var s string
	json.Unmarshal(p.items[i]["name"], &s)
	return s
}

func (p *gcsPage) keys() []string {
	ks := make([]string, 0, len(p.items)+len(p.prefixes))
	for i := range p.items {
		ks = append(ks, p.itemName(i))
	}
	return append(ks, p.prefixes...)
}

func (p *gcsPage) keep(f func(i int) bool) {
	items := p.items[:0]
	for i, it := range p.items {
		if f(i) {
			items = append(items, it)
		}
	}
	n := len(p.items)
	prefixes := p.prefixes[:0]
	for i, pr := range p.prefixes {
		if f(n + i) {
			prefixes = append(prefixes, pr)
		}
	}
	p.items, p.prefixes = items, prefixes
}

func (p *gcsPage) token() string {
	var s string
	json.Unmarshal(p.fields["nextPageToken"], &s)
	return s
}

func (p *gcsPage) setToken(tok string, _ bool) {
	delete(p.fields, "nextPageToken")
	if tok != "" {
		p.fields["nextPageToken"], _ = json.Marshal(tok)
	}
}

func (p *gcsPage) encode() ([]byte, error) {
	var err error
	delete(p.fields, "items")
	delete(p.fields, "prefixes")
	if len(p.items) > 0 {
		if p.fields["items"], err = json.Marshal(p.items); err != nil {
			return nil, err
		}
	}
	if len(p.prefixes) > 0 {
		if p.fields["prefixes"], err = json.Marshal(p.prefixes); err != nil {
			return nil, err
		}
	}
	return json.Marshal(p.fields)
}
