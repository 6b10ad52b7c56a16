package lyingproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// canned is a fake server of one protocol: a LIST answers one page of
// four keys with a continuation; every request is recorded.
type canned struct {
	kind     string
	page     string // the LIST page
	listPath string // a LIST of prefix "a/" (the query carries it)
	objPath  string // the object "a/1"

	mu   sync.Mutex
	seen []*http.Request
}

var cannedServers = []*canned{
	{
		kind: "s3",
		page: `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>a/</Prefix><KeyCount>4</KeyCount><MaxKeys>4</MaxKeys><IsTruncated>true</IsTruncated><Contents><Key>a/1</Key><Size>1</Size></Contents><Contents><Key>a/2</Key><Size>1</Size></Contents><Contents><Key>a/3</Key><Size>1</Size></Contents><Contents><Key>a/4</Key><Size>1</Size></Contents><NextContinuationToken>tok1</NextContinuationToken></ListBucketResult>`,
		listPath: "/b?list-type=2&prefix=a%2F",
		objPath:  "/b/a/1",
	},
	{
		kind:     "gcs",
		page:     `{"kind":"storage#objects","nextPageToken":"tok1","items":[{"name":"a/1","size":"1"},{"name":"a/2","size":"1"},{"name":"a/3","size":"1"},{"name":"a/4","size":"1"}]}`,
		listPath: "/storage/v1/b/b/o?prefix=a%2F",
		objPath:  "/storage/v1/b/b/o/a%2F1?alt=media",
	},
	{
		kind:     "azure",
		page:     `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://127.0.0.1/devstoreaccount1" ContainerName="b"><Prefix>a/</Prefix><MaxResults>4</MaxResults><Blobs><Blob><Name>a/1</Name><Properties><Content-Length>1</Content-Length></Properties></Blob><Blob><Name>a/2</Name><Properties><Content-Length>1</Content-Length></Properties></Blob><Blob><Name>a/3</Name><Properties><Content-Length>1</Content-Length></Properties></Blob><Blob><Name>a/4</Name><Properties><Content-Length>1</Content-Length></Properties></Blob></Blobs><NextMarker>tok1</NextMarker></EnumerationResults>`,
		listPath: "/devstoreaccount1/b?restype=container&comp=list&prefix=a%2F",
		objPath:  "/devstoreaccount1/b/a/1",
	},
}

func (c *canned) start(t *testing.T) *Proxy {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.seen = append(c.seen, r)
		c.mu.Unlock()
		if r.Method == http.MethodGet && r.URL.Path == strings.SplitN(c.listPath, "?", 2)[0] {
			io.WriteString(w, c.page)
			return
		}
		io.WriteString(w, "x")
	}))
	t.Cleanup(srv.Close)
	return Start(t, c.kind, srv.URL)
}

func (c *canned) last() *http.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) == 0 {
		return nil
	}
	return c.seen[len(c.seen)-1]
}

func do(t *testing.T, method, u string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, nil)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// listed decodes a LIST answer with the proxy's own decoder.
func listed(t *testing.T, p *Proxy, body string) ([]string, string) {
	t.Helper()
	pg, err := p.proto.decodeList([]byte(body))
	if err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return pg.keys(), pg.token()
}

