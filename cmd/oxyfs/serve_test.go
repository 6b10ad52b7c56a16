package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// lockedBuffer is a bytes.Buffer safe for the command's writes and the
// test's reads at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveStore is a folded bucket store in a directory: signatures on two
// objects and a seal.
func serveStore(t *testing.T) (url string, sigs []format.Entry) {
	t.Helper()
	ctx := context.Background()
	url = "file://" + t.TempDir()
	st, err := store.Open(ctx, url, store.Options{Layout: store.LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sigs = []format.Entry{
		{Kind: format.KindSig, Object: "ab" + strings.Repeat("01", 31), Value: "alice"},
		{Kind: format.KindSig, Object: "ab" + strings.Repeat("01", 31), Value: "bob"},
		{Kind: format.KindSig, Object: "cd" + strings.Repeat("02", 31), Value: "carol"},
	}
	for _, e := range sigs {
		if err := st.Put(ctx, e.Key(), []byte("signature by "+e.Value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Put(ctx, "seal/cd/"+strings.Repeat("02", 31)+"/change-1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fold.Complete(ctx, st, fold.Options{}); err != nil {
		t.Fatal(err)
	}
	return url, sigs
}

// TestServeOverHTTPAndWebDAV runs `oxyfs serve` as the CLI does, browses it
// with net/http (pages, bytes, PROPFIND), is refused writes, and finds from
// /.oxy/status and --stats that browsing the folded store sent no LIST but
// the open's.
func TestServeOverHTTPAndWebDAV(t *testing.T) {
	url, sigs := serveStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", url, "--layout", "bucket", "--http", "127.0.0.1:0", "--stats"}, strings.NewReader(""), &stdout, &stderr)
	}()
	ready := regexp.MustCompile(`oxyfs: serving \S+ at (http://127\.0\.0\.1:\d+/)\n`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; {
		if m := ready.FindStringSubmatch(stderr.String()); m != nil {
			base = strings.TrimSuffix(m[1], "/")
		} else if time.Now().After(deadline) {
			t.Fatalf("no ready line:\n%s", stderr.String())
		} else {
			select {
			case code := <-done:
				t.Fatalf("serve exited %d:\n%s", code, stderr.String())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, p string, hdr map[string]string, body string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+p, strings.NewReader(body))
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

	// A directory page.
	alice := sigs[0]
	objDir := "/sig/ab/" + alice.Object[2:] + "/"
	resp, page := send("GET", objDir, nil, "")
	if resp.StatusCode != http.StatusOK || !bytes.Contains(page, []byte(`href="./alice"`)) || !bytes.Contains(page, []byte(`href="./bob"`)) {
		t.Fatalf("GET %s: %s\n%s", objDir, resp.Status, page)
	}
	// A signature's bytes are ReadSig's.
	st, err := store.Open(context.Background(), url, store.Options{Layout: store.LayoutBucket, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ix, err := index.Open(context.Background(), st, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, e := range sigs {
		want, err := ix.ReadSig(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		resp, data := send("GET", "/"+e.Key(), nil, "")
		if resp.StatusCode != http.StatusOK || !bytes.Equal(data, want) || resp.Header.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("GET %s: %s %q, want %q", e.Key(), resp.Status, data, want)
		}
	}
	// PROPFIND Depth: 1 of a directory names its children.
	resp, data := send("PROPFIND", "/dav/sig/", map[string]string{"Depth": "1"}, "")
	if resp.StatusCode != http.StatusMultiStatus {
		t.Fatalf("PROPFIND: %s\n%s", resp.Status, data)
	}
	var ms struct {
		Responses []struct {
			Href string `xml:"href"`
		} `xml:"response"`
	}
	if err := xml.Unmarshal(data, &ms); err != nil {
		t.Fatal(err)
	}
	var hrefs []string
	for _, r := range ms.Responses {
		hrefs = append(hrefs, r.Href)
	}
	slices.Sort(hrefs)
	if want := []string{"/dav/sig/", "/dav/sig/ab/", "/dav/sig/cd/"}; !slices.Equal(hrefs, want) {
		t.Fatalf("PROPFIND /dav/sig/ Depth 1 names %v, want %v", hrefs, want)
	}
	// Writes are refused.
	for _, m := range []string{"PUT", "DELETE", "MKCOL"} {
		for _, p := range []string{"/" + alice.Key(), "/dav/" + alice.Key(), "/dav/sig/new/"} {
			if resp, _ := send(m, p, nil, "x"); resp.StatusCode != http.StatusMethodNotAllowed {
				t.Fatalf("%s %s: %s, want 405", m, p, resp.Status)
			}
		}
	}
	if got, err := st.Get(context.Background(), alice.Key()); err != nil || string(got) != "signature by alice" {
		t.Fatalf("after refused writes the key holds %q %v", got, err)
	}
	// The server's counters: the open's one LIST, no other.
	_, data = send("GET", "/.oxy/status", nil, "")
	var s index.Status
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if s.Mode != index.ModeFolded || s.Requests.List != 1 || s.Requests.Put != 0 || s.Requests.Delete != 0 || s.Requests.Head != 0 {
		t.Fatalf("status after browsing: mode %s, %v", s.Mode, s.Requests)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d:\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	last := ""
	for sc := bufio.NewScanner(strings.NewReader(stderr.String())); sc.Scan(); {
		last = sc.Text()
	}
	if !strings.HasPrefix(last, "requests: list=1 ") {
		t.Fatalf("--stats: %q\n%s", last, stderr.String())
	}
}

func TestServeRefusesARemoteAddressUnlessAllowed(t *testing.T) {
	var stdout, stderr lockedBuffer
	code := run(context.Background(), []string{"serve", "mem://", "--http", "0.0.0.0:0"}, strings.NewReader(""), &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--allow-remote") {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "[::1]:0": true, "localhost:1": true, ":8080": false, "10.1.2.3:80": false} {
		if got, err := loopbackAddr(addr); err != nil || got != want {
			t.Errorf("loopbackAddr(%q) = %v, %v; want %v", addr, got, err, want)
		}
	}
}

func TestMountRefusesRemoteMetricsUnlessAllowed(t *testing.T) {
	testwatch.Arm(t) // refused before it mounts; one that mounted would hang here
	var stdout, stderr lockedBuffer
	dir := t.TempDir()
	code := run(context.Background(), []string{"mount", "mem://", dir, "--metrics-addr", ":9310"}, strings.NewReader(""), &stdout, &stderr)
	want := "oxyfs mount: --metrics-addr :9310 is not a loopback address; metrics are served without authentication, so pass --allow-remote to serve it there (or listen on 127.0.0.1)\n"
	if code != 2 || !strings.HasPrefix(stderr.String(), want) {
		t.Fatalf("mount --metrics-addr :9310: exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, stderr.String(), want)
	}
	for _, c := range []struct {
		addr          string
		allow, ok, lb bool
	}{
		{"127.0.0.1:9310", false, true, true},
		{"[::1]:0", false, true, true},
		{"localhost:1", false, true, true},
		{":9310", false, false, false},
		{"0.0.0.0:9310", false, false, false},
		{":9310", true, true, false},
		{"10.1.2.3:80", true, true, false},
	} {
		lb, err := checkListenAddr("--metrics-addr", c.addr, c.allow, "metrics are served")
		if (err == nil) != c.ok || lb != c.lb {
			t.Errorf("checkListenAddr(%q, allowRemote=%v) = %v, %v; want loopback %v, ok %v", c.addr, c.allow, lb, err, c.lb, c.ok)
		}
	}
}
