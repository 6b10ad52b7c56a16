package web

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store/format"
)

// The signers pages are an auditor's way in: every signer with how many
// signatures it made, and each signer's signatures, each a link to its
// page. A store may hold millions of signatures, so both are paged
// (Options.PageRows rows, cursors in the query: ?after=NAME for the next
// page, ?before=NAME for the previous) and built from the index's pages
// (index.Signers, index.SignedBy), which on a folded store send no request
// and allocate no more than the page.

// SignersPath is the signers page; a signer's page is SignersPath + the
// signer, path-escaped.
const SignersPath = "/.oxy/signers/"

// DefaultPageRows is Options.PageRows when it is 0.
const DefaultPageRows = 200

func (h *handler) pageRows() int {
	if h.opts.PageRows > 0 {
		return h.opts.PageRows
	}
	return DefaultPageRows
}

// pageOf is the page a request asks for.
func (h *handler) pageOf(r *http.Request) index.Page {
	q := r.URL.Query()
	return index.Page{After: q.Get("after"), Before: q.Get("before"), Limit: h.pageRows()}
}

// pager is a page's links to the previous and next pages: query strings
// from the first and last names of this one ("" when there is none), in its
// JSON and on its page (the "pager" template).
type pager struct {
	Prev string `json:"prev,omitempty"`
	Next string `json:"next,omitempty"`
}

// pagerOf is the pager of a page of rows, each named by name.
func pagerOf[T any](rows []T, info index.PageInfo, name func(T) string) pager {
	var p pager
	if len(rows) == 0 {
		return p
	}
	if info.Prev {
		p.Prev = "?before=" + url.QueryEscape(name(rows[0]))
	}
	if info.Next {
		p.Next = "?after=" + url.QueryEscape(name(rows[len(rows)-1]))
	}
	return p
}

// paged writes a page of a paged list: asJSON with ?format=json, else the
// page t shows of view() (built only for HTML: names escaped for it).
func (h *handler) paged(w http.ResponseWriter, r *http.Request, asJSON any, t *template.Template, view func() any) {
	if r.URL.Query().Get("format") == "json" {
		h.writeJSON(w, r, asJSON, "")
		return
	}
	h.html(w, r, t, view())
}

// signerHref is a signer's page.
func signerHref(signer string) string { return SignersPath + escapeSeg(signer) }

// serveSigners serves SignersPath and the signers' pages under it.
func (h *handler) serveSigners(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	signer := strings.TrimPrefix(r.URL.Path, SignersPath)
	if signer == "" {
		h.signersPage(w, r)
		return
	}
	// A signer's page is by-signer/<signer>: the tree's grammar says
	// which names may stand there.
	if p, ok := (index.Path{Level: index.LevelSigners}).Child(signer); !ok || p.Level != index.LevelSigner {
		http.NotFound(w, r)
		return
	}
	h.signerPage(w, r, signer)
}

// signersJSON is the signers page as JSON (?format=json).
type signersJSON struct {
	Signers []index.SignerCount `json:"signers"`
	pager
}

