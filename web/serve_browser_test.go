package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oxyfs/oxyfs/fold"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// served is a real serve: a file:// store in the bucket layout, folded, an
// index on it, and the handler on 127.0.0.1 as `oxyfs serve` runs it
// (Listen, NewServer, loopback only).
type served struct {
	st  *store.Store
	ix  *index.Index
	url string
}

// serveFileStore writes entries (a signature's bytes: "signature of
// <object> by <signer>") into a new file:// store, folds it and serves it.
func serveFileStore(t *testing.T, opts Options, entries []format.Entry) *served {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir(), store.Options{Layout: store.LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
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
	opts.LoopbackOnly = true
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ln, err := Listen("127.0.0.1:0", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(Handler(ix, opts), Limits{}, nil)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return &served{st: st, ix: ix, url: "http://" + ln.Addr().String()}
}

// auditorEntries are signatures by signers named as people name keys
// (addresses, key names with dates), over a few objects.
func auditorEntries() []format.Entry {
	signers := []string{
		"alice@example.org", "build-bot-release-signing-2026", "carol.smith@security.example.com",
		"ci-attestation-key-eu-west-1-prod", "zed",
	}
	var es []format.Entry
	for i := range 5 {
		obj := fmt.Sprintf("%02x%062x", 0x20*i+3, i*7919)
		for j, s := range signers {
			if (i+j)%4 == 0 {
				continue
			}
			es = append(es, format.Entry{Kind: format.KindSig, Object: obj, Value: s})
		}
	}
	return append(es, format.Entry{Kind: format.KindAccepted, Object: fmt.Sprintf("%064x", 42), Value: "main"})
}

// rowLines is, for each row of the table sel, how many lines its text takes
// (the distinct tops of its text's line boxes), its height and the height of
// one line of its first cell's font, in CSS pixels.
type rowLines struct {
	Text   string  `json:"text"`
	Lines  int     `json:"lines"`
	Height float64 `json:"height"`
	Line   float64 `json:"line"`
}

const rowLinesJS = `(function(sel) {
  return Array.from(document.querySelectorAll(sel + ' tr')).map(function(tr) {
    var tops = new Set();
    var walk = document.createTreeWalker(tr, NodeFilter.SHOW_TEXT);
    for (var n = walk.nextNode(); n; n = walk.nextNode()) {
      if (!n.textContent.trim()) continue;
      var r = document.createRange(); r.selectNodeContents(n);
      for (const b of r.getClientRects()) tops.add(Math.round(b.top));
    }
    var probe = document.createElement('span'); probe.textContent = 'x';
    tr.cells[0].appendChild(probe);
    var line = probe.getBoundingClientRect().height;
    probe.remove();
    return {text: tr.innerText, lines: tops.size, height: tr.getBoundingClientRect().height, line: line};
  });
})`

// oneLineRows fails the test for every row of the table sel that takes more
// than one line, or is taller than one line of its font (and its padding).
func oneLineRows(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	rows := do(t, ctx, "measure "+sel, chromedp.Evaluate[[]rowLines](rowLinesJS+`(`+"`"+sel+"`"+`)`))
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", sel)
	}
	for _, r := range rows {
		if r.Lines != 1 || r.Height > 1.5*r.Line {
			t.Errorf("%s: row %q takes %d lines, %.1f px high (a line is %.1f px)", sel, r.Text, r.Lines, r.Height, r.Line)
		}
	}
	return len(rows)
}

// cell is the text of the td of the row whose th is name, in table id.
func cell(t *testing.T, ctx context.Context, id, name string, col int) string {
	t.Helper()
	return do(t, ctx, id+" "+name, chromedp.Text(fmt.Sprintf(`//table[@id=%q]//tr[th=%q]/td[%d]`, id, name, col)))
}

// TestServeStatusAndSignersInChromium loads the status page and the signers
// pages of a real serve in chromium, 1024 px wide (a laptop's window): the status
// table's cells say what the index does (times as RFC 3339 and how long
// ago, or never; entries per kind and requests by kind as rows), every
// signer row is one line, and a screenshot of each page is saved (its path
// and size logged; into $OXYFS_SCREENSHOTS if set, to keep them).
func TestServeStatusAndSignersInChromium(t *testing.T) {
	s := serveFileStore(t, Options{}, auditorEntries())
	ctx := browser(t)
	do(t, ctx, "window size", chromedp.EmulateViewport(1024, 1500))
	shots := t.TempDir()
	if d := os.Getenv("OXYFS_SCREENSHOTS"); d != "" {
		shots = d // kept after the test, to look at
	}
	shot := func(name string) {
		t.Helper()
		png := do(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot())
		p := filepath.Join(shots, name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		if len(png) < 8 || string(png[1:4]) != "PNG" {
			t.Errorf("screenshot %s is not a PNG (%d bytes)", name, len(png))
		}
		t.Logf("screenshot of %s: %s (%d bytes)", name, p, len(png))
	}

	do(t, ctx, "open status", chromedp.Navigate(s.url+StatusPath))
	st := s.ix.Status()
	sent := s.st.Counts() // the page sent nothing: the same as when it was written
	for _, c := range []struct{ id, name, want string }{
		{"status", "mode", st.Mode},
		{"status", "layout", "bucket"},
		{"status", "entries", fmt.Sprint(st.Entries)},
		{"status", "last_refresh_time", "never"},
		{"status", "last_refresh_error", "none"},
		{"entries_per_kind", "sig", fmt.Sprint(st.EntriesPerKind["sig"])},
		{"entries_per_kind", "accepted", "1"},
		{"entries_per_kind", "seal", "0"},
	} {
		if got := cell(t, ctx, c.id, c.name, 1); got != c.want {
			t.Errorf("%s row %s: %q, want %q", c.id, c.name, got, c.want)
		}
	}
	if st.EntriesPerKind["sig"] == 0 {
		t.Errorf("no signature counted: %+v", st.EntriesPerKind)
	}
	for i, want := range []int64{sent.List, sent.Get, sent.Head, sent.Put, sent.Delete, sent.Total()} {
		col := []string{"LIST", "GET", "HEAD", "PUT", "DELETE", "total"}[i]
		if got := cell(t, ctx, "requests", "requests", i+2); got != fmt.Sprint(want) {
			t.Errorf("requests %s: %q, want %d", col, got, want)
		}
	}
	// The store's last change: the newest pack- key the open listed.
	mt := s.ix.ModTime()
	if mt.IsZero() {
		t.Fatal("the index knows no last change of a file:// store")
	}
	lc := cell(t, ctx, "status", "last_change", 1)
	when := mt.UTC().Format(time.RFC3339)
	if !strings.HasPrefix(lc, when+" (") || !strings.HasSuffix(lc, " ago)") {
		t.Errorf("last_change %q, want %s (... ago)", lc, when)
	}
	if dt := do(t, ctx, "last_change datetime", chromedp.AttributeValue(`//table[@id="status"]//tr[th="last_change"]//time`, "datetime")); dt.Value != when {
		t.Errorf("last_change datetime %q, want %s", dt.Value, when)
	}
	oneLineRows(t, ctx, "#requests")
	oneLineRows(t, ctx, "#entries_per_kind")
	if n := oneLineRows(t, ctx, "#live_lists table"); n != 1+len(st.LiveLists) || len(st.LiveLists) == 0 {
		t.Errorf("live lists table: %d rows for %d lists", n, len(st.LiveLists))
	}
	shot("status")

	do(t, ctx, "open signers", chromedp.Navigate(s.url+SignersPath))
	if n := oneLineRows(t, ctx, "#signers"); n != 1+5 {
		t.Errorf("signers table: %d rows, want a header and 5 signers", n)
	}
	shot("signers")
	do(t, ctx, "open a signer", chromedp.Click(`a[href="/.oxy/signers/ci-attestation-key-eu-west-1-prod"]`, chromedp.NodeVisible))
	// The click starts a navigation and returns before the signer's page is
	// there: wait for its table's first row, then measure (CI measured the
	// signers page once, "#signatures: no rows").
	do(t, ctx, "wait for the signer's page", chromedp.WaitVisible(`#signatures tr`))
	oneLineRows(t, ctx, "#signatures")
	shot("signer")
}
