package lyingproxy

// S3 (versitygw): path-style requests, /BUCKET/KEY, ListObjectsV2 pages in
// XML, SigV4 signatures (which cover the query: a changed LIST is signed
// again with the credentials of the process environment, as testservers
// puts them there).

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

type s3Protocol struct{}

func (s3Protocol) prefixParam() string { return "prefix" }
func (s3Protocol) tokenParam() string  { return "continuation-token" }

func (s3Protocol) classify(r *http.Request) request {
	bucketAndKey := strings.TrimPrefix(r.URL.Path, "/")
	_, key, hasKey := strings.Cut(bucketAndKey, "/")
	q := r.URL.Query()
	switch {
	case !hasKey || key == "":
		if r.Method == http.MethodGet && !q.Has("location") && !q.Has("uploads") && !q.Has("versioning") {
			return request{op: OpList, prefix: q.Get("prefix")}
		}
		return request{op: OpOther}
	case r.Method == http.MethodGet:
		return request{op: OpGet, key: key}
	case r.Method == http.MethodHead:
		return request{op: OpHead, key: key}
	case r.Method == http.MethodPut || r.Method == http.MethodPost:
		return request{op: OpPut, key: key}
	case r.Method == http.MethodDelete && !q.Has("uploadId"):
		return request{op: OpDelete, key: key}
	}
	return request{op: OpOther, key: key}
}

// resign signs r again (SigV4), in the region its first signature named.
func (s3Protocol) resign(r *http.Request) error {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return nil // not signed
	}
	scope := strings.Split(strings.SplitN(cred, ",", 2)[0], "/")
	if len(scope) < 3 {
		return errors.New("s3: unreadable credential scope")
	}
	creds := aws.Credentials{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}
	hash := r.Header.Get("X-Amz-Content-Sha256")
	if hash == "" {
		hash = "UNSIGNED-PAYLOAD"
	}
	r.Header.Del("Authorization")
	r.Header.Del("X-Amz-Date")
	r.URL.Host = r.Host
	return v4.NewSigner().SignHTTP(context.Background(), creds, r, hash, "s3", scope[2], time.Now())
}

func (s3Protocol) decodeList(body []byte) (listPage, error) {
	d, err := decodeXMLDoc(body)
	if err != nil {
		return nil, err
	}
	return &s3Page{d}, nil
}

func (s3Protocol) padAt(body []byte) int { return closingTagAt(body) }

func (s3Protocol) notFound(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusNotFound)
	if r.Method != http.MethodHead {
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
			`<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`))
	}
}

func (s3Protocol) deleted(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }

func (s3Protocol) errorBody(status int) (string, string, http.Header) {
	h := http.Header{"Content-Type": {"application/xml"}}
	return `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Error><Code>ServiceUnavailable</Code><Message>`,
		`</Message></Error>`, h
}

// s3Page is a ListBucketResult: its Contents and CommonPrefixes are the
// items.
type s3Page struct{ d *xmlDoc }

func s3Item(e xmlElem) (key string, ok bool) {
	switch e.XMLName.Local {
	case "Contents":
		return childText(e.Inner, "Key"), true
	case "CommonPrefixes":
		return childText(e.Inner, "Prefix"), true
	}
	return "", false
}

func (p *s3Page) keys() []string {
	var ks []string
	for _, c := range p.d.Children {
		if k, ok := s3Item(c); ok {
			ks = append(ks, k)
		}
	}
	return ks
}

func (p *s3Page) keep(f func(i int) bool) {
	out := p.d.Children[:0]
	i, n := 0, 0
	for _, c := range p.d.Children {
		if _, ok := s3Item(c); ok {
			keep := f(i)
			i++
			if !keep {
				continue
			}
			n++
		}
		out = append(out, c)
	}
	p.d.Children = out
	p.set("KeyCount", strconv.Itoa(n), false)
}

func (p *s3Page) token() string {
	for _, c := range p.d.Children {
		if c.XMLName.Local == "NextContinuationToken" {
			return childText(append(append([]byte("<t>"), c.Inner...), "</t>"...), "t")
		}
	}
	return ""
}

func (p *s3Page) setToken(tok string, truncated bool) {
	p.set("NextContinuationToken", tok, true)
	p.set("IsTruncated", strconv.FormatBool(truncated), true)
}

// set sets the text of the child called name ("" with drop: removes it),
// adding it if missing.
func (p *s3Page) set(name, text string, drop bool) {
	out := p.d.Children[:0]
	for _, c := range p.d.Children {
		if c.XMLName.Local != name {
			out = append(out, c)
		}
	}
	p.d.Children = out
	if text != "" || !drop {
		p.d.Children = append(p.d.Children, textElem(name, text))
	}
}

func (p *s3Page) encode() ([]byte, error) { return p.d.encode() }
