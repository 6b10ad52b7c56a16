package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
)

// hostile is a signer name a page must not let act: markup, quotes, URL
// delimiters and an escape sequence.
const hostile = "<b>x<i> \"q\"&?#%\x1b[31m"

// signerEntries are signatures by five signers (hostile among them) over
// seven objects, and a seal.
func signerEntries() (entries []format.Entry, counts map[string]int) {
	counts = map[string]int{}
	for i := range 7 {
		obj := fmt.Sprintf("%02x%062x", 0x10*i+1, i)
		for j, s := range []string{"alice", "bob", "carol", hostile, "zed"} {
			if (i+j)%3 == 0 {
				continue
			}
			entries = append(entries, format.Entry{Kind: format.KindSig, Object: obj, Value: s})
			counts[s]++
		}
	}
	return append(entries, seal), counts
}

// getJSON gets a page as JSON into v.
func (f *fixture) getJSON(t *testing.T, p string, v any) {
	t.Helper()
	_, data := f.get(t, p, http.StatusOK)
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", p, err, data)
	}
}

// TestSignersPagesListEverySignerAPageAtATime: following "next" from the
// first page and "prev" from the last visits every signer once with its
// number of signatures, two rows a page; following a signer leads to its
// signatures, paged the same way; none of it sends a request.
func TestSignersPagesListEverySignerAPageAtATime(t *testing.T) {
	entries, counts := signerEntries()
	f := newFixtureOf(t, Options{PageRows: 2}, entries)
	before := f.st.Counts()
	var want []string
	for s := range counts {
		want = append(want, s)
	}
	slices.Sort(want)

	var fwd, back []string
	var last string
	for q, n := "?format=json", 0; ; n++ {
		var page signersJSON
		f.getJSON(t, SignersPath+q, &page)
		if len(page.Signers) > 2 || (n > 0) != (page.Prev != "") {
			t.Fatalf("page %d (%s): %+v", n, q, page)
		}
		for _, sc := range page.Signers {
			fwd = append(fwd, sc.Signer)
			if sc.Signatures != counts[sc.Signer] {
				t.Errorf("%q: %d signatures, want %d", sc.Signer, sc.Signatures, counts[sc.Signer])
			}
		}
		last = q
		if page.Next == "" {
			break
		}
		q = page.Next + "&format=json"
	}
	for q := last; ; {
		var page signersJSON
		f.getJSON(t, SignersPath+q, &page)
		var names []string
		for _, sc := range page.Signers {
			names = append(names, sc.Signer)
		}
		back = append(names, back...)
		if page.Prev == "" {
			break
		}
		q = page.Prev + "&format=json"
	}
	if !slices.Equal(fwd, want) || !slices.Equal(back, want) {
		t.Errorf("signers forward %q, backward %q; want %q", fwd, back, want)
	}

	// Each signer's page lists its objects, each linking to its signature.
	for _, s := range want {
		var objs []string
		for q := "?format=json"; ; {
			var page signerJSON
			f.getJSON(t, signerHref(s)+q, &page)
			for _, r := range page.Signatures {
				e := format.Entry{Kind: format.KindSig, Object: r.Object, Value: s}
				if r.Kind != "sig" || r.Key != e.Key() || r.Page != keyURL(e)+"?view=page" || r.Raw != keyURL(e) {
					t.Errorf("%q: row %+v", s, r)
				}
				objs = append(objs, r.Object)
			}
			if page.Signer != s || page.Next == "" {
				break
			}
			q = page.Next + "&format=json"
		}
		if len(objs) != counts[s] || !slices.IsSorted(objs) {
			t.Errorf("%q: objects %v, want %d in order", s, objs, counts[s])
		}
	}
	if d := f.st.Counts().Sub(before); d.Total() != 0 {
		t.Errorf("the signers pages sent %v", d)
	}
	for _, p := range []string{signerHref("nobody"), SignersPath + "..", signerHref("alice") + "/x"} {
		f.get(t, p, http.StatusNotFound)
	}
	f.get(t, strings.TrimSuffix(SignersPath, "/"), http.StatusFound)
}

// TestSignersPagesEscapeNames: a signer's name is shown escaped (markup as
// text, an escape sequence as \x1b) and linked percent-encoded; the link
// leads to its page.
func TestSignersPagesEscapeNames(t *testing.T) {
	entries, _ := signerEntries()
	f := newFixtureOf(t, Options{}, entries)
	_, page := f.get(t, SignersPath, http.StatusOK)
	for _, bad := range []string{"<b>", "<i>", "\x1b"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("the signers page holds %q:\n%s", bad, page)
		}
	}
	href := signerHref(hostile)
	if !bytes.Contains(page, []byte(`href="`+strings.ReplaceAll(href, "&", "&amp;")+`"`)) && !bytes.Contains(page, []byte(`href="`+href+`"`)) {
		t.Errorf("the signers page lacks a link to %s:\n%s", href, page)
	}
	if !bytes.Contains(page, []byte(`&lt;b&gt;x&lt;i&gt; &#34;q&#34;&amp;?#%\x1b[31m`)) {
		t.Errorf("the hostile name is not shown as text:\n%s", page)
	}
	_, page = f.get(t, href, http.StatusOK)
	if bytes.Contains(page, []byte("<b>")) || !bytes.Contains(page, []byte(`<h1>&lt;b&gt;x&lt;i&gt; &#34;q&#34;&amp;?#%\x1b[31m</h1>`)) {
		t.Errorf("the signer's page:\n%s", page)
	}
	var doc signerJSON
	f.getJSON(t, href+"?format=json", &doc)
	if doc.Signer != hostile || len(doc.Signatures) == 0 {
		t.Errorf("the signer's JSON: %+v", doc)
	}
	if _, root := f.get(t, "/", http.StatusOK); !bytes.Contains(root, []byte(`href="/.oxy/signers/">Signers</a>`)) {
		t.Errorf("the root page does not link the signers:\n%s", root)
	}
}
