package web

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestChromiumWithAPasswordSeesPosersApart: chromium without a password is
// refused; sending a user of the
// password file (an Authorization header on every request, as a browser
// does once the user typed it), reads the signers page and a signer's page
// over a served file store, and the three posers (issue 41, item 4) are
// three names, each invisible code point written as \u202e or \u200b; the
// page's link to each leads to that signer's own page.
func TestChromiumWithAPasswordSeesPosersApart(t *testing.T) {
	htp, err := LoadHtpasswd(writeHtpasswd(t))
	if err != nil {
		t.Fatal(err)
	}
	var entries []format.Entry
	for _, s := range posers {
		entries = append(entries, format.Entry{Kind: format.KindSig, Object: objA, Value: s})
	}
	s := serveFileStore(t, Options{Htpasswd: htp}, entries)
	ctx := browser(t)
	// Without the password, headless chromium (which cannot ask the user)
	// fails the load on the 401's Basic challenge.
	nctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = chromedp.Run(nctx, chromedp.Navigate(s.url+SignersPath))
	cancel()
	if err == nil || !strings.Contains(err.Error(), "ERR_INVALID_AUTH_CREDENTIALS") {
		t.Fatalf("signers page without a password: %v, want the load refused for its credentials", err)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(bcryptUser+":"+bcryptPassword))
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("Network.enable: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
		t.Fatalf("Network.setExtraHTTPHeaders: %v", err)
	}
	do(t, ctx, "open signers", chromedp.Navigate(s.url+SignersPath))
	text := do(t, ctx, "page text", chromedp.Evaluate[string]("document.body.innerText"))
	if r := invisibleIn(text); r >= 0 {
		t.Errorf("the signers page shows U+%04X raw:\n%s", r, text)
	}
	for _, want := range posersShown {
		if !strings.Contains(text, want) {
			t.Errorf("the signers page does not show %q:\n%s", want, text)
		}
	}
	do(t, ctx, "open a poser", chromedp.Navigate(s.url+signerHref(posers[1])))
	text = do(t, ctx, "poser's page", chromedp.Evaluate[string]("document.body.innerText"))
	if !strings.Contains(text, posersShown[1]) || invisibleIn(text) >= 0 {
		t.Errorf("signer %q's page:\n%s", posers[1], text)
	}
}
