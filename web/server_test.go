package web

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

const (
	objA = "ab01020304050607080910111213141516171819202122232425262728293031"
	objC = "cd00112233445566778899aabbccddeeff00112233445566778899aabbccddee"
)

var (
	alice = format.Entry{Kind: format.KindSig, Object: objA, Value: "alice"}
	bob   = format.Entry{Kind: format.KindSig, Object: objA, Value: "bob"}
	carol = format.Entry{Kind: format.KindSig, Object: objC, Value: "carol"}
	seal  = format.Entry{Kind: format.KindSeal, Object: objC, Value: "odd name %?#"}
)

// fixture is a folded mem store of a few entries, an index on it and a real
// HTTP server serving it.
type fixture struct {
	st  *store.Store
	ix  *index.Index
	srv *httptest.Server
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	return newFixtureOf(t, opts, []format.Entry{alice, bob, carol, seal})
}

// newFixtureOf is newFixture of other entries (a signature's bytes are
// "signature of <object> by <signer>").
func newFixtureOf(t *testing.T, opts Options, entries []format.Entry) *fixture {
	t.Helper()
	ctx := context.Background()
	st := storefixture.NewMem(t)
	for _, e := range entries {
		var data []byte
		if e.Kind == format.KindSig {
			data = []byte("signature of " + e.Object + " by " + e.Value)
		}
		if err := st.Put(ctx, e.Key(), data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fold.Complete(ctx, st, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(ctx, st, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	srv := httptest.NewServer(Handler(ix, opts))
	t.Cleanup(srv.Close)
	return &fixture{st: st, ix: ix, srv: srv}
}

// noRedirect is a client that reports redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (f *fixture) do(t *testing.T, c *http.Client, method, p string, hdr map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+p, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

func (f *fixture) get(t *testing.T, p string, want int) (*http.Response, []byte) {
	t.Helper()
	resp, data := f.do(t, noRedirect, http.MethodGet, p, nil, "")
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %s, want %d\n%s", p, resp.Status, want, data)
	}
	return resp, data
}

// keyURL is the URL path of an entry, escaped.
func keyURL(e format.Entry) string { return escapePath("/" + e.Key()) }

func TestPagesAndBytesOfAFoldedStoreSendNoList(t *testing.T) {
	f := newFixture(t, Options{})
	before := f.st.Counts()

	_, page := f.get(t, "/", http.StatusOK)
	for _, want := range []string{`href="./sig/"`, `href="./by-signer/"`, `href="/.oxy/status"`, "(folded)"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Fatalf("root page lacks %s:\n%s", want, page)
		}
	}
	resp, _ := f.get(t, "/sig", http.StatusFound)
	if loc := resp.Header.Get("Location"); loc != "/sig/" {
		t.Fatalf("/sig redirects to %q", loc)
	}
	_, page = f.get(t, "/sig/ab/"+objA[2:]+"/", http.StatusOK)
	if !bytes.Contains(page, []byte(`href="./alice"`)) || !bytes.Contains(page, []byte(`href="./bob"`)) {
		t.Fatalf("object page:\n%s", page)
	}
	var dir dirPage
	_, data := f.get(t, "/seal/cd/"+objC[2:]+"/?format=json", http.StatusOK)
	if err := json.Unmarshal(data, &dir); err != nil {
		t.Fatal(err)
	}
	if len(dir.Entries) != 1 || dir.Entries[0].Name != seal.Value || dir.Entries[0].Key != seal.Key() || dir.Entries[0].Type != "file" {
		t.Fatalf("seal directory JSON: %s", data)
	}
	// An entry of a name that needs escaping: an empty body.
	resp, data = f.get(t, keyURL(seal), http.StatusOK)
	if len(data) != 0 || resp.Header.Get("Content-Length") != "0" {
		t.Fatalf("seal entry: %q %v", data, resp.Header)
	}
	if d := f.st.Counts().Sub(before); d.Total() != 0 {
		t.Fatalf("browsing pages sent %v, want nothing", d)
	}

	// A signature's bytes: what ReadSig returns, one GET.
	resp, data = f.get(t, keyURL(alice), http.StatusOK)
	want, err := f.ix.ReadSig(context.Background(), alice)
	if err != nil || !bytes.Equal(data, want) {
		t.Fatalf("GET %s = %q, ReadSig = %q %v", alice.Key(), data, want, err)
	}
	if resp.Header.Get("Content-Type") != "application/octet-stream" || resp.Header.Get("Content-Length") != strconv.Itoa(len(want)) {
		t.Fatalf("headers %v, want application/octet-stream of %d bytes", resp.Header, len(want))
	}
	resp, data = f.do(t, noRedirect, http.MethodHead, keyURL(bob), nil, "")
	if resp.StatusCode != http.StatusOK || len(data) != 0 || resp.Header.Get("Content-Length") != strconv.Itoa(len("signature of "+objA+" by bob")) {
		t.Fatalf("HEAD: %s %v", resp.Status, resp.Header)
	}
	// A by-signer link redirects to the signature.
	resp, _ = f.get(t, "/by-signer/carol/"+objC, http.StatusFound)
	if loc := resp.Header.Get("Location"); loc != keyURL(carol) {
		t.Fatalf("by-signer link redirects to %q, want %q", loc, keyURL(carol))
	}
	resp, err = http.Get(f.srv.URL + "/by-signer/carol/" + objC)
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(data) != "signature of "+objC+" by carol" {
		t.Fatalf("following the link: %q", data)
	}
	d := f.st.Counts().Sub(before)
	if d.List != 0 || d.Head != 0 || d.Put != 0 || d.Delete != 0 || d.Get < 3 {
		t.Fatalf("reading three signatures sent %v", d)
	}
	f.get(t, "/sig/ab/"+objA[2:]+"/nobody", http.StatusNotFound)
	f.get(t, "/nothing", http.StatusNotFound)
}

func TestStatusIsTheIndexStatusAsJSON(t *testing.T) {
	f := newFixture(t, Options{})
	resp, data := f.get(t, StatusPath, http.StatusOK)
	var s index.Status
	if err := json.Unmarshal(data, &s); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%v: %s", err, data)
	}
	if s.Mode != index.ModeFolded || s.Entries != 4 || s.OpenRequests != (store.Counts{List: 1, Get: 3}) {
		t.Fatalf("status %+v", s)
	}
}

func TestWritesAreRefused(t *testing.T) {
	f := newFixture(t, Options{WebDAVRoot: true})
	before := f.st.Counts()
	for _, m := range []string{"PUT", "DELETE", "MKCOL", "COPY", "MOVE", "PROPPATCH", "LOCK", "UNLOCK", "POST", "PATCH"} {
		for _, p := range []string{keyURL(alice), "/dav" + keyURL(alice), "/dav/sig/new/", "/sig/ab/new"} {
			resp, _ := f.do(t, noRedirect, m, p, map[string]string{"Destination": f.srv.URL + "/dav/sig/x"}, "data")
			if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(resp.Header.Get("Allow"), "GET") || strings.Contains(resp.Header.Get("Allow"), m) {
				t.Errorf("%s %s: %s, Allow %q; want 405", m, p, resp.Status, resp.Header.Get("Allow"))
			}
		}
	}
	if d := f.st.Counts().Sub(before); d.Total() != 0 {
		t.Fatalf("refused writes sent %v", d)
	}
	resp, _ := f.do(t, noRedirect, http.MethodOptions, "/dav/sig/", nil, "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Allow") != allowDAV || resp.Header.Get("DAV") != "1" {
		t.Fatalf("OPTIONS: %s %v", resp.Status, resp.Header)
	}
}

// multistatus is the part of a PROPFIND answer the tests read.
type multistatus struct {
	Responses []struct {
		Href     string `xml:"href"`
		Propstat []struct {
			Prop struct {
				ResourceType struct {
					Collection *struct{} `xml:"collection"`
				} `xml:"resourcetype"`
				Length string `xml:"getcontentlength"`
				Type   string `xml:"getcontenttype"`
			} `xml:"prop"`
		} `xml:"propstat"`
	} `xml:"response"`
}

// settle waits until the store's request counts stop moving (read-ahead's
// GETs in flight have ended), up to 10 s.
func (f *fixture) settle(t *testing.T) {
	t.Helper()
	last, still := f.st.Counts(), 0
	for deadline := time.Now().Add(10 * time.Second); still < 5 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if c := f.st.Counts(); c == last {
			still++
		} else {
			last, still = c, 0
		}
	}
}

