package web

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// lastModified PROPFINDs p at depth on the server at base and returns each
// response's href and getlastmodified.
func lastModified(t *testing.T, base, p, depth string) map[string]string {
	t.Helper()
	req, err := http.NewRequest("PROPFIND", base+p, strings.NewReader(
		`<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:getlastmodified/></D:prop></D:propfind>`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Depth", depth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusMultiStatus {
		t.Fatalf("PROPFIND %s: %s\n%s", p, resp.Status, data)
	}
	var ms struct {
		Responses []struct {
			Href string `xml:"href"`
			Mod  string `xml:"propstat>prop>getlastmodified"`
		} `xml:"response"`
	}
	if err := xml.Unmarshal(data, &ms); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	out := map[string]string{}
	for _, r := range ms.Responses {
		out[r.Href] = r.Mod
	}
	return out
}

// TestPropfindLastModifiedIsTheStoresLastChange: WebDAV's getlastmodified
// of the tree's directories and of signatures listed with them is the
// store's last change as the index knows it (the newest pack- key of its
// open), not year 1; a signature PROPFIND'd itself is read with its bytes
// and reports its own key's Last-Modified (handler.modTime), which the
// fold's pack- keys may follow by a second.
func TestPropfindLastModifiedIsTheStoresLastChange(t *testing.T) {
	s := serveFileStore(t, Options{}, auditorEntries())
	mt := s.ix.ModTime()
	if mt.IsZero() {
		t.Fatal("the index knows no last change of a file:// store")
	}
	want := mt.UTC().Format(http.TimeFormat)
	e := auditorEntries()[0]
	obj := "/dav/sig/" + e.Object[:2] + "/" + e.Object[2:] + "/"
	got := map[string]string{}
	for _, q := range []struct{ p, depth string }{{"/dav/", "1"}, {obj, "1"}, {"/dav/by-signer/", "1"}, {"/dav/" + e.Key(), "0"}} {
		for h, m := range lastModified(t, s.url, q.p, q.depth) {
			got[h] = m
		}
	}
	if _, ok := got["/dav/"+e.Key()]; !ok || len(got) < 8 {
		t.Fatalf("PROPFIND answered %v", got)
	}
	_, keyMod, err := s.st.GetAdmitted(context.Background(), e.Key(), nil)
	if err != nil || keyMod.IsZero() {
		t.Fatalf("read %s: modified %v, %v", e.Key(), keyMod, err)
	}
	for h, m := range got {
		if h == "/dav/"+e.Key() {
			if w := keyMod.UTC().Format(http.TimeFormat); m != w {
				t.Errorf("%s: getlastmodified %q, want %q (its key's own Last-Modified)", h, m, w)
			}
			continue
		}
		if m != want {
			t.Errorf("%s: getlastmodified %q, want %q (the store's last change)", h, m, want)
		}
	}
}

// TestPropfindLastModifiedWithoutStoreTimes: in the directory layout the
// index knows no time of the store; getlastmodified is then when the
// handler began serving the tree, not year 1.
func TestPropfindLastModifiedWithoutStoreTimes(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir(), store.Options{Layout: store.LayoutDirectory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, e := range []format.Entry{alice, bob} {
		if err := st.Put(ctx, e.Key(), []byte("signature by "+e.Value)); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := index.Open(ctx, st, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	before := time.Now().Truncate(time.Second)
	srv := httptest.NewServer(Handler(ix, Options{Logf: t.Logf}))
	t.Cleanup(srv.Close)
	after := time.Now()
	if !ix.ModTime().IsZero() {
		t.Fatalf("the directory layout's ModTime is %v", ix.ModTime())
	}
	got := lastModified(t, srv.URL, "/dav/sig/ab/"+objA[2:]+"/", "1")
	if len(got) != 3 {
		t.Fatalf("PROPFIND answered %v", got)
	}
	for h, m := range got {
		tm, err := http.ParseTime(m)
		if err != nil || tm.Before(before) || tm.After(after) {
			t.Errorf("%s: getlastmodified %q (%v), want between %v and %v", h, m, err, before, after)
		}
	}
}