func (h *handler) signersPage(w http.ResponseWriter, r *http.Request) {
	scs, info, err := h.ix.Signers(r.Context(), h.pageOf(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if scs == nil {
		scs = []index.SignerCount{}
	}
	pg := pagerOf(scs, info, func(sc index.SignerCount) string { return sc.Signer })
	h.paged(w, r, signersJSON{Signers: scs, pager: pg}, signersTmpl, func() any {
		type row struct {
			Name, Href string
			Count      int
		}
		rows := make([]row, len(scs))
		for i, sc := range scs {
			rows[i] = row{Name: termsafe.EscapeSpaces(sc.Signer), Href: signerHref(sc.Signer), Count: sc.Signatures}
		}
		return struct {
			Crumbs []crumb
			Rows   []row
			pager
		}{Crumbs: []crumb{{Name: "/", Href: "/"}, {Name: ".oxy", Href: "/.oxy/"}, {Name: "signers"}}, Rows: rows, pager: pg}
	})
}

// signatureRow is one signature of a signer's page (and of its JSON).
type signatureRow struct {
	Object string `json:"object"`
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	Page   string `json:"page"` // the signature's page
	Raw    string `json:"raw"`  // its bytes
	Dir    string `json:"-"`    // the object's directory
}

// signerJSON is a signer's page as JSON (?format=json).
type signerJSON struct {
	Signer     string         `json:"signer"`
	Signatures []signatureRow `json:"signatures"`
	pager
}

func (h *handler) signerPage(w http.ResponseWriter, r *http.Request, signer string) {
	p := h.pageOf(r)
	objs, info, err := h.ix.SignedBy(r.Context(), signer, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(objs) == 0 && p.After == "" && p.Before == "" {
		http.NotFound(w, r) // no such signer
		return
	}
	rows := make([]signatureRow, len(objs))
	for i, obj := range objs {
		e := format.Entry{Kind: format.KindSig, Object: obj, Value: signer}
		raw := escapePath("/" + e.Key())
		rows[i] = signatureRow{Object: obj, Kind: e.Kind.String(), Key: e.Key(), Page: raw + "?view=page", Raw: raw,
			Dir: escapePath("/"+e.Kind.String()+"/"+obj[:2]+"/"+obj[2:]) + "/"}
	}
	pg := pagerOf(objs, info, func(obj string) string { return obj })
	h.paged(w, r, signerJSON{Signer: signer, Signatures: rows, pager: pg}, signerTmpl, func() any {
		for i := range rows {
			rows[i].Key = termsafe.EscapeSpaces(rows[i].Key)
		}
		shown := termsafe.EscapeSpaces(signer)
		return struct {
			Crumbs []crumb
			Signer string
			Rows   []signatureRow
			pager
		}{Crumbs: []crumb{{Name: "/", Href: "/"}, {Name: ".oxy", Href: "/.oxy/"}, {Name: "signers", Href: SignersPath}, {Name: shown}},
			Signer: shown, Rows: rows, pager: pg}
	})
}

// html writes a page from a template (nothing for HEAD).
func (h *handler) html(w http.ResponseWriter, r *http.Request, t *template.Template, v any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if r.Method == http.MethodHead {
		return
	}
	if err := t.Execute(w, v); err != nil {
		h.opts.Logf("oxyfs: %s %s: %v", r.Method, r.URL.Path, err)
	}
}

const pagerTmpl = `{{define "pager"}}{{if or .Prev .Next}}<p class="pager">
{{- if .Prev}}<a id="prev" href="{{.Prev}}">← previous</a>{{end}}{{if and .Prev .Next}} · {{end}}{{if .Next}}<a id="next" href="{{.Next}}">next →</a>{{end -}}
</p>{{end}}{{end}}`

var signersTmpl = template.Must(template.Must(template.New("signers").Parse(crumbsTmpl + pagerTmpl)).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>oxyfs signers</title>` + style + `</head>
<body>{{template "crumbs" .Crumbs}}
<h1>Signers</h1>
<table id="signers" class="rows">
<tr><th>signer</th><th class="n">signatures</th></tr>
{{- range .Rows}}
<tr><td><a href="{{.Href}}">{{.Name}}</a></td><td class="n">{{.Count}}</td></tr>
{{- end}}
</table>
{{template "pager" .}}
<p>this page as <a href="?format=json">JSON</a></p>
</body></html>
`))

var signerTmpl = template.Must(template.Must(template.New("signer").Parse(crumbsTmpl + pagerTmpl)).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>oxyfs signer {{.Signer}}</title>` + style + `</head>
<body>{{template "crumbs" .Crumbs}}
<h1>{{.Signer}}</h1>
<table id="signatures" class="rows">
<tr><th>object</th><th>kind</th><th>signature</th></tr>
{{- range .Rows}}
<tr><td><a href="{{.Dir}}">{{.Object}}</a></td><td>{{.Kind}}</td><td><a class="sig" href="{{.Page}}" title="{{.Key}}">page</a> · <a href="{{.Raw}}">raw</a></td></tr>
{{- end}}
</table>
{{template "pager" .}}
<p>this page as <a href="?format=json">JSON</a></p>
</body></html>
`))
