package web

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/testdeps"
)

// TestMain tells the user, at the end, which tests skipped for want of
// chromium (testkit/testdeps).
func TestMain(m *testing.M) { testdeps.Main(m) }

// chromiumPath finds Debian's chromium. Missing, it fails the test when
// CI=true or OXYFS_REQUIRE names chromium, and skips it otherwise.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		testdeps.SkipOrFail(t, "chromium", fmt.Sprintf("chromium not found (%v): apt-get install chromium to run the browser tests", err))
	}
	return p
}

// browser starts a headless chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // tests run as root
		chromedp.Headless,
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	// The first Run starts the browser, which lives as long as its
	// context: no timeout on that one (see chromedp.Run).
	if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// do runs one action with a bound, failing the test on error.
func do[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// TestBrowserClicksThroughToASignature drives chromium from / to alice's
// signature by clicking links, checks its hex and base64, then follows a
// breadcrumb back up.
func TestBrowserClicksThroughToASignature(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := browser(t)
	want := []byte("signature of " + objA + " by alice")
	do(t, ctx, "open /", chromedp.Navigate(f.srv.URL+"/"))
	for _, href := range []string{"./sig/", "./ab/", "./" + objA[2:] + "/", "./alice?view=page"} {
		do(t, ctx, "click "+href, chromedp.Click(`a[href="`+href+`"]`, chromedp.NodeVisible))
	}
	hexText := do(t, ctx, "hex", chromedp.Text(`#hex`, chromedp.NodeVisible))
	b64Text := do(t, ctx, "base64", chromedp.Text(`#base64`, chromedp.NodeVisible))
	key := do(t, ctx, "key", chromedp.Text(`#key`, chromedp.NodeVisible))
	do(t, ctx, "click the breadcrumb sig/ab", chromedp.Click(`nav.crumbs a[href="/sig/ab/"]`, chromedp.NodeVisible))
	do(t, ctx, "wait for the object's link", chromedp.WaitVisible(`a[href="./`+objA[2:]+`/"]`))
	loc := do(t, ctx, "location", chromedp.Location())
	title := do(t, ctx, "title", chromedp.Title())
	if hexText != hex.EncodeToString(want) {
		t.Errorf("hex %q, want %q", hexText, hex.EncodeToString(want))
	}
	if b64Text != base64.StdEncoding.EncodeToString(want) {
		t.Errorf("base64 %q, want %q", b64Text, base64.StdEncoding.EncodeToString(want))
	}
	if key != alice.Key() {
		t.Errorf("key %q, want %q", key, alice.Key())
	}
	if loc != f.srv.URL+"/sig/ab/" || title != "oxyfs /sig/ab" {
		t.Errorf("breadcrumb led to %s (%q), want %s/sig/ab/", loc, title, f.srv.URL)
	}
}

// TestBrowserClicksFromSignersToASignature is an auditor's path: from /
// to Signers, to a signer (on the second page of signers), to one of its
// signatures, whose page shows the stored bytes; browsing sends no request
// but the signature's one GET.
func TestBrowserClicksFromSignersToASignature(t *testing.T) {
	entries, _ := signerEntries()
	f := newFixtureOf(t, Options{PageRows: 2}, entries)
	ctx := browser(t)
	before := f.st.Counts()
	do(t, ctx, "open /", chromedp.Navigate(f.srv.URL+"/"))
	do(t, ctx, "click Signers", chromedp.Click(`a#signers`, chromedp.NodeVisible))
	do(t, ctx, "click next", chromedp.Click(`a#next`, chromedp.NodeVisible))
	do(t, ctx, "click carol", chromedp.Click(`a[href="/.oxy/signers/carol"]`, chromedp.NodeVisible))
	obj := do(t, ctx, "carol's first object", chromedp.Text(`#signatures tr:nth-child(2) td:first-child a`, chromedp.NodeVisible))
	browsed := f.st.Counts().Sub(before)
	do(t, ctx, "click the signature", chromedp.Click(`#signatures tr:nth-child(2) a.sig`, chromedp.NodeVisible))
	hexText := do(t, ctx, "hex", chromedp.Text(`#hex`, chromedp.NodeVisible))
	key := do(t, ctx, "key", chromedp.Text(`#key`, chromedp.NodeVisible))
	e := format.Entry{Kind: format.KindSig, Object: obj, Value: "carol"}
	stored, err := f.st.Get(context.Background(), e.Key())
	if err != nil {
		t.Fatal(err)
	}
	if key != e.Key() || hexText != hex.EncodeToString(stored) {
		t.Errorf("the signature page shows %s = %s; the store holds %s = %x", key, hexText, e.Key(), stored)
	}
	if browsed.Total() != 0 {
		t.Errorf("browsing to carol's signatures sent %v", browsed)
	}
}

// TestBrowserShowsStatusAsATable opens /.oxy/status in chromium: a table,
// whose JSON link gives the JSON form.
func TestBrowserShowsStatusAsATable(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := browser(t)
	do(t, ctx, "open /", chromedp.Navigate(f.srv.URL+"/"))
	do(t, ctx, "click status", chromedp.Click(`a[href="/.oxy/status"]`, chromedp.NodeVisible))
	mode := do(t, ctx, "mode row", chromedp.Text(`//table[@id="status"]//tr[th="mode"]/td`))
	entries := do(t, ctx, "entries row", chromedp.Text(`//table[@id="status"]//tr[th="entries"]/td`))
	do(t, ctx, "click JSON", chromedp.Click(`a[href="?format=json"]`, chromedp.NodeVisible))
	jsonText := do(t, ctx, "JSON body", chromedp.Text(`body`, chromedp.NodeVisible))
	s := f.ix.Status()
	if mode != s.Mode || entries != "4" {
		t.Errorf("status table: mode %q entries %q, want %q and 4", mode, entries, s.Mode)
	}
	if !strings.HasPrefix(strings.TrimSpace(jsonText), "{") || !strings.Contains(jsonText, `"mode": "`+s.Mode+`"`) {
		t.Errorf("JSON form:\n%s", jsonText)
	}
}

// TestSignatureDownloadIsAnAttachment: ?download=1 gives the raw bytes with
// Content-Disposition: attachment; the plain URL stays inline bytes.
func TestSignatureDownloadIsAnAttachment(t *testing.T) {
	f := newFixture(t, Options{})
	resp, data := f.get(t, keyURL(alice)+"?download=1", 200)
	if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename=alice.sig` {
		t.Errorf("Content-Disposition %q", cd)
	}
	if string(data) != "signature of "+objA+" by alice" || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("download: %s %q", resp.Header.Get("Content-Type"), data)
	}
	resp, _ = f.get(t, keyURL(alice), 200)
	if cd := resp.Header.Get("Content-Disposition"); cd != "" {
		t.Errorf("plain URL has Content-Disposition %q", cd)
	}
	resp, _ = f.do(t, noRedirect, "GET", "/.oxy/status", map[string]string{"Accept": "text/html"}, "")
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("status for a browser: %s", ct)
	}
	resp, _ = f.do(t, noRedirect, "GET", "/.oxy/status?format=json", map[string]string{"Accept": "text/html"}, "")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("status ?format=json: %s", ct)
	}
}