func (f *fixture) propfind(t *testing.T, p, depth string) (multistatus, store.Counts) {
	t.Helper()
	before := f.st.Counts()
	resp, data := f.do(t, noRedirect, "PROPFIND", p, map[string]string{"Depth": depth, "Content-Type": "application/xml"},
		`<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:resourcetype/><D:getcontentlength/><D:getcontenttype/></D:prop></D:propfind>`)
	if resp.StatusCode != http.StatusMultiStatus {
		t.Fatalf("PROPFIND %s: %s\n%s", p, resp.Status, data)
	}
	var ms multistatus
	if err := xml.Unmarshal(data, &ms); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	return ms, f.st.Counts().Sub(before)
}

func hrefs(ms multistatus) []string {
	var out []string
	for _, r := range ms.Responses {
		h, err := url.PathUnescape(r.Href)
		if err != nil {
			h = r.Href
		}
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

func TestPropfindNamesChildrenAndSendsNoList(t *testing.T) {
	f := newFixture(t, Options{})
	ms, d := f.propfind(t, "/dav/", "1")
	want := []string{"/dav/", "/dav/accepted/", "/dav/approval/", "/dav/by-signer/", "/dav/cert/", "/dav/receipt/", "/dav/seal/", "/dav/sig/"}
	if got := hrefs(ms); !slices.Equal(got, want) || d.Total() != 0 {
		t.Fatalf("PROPFIND /dav/ Depth 1: %v (sent %v), want %v", got, d, want)
	}
	ms, d = f.propfind(t, "/dav/sig/ab/", "1")
	if got := hrefs(ms); !slices.Equal(got, []string{"/dav/sig/ab/", "/dav/sig/ab/" + objA[2:] + "/"}) || d.Total() != 0 {
		t.Fatalf("PROPFIND of sig/ab: %v (sent %v)", got, d)
	}
	// An object's signatures: listed without reading them (issue 41, item
	// 8), so without a size the index does not know yet.
	ms, d = f.propfind(t, "/dav/sig/ab/"+objA[2:]+"/", "1")
	obj := "/dav/sig/ab/" + objA[2:] + "/"
	if got := hrefs(ms); !slices.Equal(got, []string{obj, obj + "alice", obj + "bob"}) {
		t.Fatalf("PROPFIND of an object: %v", got)
	}
	if d.Total() != 0 {
		t.Fatalf("PROPFIND of an object sent %v, want nothing", d)
	}
	for _, r := range ms.Responses {
		if p := r.Propstat[0].Prop; strings.HasSuffix(r.Href, "alice") && (p.Length != "" || p.Type != "application/octet-stream" || p.ResourceType.Collection != nil) {
			t.Fatalf("alice's props, not read yet: %+v", p)
		}
	}
	// A PROPFIND of the signature itself reads its size (one GET, as a
	// stat on the mount, and read-ahead's of the signatures after it: the
	// store has three); then a listing knows it too, and reads nothing.
	for _, c := range []struct {
		p    string
		most int64
	}{{obj + "alice", 3}, {obj, 0}} {
		p, most := c.p, c.most
		// Read-ahead's GETs started by the PROPFIND before end on their
		// own: they are not this PROPFIND's.
		f.settle(t)
		ms, d = f.propfind(t, p, "1")
		if d.List != 0 || d.Head != 0 || d.Get > most {
			t.Fatalf("PROPFIND %s sent %v, want %d GETs at most", p, d, most)
		}
		for _, r := range ms.Responses {
			if strings.HasSuffix(r.Href, "alice") {
				p := r.Propstat[0].Prop
				if p.Length != strconv.Itoa(len("signature of "+objA+" by alice")) || p.Type != "application/octet-stream" || p.ResourceType.Collection != nil {
					t.Fatalf("alice's props: %+v", p)
				}
			}
		}
	}
	// by-signer links are the files they point to.
	ms, _ = f.propfind(t, "/dav/by-signer/carol/", "1")
	if got := hrefs(ms); !slices.Equal(got, []string{"/dav/by-signer/carol/", "/dav/by-signer/carol/" + objC}) {
		t.Fatalf("PROPFIND of by-signer/carol: %v", got)
	}
	// GET under /dav/ is the same bytes.
	_, data := f.get(t, "/dav"+keyURL(carol), http.StatusOK)
	if string(data) != "signature of "+objC+" by carol" {
		t.Fatalf("GET under /dav/: %q", data)
	}
	// Depth infinity is refused.
	for _, depth := range []string{"infinity", ""} {
		resp, body := f.do(t, noRedirect, "PROPFIND", "/dav/", map[string]string{"Depth": depth}, "")
		if resp.StatusCode != http.StatusForbidden || !bytes.Contains(body, []byte("propfind-finite-depth")) {
			t.Fatalf("PROPFIND Depth %q: %s %s", depth, resp.Status, body)
		}
	}
	// Outside /dav/, PROPFIND only with WebDAVRoot.
	if resp, _ := f.do(t, noRedirect, "PROPFIND", "/sig/", map[string]string{"Depth": "1"}, ""); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("PROPFIND /sig/ without WebDAVRoot: %s", resp.Status)
	}
}

func TestWebDAVRootServesEveryPath(t *testing.T) {
	f := newFixture(t, Options{WebDAVRoot: true})
	ms, d := f.propfind(t, "/sig/", "1")
	if got := hrefs(ms); !slices.Equal(got, []string{"/sig/", "/sig/ab/", "/sig/cd/"}) || d.Total() != 0 {
		t.Fatalf("PROPFIND /sig/: %v (sent %v)", got, d)
	}
	if _, page := f.get(t, "/", http.StatusOK); !bytes.Contains(page, []byte("<html>")) {
		t.Fatalf("GET / with WebDAVRoot: %s", page)
	}
	if _, data := f.get(t, StatusPath, http.StatusOK); !bytes.Contains(data, []byte(`"mode"`)) {
		t.Fatalf("status with WebDAVRoot: %s", data)
	}
}

func TestLoopbackOnlyRefusesOtherHosts(t *testing.T) {
	f := newFixture(t, Options{LoopbackOnly: true})
	for host, want := range map[string]int{
		"":                  http.StatusOK, // the server's own 127.0.0.1:port
		"localhost:8080":    http.StatusOK,
		"[::1]:8080":        http.StatusOK,
		"attacker.example":  http.StatusForbidden,
		"10.0.0.1:8080":     http.StatusForbidden,
		"127.0.0.1.nip.io":  http.StatusForbidden,
		"foo.localhost:123": http.StatusOK,
	} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %s, want %d", host, resp.Status, want)
		}
	}
}
