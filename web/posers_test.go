package web

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/oxyfs/oxyfs/store/format"
)

// posers are three signers that showed as one, "signer-00", on every page
// (issue 41, item 4): with a right-to-left override after it, a zero
// width space in it, and the plain name.
var posers = []string{"signer-00", "signer-00\u202e", "signer-0\u200b0"}

// posersShown is how the pages show them: each apart, the invisible code
// point escaped.
var posersShown = []string{"signer-00", `signer-00\u202e`, `signer-0\u200b0`}

// invisibleIn returns the first code point of s that does not show as
// itself (a format character or one unicode.IsPrint rejects, but the
// line breaks and tabs of a page's markup), or -1.
func invisibleIn(s string) rune {
	for _, r := range s {
		if r != '\n' && r != '\t' && (!unicode.IsPrint(r) || unicode.Is(unicode.Cf, r)) {
			return r
		}
	}
	return -1
}

// TestPosersShowApartOnEveryPage: the signers page, a signer's page, the
// by-signer directory pages and a signature's page show each poser's
// invisible code point escaped (\u202e, \u200b) and none raw; links keep
// the exact bytes (percent-encoded), and JSON the exact names.
func TestPosersShowApartOnEveryPage(t *testing.T) {
	var entries []format.Entry
	for _, s := range posers {
		entries = append(entries, format.Entry{Kind: format.KindSig, Object: objA, Value: s})
	}
	f := newFixtureOf(t, Options{}, entries)
	pages := []string{SignersPath, "/by-signer/", "/sig/ab/" + objA[2:] + "/"}
	for _, s := range posers {
		pages = append(pages, signerHref(s), "/by-signer/"+url.PathEscape(s)+"/",
			"/sig/ab/"+objA[2:]+"/"+url.PathEscape(s)+"?view=page")
	}
	for _, p := range pages {
		_, body := f.get(t, p, 200)
		page := string(body)
		if r := invisibleIn(page); r >= 0 {
			t.Errorf("GET %s shows U+%04X raw", p, r)
		}
		if strings.HasPrefix(p, "/sig/ab/"+objA[2:]+"/signer") {
			continue // a signature's page names its own signer only
		}
		for i, s := range posersShown {
			if strings.HasPrefix(p, "/by-signer/signer") || strings.HasPrefix(p, SignersPath+"signer") {
				continue
			}
			if !strings.Contains(page, ">"+s+"<") && !strings.Contains(page, ">"+s+"/<") {
				t.Errorf("GET %s does not show %q as %q:\n%s", p, posers[i], s, page)
			}
			if !strings.Contains(page, url.PathEscape(posers[i])) {
				t.Errorf("GET %s does not link %q by its exact bytes", p, posers[i])
			}
		}
	}
	var js struct {
		Signers []struct {
			Name string `json:"signer"`
		} `json:"signers"`
	}
	_, body := f.get(t, SignersPath+"?format=json", 200)
	if r := invisibleIn(string(body)); r >= 0 {
		t.Errorf("signers JSON holds U+%04X raw: %s", r, body)
	}
	if err := json.Unmarshal(body, &js); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range js.Signers {
		got[s.Name] = true
	}
	for _, s := range posers {
		if !got[s] {
			t.Errorf("signers JSON lacks %q: %s", s, body)
		}
	}
}

// TestSignatureBytesAreNeverRendered: a signature's bytes (a store writer's
// HTML, say) are served as application/octet-stream with nosniff, so a
// browser never renders them.
func TestSignatureBytesAreNeverRendered(t *testing.T) {
	f := newFixture(t, Options{})
	for _, p := range []string{keyURL(alice), "/dav" + keyURL(alice), keyURL(alice) + "?download=1"} {
		resp, _ := f.get(t, p, 200)
		if ct, ns := resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"); ct != "application/octet-stream" || ns != "nosniff" {
			t.Errorf("GET %s: Content-Type %q, X-Content-Type-Options %q", p, ct, ns)
		}
	}
}

// TestSpacedPosersShowApart (F6): "alice", "alice " and "alice  bob" next
// to "alice bob" showed as two names on the pages (HTML collapses a
// trailing space and a run of spaces); they show with the collapsing
// spaces as \x20, and U+2800 (a blank braille pattern) escaped.
func TestSpacedPosersShowApart(t *testing.T) {
	names := []string{"alice", "alice ", "alice bob", "alice  bob", "alice\u2800"}
	shownAs := []string{"alice", `alice\x20`, "alice bob", `alice\x20\x20bob`, `alice\u2800`}
	var entries []format.Entry
	for _, s := range names {
		entries = append(entries, format.Entry{Kind: format.KindSig, Object: objA, Value: s})
	}
	f := newFixtureOf(t, Options{}, entries)
	for _, p := range []string{SignersPath, "/by-signer/", "/sig/ab/" + objA[2:] + "/"} {
		_, body := f.get(t, p, 200)
		page := string(body)
		for i, s := range shownAs {
			if !strings.Contains(page, ">"+s+"<") && !strings.Contains(page, ">"+s+"/<") {
				t.Errorf("GET %s does not show %q as %q:\n%s", p, names[i], s, page)
			}
		}
	}
}