func TestProxyRewritesAsClaimed(t *testing.T) {
	for _, c := range cannedServers {
		t.Run(c.kind, func(t *testing.T) {
			p := c.start(t)
			all := []string{"a/1", "a/2", "a/3", "a/4"}

			_, body := do(t, "GET", p.URL()+c.listPath)
			if keys, tok := listed(t, p, body); !slices.Equal(keys, all) || tok != "tok1" {
				t.Fatalf("pass-through: keys %v token %q", keys, tok)
			}

			p.Set(IgnorePrefix())
			do(t, "GET", p.URL()+c.listPath)
			if q := c.last().URL.Query(); q.Has("prefix") {
				t.Errorf("IgnorePrefix: the server got prefix=%q", q.Get("prefix"))
			}

			p.Set(RepeatToken())
			_, body = do(t, "GET", p.URL()+c.listPath)
			keys, tok := listed(t, p, body)
			if tok != fakeToken || !slices.Equal(keys, all) {
				t.Fatalf("RepeatToken: keys %v token %q", keys, tok)
			}
			param := p.proto.tokenParam()
			_, body = do(t, "GET", p.URL()+c.listPath+"&"+param+"="+url.QueryEscape(tok))
			if q := c.last().URL.Query(); q.Has(param) {
				t.Errorf("RepeatToken: the server got %s=%q", param, q.Get(param))
			}
			if _, tok2 := listed(t, p, body); tok2 != tok {
				t.Errorf("RepeatToken: second token %q, want %q", tok2, tok)
			}

			p.Set(CutPage())
			_, body = do(t, "GET", p.URL()+c.listPath)
			if keys, tok := listed(t, p, body); !slices.Equal(keys, all[:2]) || tok != "" {
				t.Errorf("CutPage: keys %v token %q", keys, tok)
			}

			p.Set(TruncatedNoToken())
			_, body = do(t, "GET", p.URL()+c.listPath)
			if keys, tok := listed(t, p, body); !slices.Equal(keys, all) || tok != "" {
				t.Errorf("TruncatedNoToken: keys %v token %q", keys, tok)
			}
			if c.kind == "s3" && !strings.Contains(body, "<IsTruncated>true</IsTruncated>") {
				t.Errorf("TruncatedNoToken: page not marked truncated: %s", body)
			}

			p.Set(EmptyPages())
			_, body = do(t, "GET", p.URL()+c.listPath)
			if keys, tok := listed(t, p, body); len(keys) != 0 || tok != "" {
				t.Errorf("EmptyPages: keys %v token %q", keys, tok)
			}

			p.Set(OmitKeys("a/2"))
			_, body = do(t, "GET", p.URL()+c.listPath)
			if keys, _ := listed(t, p, body); !slices.Equal(keys, []string{"a/1", "a/3", "a/4"}) {
				t.Errorf("OmitKeys: keys %v", keys)
			}

			p.Set(ListsUnder("z/"), EmptyPages())
			_, body = do(t, "GET", p.URL()+c.listPath)
			if keys, _ := listed(t, p, body); !slices.Equal(keys, all) {
				t.Errorf("ListsUnder(z/): a LIST of a/ was changed: %v", keys)
			}

			p.Set(PadList(1 << 20))
			_, body = do(t, "GET", p.URL()+c.listPath)
			if len(body) != len(c.page)+1<<20 {
				t.Errorf("PadList: %d bytes, want %d", len(body), len(c.page)+1<<20)
			}
			if keys, _ := listed(t, p, body); !slices.Equal(keys, all) {
				t.Errorf("PadList: keys %v", keys)
			}

			p.Set(NotFound("a/1"))
			if resp, _ := do(t, "GET", p.URL()+c.objPath); resp.StatusCode != http.StatusNotFound {
				t.Errorf("NotFound: GET answered %s", resp.Status)
			}

			p.Set(KeepOnDelete())
			n := len(c.seen)
			resp, _ := do(t, "DELETE", p.URL()+c.objPath)
			if resp.StatusCode/100 != 2 || len(c.seen) != n {
				t.Errorf("KeepOnDelete: %s, %d requests reached the server", resp.Status, len(c.seen)-n)
			}

			p.Set(ErrorBodies(http.StatusServiceUnavailable, 3<<20, OpGet))
			resp, body = do(t, "GET", p.URL()+c.objPath)
			if resp.StatusCode != http.StatusServiceUnavailable || len(body) != 3<<20 {
				t.Errorf("ErrorBodies: %s with %d bytes", resp.Status, len(body))
			}

			p.Set(Redirect(OtherPort))
			resp, _ = do(t, "GET", p.URL()+c.objPath)
			if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusTemporaryRedirect || !strings.HasPrefix(loc, p.OtherPort().URL()+"/") {
				t.Errorf("Redirect: %s to %q", resp.Status, loc)
			}
			req, _ := http.NewRequest("GET", p.URL()+c.objPath, nil)
			req.Header.Set("Authorization", "secret")
			if resp, err := http.DefaultClient.Do(req); err != nil {
				t.Fatal(err)
			} else {
				resp.Body.Close()
			}
			if p.OtherPort().Requests() != 1 || !slices.Equal(p.OtherPort().Authorizations(), []string{"secret"}) {
				t.Errorf("Redirect: the other port saw %d requests, Authorization %q", p.OtherPort().Requests(), p.OtherPort().Authorizations())
			}

			if p.Count(OpList) != 10 || p.Count(OpDelete) != 1 {
				t.Errorf("counts: LIST %d DELETE %d", p.Count(OpList), p.Count(OpDelete))
			}
		})
	}
}
