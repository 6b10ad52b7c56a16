package lyingproxy

// Azure Blob (Azurite): /ACCOUNT/CONTAINER[/BLOB], List Blobs pages in XML
// (EnumerationResults, items under Blobs), Shared Key signatures (which
// cover the query: a changed LIST is signed again with
// AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY of the process environment,
// as testservers puts them there).

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
)

// azureProtocol is Azure Blob's listing protocol: the prefix and the
// continuation (marker) are query parameters of List Blobs.
type azureProtocol struct{}

func (azureProtocol) classify(r *http.Request) request {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3) // account, container, blob
	q := r.URL.Query()
	if len(parts) < 3 || parts[2] == "" {
		if r.Method == http.MethodGet && q.Get("comp") == "list" && q.Get("restype") == "container" {
			return request{op: OpList, prefix: q.Get("prefix")}
		}
		return request{op: OpOther}
	}
	key := parts[2]
	switch r.Method {
	case http.MethodGet:
		return request{op: OpGet, key: key}
	case http.MethodHead:
		return request{op: OpHead, key: key}
	case http.MethodPut:
		return request{op: OpPut, key: key}
	case http.MethodDelete:
		return request{op: OpDelete, key: key}
	}
	return request{op: OpOther, key: key}
}

// resign signs r again with Shared Key (the string to sign of the Blob
// service, as azblob's SharedKeyCredential builds it).
func (azureProtocol) resign(r *http.Request) error {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "SharedKey ") {
		return nil // not signed with the account key
	}
	account := os.Getenv("AZURE_STORAGE_ACCOUNT")
	key, err := base64.StdEncoding.DecodeString(os.Getenv("AZURE_STORAGE_KEY"))
	if err != nil || account == "" {
		return errors.New("azure: no account key in the environment")
	}
	h := r.Header
	length := h.Get("Content-Length")
	if length == "0" {
		length = ""
	}
	var xms []string
	for k := range h {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-ms-") {
			xms = append(xms, lk)
		}
	}
	sort.Strings(xms)
	canonHeaders := make([]string, len(xms))
	for i, k := range xms {
		canonHeaders[i] = k + ":" + strings.Join(h.Values(k), ",")
	}
	res := "/" + account + r.URL.EscapedPath()
	params, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		vs := params[n]
		sort.Strings(vs)
		res += "\n" + strings.ToLower(n) + ":" + strings.Join(vs, ",")
	}
	toSign := strings.Join([]string{
		r.Method, h.Get("Content-Encoding"), h.Get("Content-Language"), length, h.Get("Content-MD5"),
		h.Get("Content-Type"), "", h.Get("If-Modified-Since"), h.Get("If-Match"), h.Get("If-None-Match"),
		h.Get("If-Unmodified-Since"), h.Get("Range"), strings.Join(canonHeaders, "\n"), res,
	}, "\n")
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(toSign))
	h.Set("Authorization", "SharedKey "+account+":"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return nil
}

func (azureProtocol) decodeList(body []byte) (listPage, error) {
	d, err := decodeXMLDoc(body)
	if err != nil {
		return nil, err
	}
	p := &azurePage{d: d, blobs: -1}
	for i, c := range d.Children {
		if c.XMLName.Local == "Blobs" {
			if p.items, err = decodeChildren(c.Inner); err != nil {
				return nil, err
			}
			p.blobs = i
		}
	}
	return p, nil
}

func (azureProtocol) padAt(body []byte) int { return closingTagAt(body) }

const azureErrorHead = `<?xml version="1.0" encoding="utf-8"?><Error><Code>`

func (azureProtocol) notFound(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("x-ms-error-code", "BlobNotFound")
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusNotFound)
	if r.Method != http.MethodHead {
		w.Write([]byte(azureErrorHead + `BlobNotFound</Code><Message>The specified blob does not exist.</Message></Error>`))
	}
}

func (azureProtocol) deleted(w http.ResponseWriter) {
	w.Header().Set("x-ms-delete-type-permanent", "true")
	w.WriteHeader(http.StatusAccepted)
}

func (azureProtocol) errorBody(status int) (string, string, http.Header) {
	h := http.Header{"Content-Type": {"application/xml"}, "X-Ms-Error-Code": {"ServerBusy"}}
	return azureErrorHead + `ServerBusy</Code><Message>`, `</Message></Error>`, h
}

// azurePage is an EnumerationResults: the Blob and BlobPrefix elements of
// its Blobs are the items.
type azurePage struct {
	d     *xmlDoc
	blobs int // index of Blobs among d's children; -1: none
	items []xmlElem
}

func (p *azurePage) keys() []string {
	ks := make([]string, len(p.items))
	for i, it := range p.items {
		ks[i] = childText(it.Inner, "Name")
	}
	return ks
}

func (p *azurePage) keep(f func(i int) bool) {
	out := p.items[:0]
	for i, it := range p.items {
		if f(i) {
			out = append(out, it)
		}
	}
	p.items = out
}

func (p *azurePage) token() string {
	for _, c := range p.d.Children {
		if c.XMLName.Local == "NextMarker" {
			return childText(append(append([]byte("<t>"), c.Inner...), "</t>"...), "t")
		}
	}
	return ""
}

func (p *azurePage) setToken(tok string, _ bool) {
	for i, c := range p.d.Children {
		if c.XMLName.Local == "NextMarker" {
			p.d.Children[i] = textElem("NextMarker", tok)
			return
		}
	}
	p.d.Children = append(p.d.Children, textElem("NextMarker", tok))
}

func (p *azurePage) encode() ([]byte, error) {
	if p.blobs >= 0 {
		inner, err := encodeChildren(p.items)
		if err != nil {
			return nil, err
		}
		p.d.Children[p.blobs].Inner = inner
	}
	return p.d.encode()
}

func (azureProtocol) prefixParam() string { return "prefix" }
func (azureProtocol) tokenParam() string  { return "marker" }
