package store

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestCheckPageRefusesKeysOutsideThePrefix(t *testing.T) {
	items := []ListItem{{Key: "sig/aa/1"}, {Key: "pack-entries"}}
	err := checkPage("sig/", nil, items, nil)
	if !errors.Is(err, ErrBadListing) || !strings.Contains(err.Error(), `"pack-entries"`) || !strings.Contains(err.Error(), `"sig/"`) {
		t.Fatalf("err %v, want ErrBadListing naming the key and the prefix", err)
	}
	if err := checkPage("", nil, items, nil); err != nil {
		t.Fatalf("every key lies under the empty prefix: %v", err)
	}
	if err := checkPage("sig/", []byte("t1"), items[:1], []byte("t1")); !errors.Is(err, ErrBadListing) {
		t.Fatalf("a page answering the continuation it was asked with: err %v", err)
	}
}

func TestListCheckBounds(t *testing.T) {
	c := newListCheck("sig/")
	for _, tok := range []string{"A", "B"} {
		if err := c.page(1, []byte(tok)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.page(1, []byte("A")); !errors.Is(err, ErrBadListing) {
		t.Fatalf("a cycle A B A: err %v", err)
	}

	c = newListCheck("sig/")
	var err error
	for i := 0; err == nil && i <= maxEmptyRun+1; i++ {
		err = c.page(0, []byte{byte(i)})
	}
	if !errors.Is(err, ErrBadListing) || c.pages != maxEmptyRun+1 {
		t.Fatalf("empty pages: failed at page %d with %v, want page %d", c.pages, err, maxEmptyRun+1)
	}
	if err := newListCheck("").page(0, nil); err != nil {
		t.Fatalf("one empty last page: %v", err)
	}

	c = newListCheck("sig/")
	c.pages = maxListPages
	if err := c.page(1, nil); !errors.Is(err, ErrBadListing) {
		t.Fatalf("page %d: err %v", c.pages, err)
	}
	if err := newListCheck("sig/").page(maxListKeys+1, nil); !errors.Is(err, ErrBadListing) {
		t.Fatalf("%d keys: err %v", maxListKeys+1, err)
	}
}

func TestCheckRedirectKeepsToTheOrigin(t *testing.T) {
	req := func(u string) *http.Request {
		pu, _ := url.Parse(u)
		return &http.Request{URL: pu}
	}
	first := []*http.Request{req("https://bucket.example.com/k")}
	for _, c := range []struct {
		to string
		ok bool
	}{
		{"https://bucket.example.com/k2", true},
		{"http://bucket.example.com/k", false}, // plain http
		{"https://other.example.com/k", false},
		{"https://bucket.example.com:8443/k", false}, // another port
	} {
		err := checkRedirect(req(c.to), first)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, errRedirectRefused)) {
			t.Errorf("to %s: err %v, want ok %v", c.to, err, c.ok)
		}
	}
}

func TestCappedBody(t *testing.T) {
	body := func(n int) io.ReadCloser { return io.NopCloser(strings.NewReader(strings.Repeat("x", n))) }
	got, err := io.ReadAll(&cappedBody{rc: body(10), left: 4})
	if err != nil || len(got) != 4 {
		t.Fatalf("an error body: %d bytes, %v; want 4, nil", len(got), err)
	}
	if got, err := io.ReadAll(&cappedBody{rc: body(4), left: 4, fail: true}); err != nil || len(got) != 4 {
		t.Fatalf("a page at the cap: %d bytes, %v", len(got), err)
	}
	if _, err := io.ReadAll(&cappedBody{rc: body(5), left: 4, fail: true}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a page over the cap: %v, want ErrTooLarge", err)
	}
}

func TestPageGuardBoundsTheListsOfOnePage(t *testing.T) {
	g := withPageGuard(t.Context()).Value(pageGuardKey{}).(*pageGuard)
	for i := 0; i < maxPageRequests; i++ {
		if err := g.send(string(rune('a'+i%26)) + strings.Repeat("x", i)); err != nil {
			t.Fatalf("LIST %d: %v", i+1, err)
		}
	}
	if err := g.send("new"); !errors.Is(err, ErrBadListing) {
		t.Fatalf("LIST %d of one page: err %v", maxPageRequests+1, err)
	}
	g = withPageGuard(t.Context()).Value(pageGuardKey{}).(*pageGuard)
	if err := g.send(""); err != nil {
		t.Fatal(err)
	}
	if err := g.send("t"); err != nil {
		t.Fatal(err)
	}
	if err := g.send("t"); !errors.Is(err, ErrBadListing) {
		t.Fatalf("a continuation sent twice for one page: err %v", err)
	}
}
