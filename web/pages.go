package web

import (
	"encoding/base64"
	"encoding/hex"
	"html/template"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store/format"
)

// crumb is one link of a page's breadcrumbs.
type crumb struct {
	Name, Href string
}

// breadcrumbs links every directory above the tree path p (and p itself,
// last, unlinked by the template); prefix is "" or DAVPrefix. Names are
// escaped (termsafe), links keep the exact bytes.
func breadcrumbs(prefix, p string) []crumb {
	cs := []crumb{{Name: "/", Href: prefix + "/"}}
	if p == "" {
		return cs
	}
	href := prefix
	for _, seg := range strings.Split(p, "/") {
		href += "/" + escapeSeg(seg)
		cs = append(cs, crumb{Name: termsafe.EscapeSpaces(seg), Href: href + "/"})
	}
	return cs
}

func escapeSeg(s string) string { return escapePath(s) }

// SigPagePrefix is the most bytes of a signature its page shows (as hex
// and as base64); the page links the whole (raw and ?download=1). A page is
// then a few tens of KiB however big the signature: a 60 MiB one shown
// whole was a 215 MB page.
const SigPagePrefix = 16 << 10

// sigPage writes a signature's page: its key, size, first SigPagePrefix
// bytes as hex and base64, and links to the whole. size is the
// signature's; shown its first bytes (at most SigPagePrefix); mod the time
// of its bytes (the key's own Last-Modified: handler.sigTime), also sent
// as Last-Modified.
func (h *handler) sigPage(w http.ResponseWriter, r *http.Request, prefix, p string, e format.Entry, size int64, shown []byte, mod time.Time) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Last-Modified", mod.UTC().Format(http.TimeFormat))
	if r.Method == http.MethodHead {
		return
	}
	cs := breadcrumbs(prefix, p)
	cs[len(cs)-1].Href = ""
	shown = shown[:min(len(shown), SigPagePrefix)]
	v := struct {
		Path          string
		Crumbs        []crumb
		Key, Signer   string
		Object        string
		Size, Shown   int64
		Hex, Base64   string
		Raw, Download string
		ModTime       string
	}{
		Path: termsafe.EscapeSpaces(prefix + "/" + p), Crumbs: cs, Key: termsafe.EscapeSpaces(e.Key()),
		Signer: termsafe.EscapeSpaces(e.Value), Object: e.Object, Size: size, Shown: int64(len(shown)),
		Hex: hex.EncodeToString(shown), Base64: base64.StdEncoding.EncodeToString(shown),
		Raw: "./" + escapeSeg(path.Base(p)), Download: "./" + escapeSeg(path.Base(p)) + "?download=1",
		ModTime: mod.UTC().Format(time.RFC3339),
	}
	if err := sigTmpl.Execute(w, v); err != nil {
		h.opts.Logf("oxyfs: %s %s: %v", r.Method, r.URL.Path, err)
	}
}

// attachment makes a signature's bytes a download named after its signer.
func attachment(w http.ResponseWriter, e format.Entry) {
	name := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' || r == '/' {
			return '_'
		}
		return r
	}, e.Value) + ".sig"
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
}

const crumbsTmpl = `{{define "crumbs"}}<nav class="crumbs">
{{- range $i, $c := .}}{{if $i}} / {{end}}{{if $c.Href}}<a href="{{$c.Href}}">{{$c.Name}}</a>{{else}}<span>{{$c.Name}}</span>{{end}}{{end -}}
</nav>{{end}}`

const style = `<style>body{font-family:monospace;margin:2em}td,th{padding:0 1em 0 0;text-align:left;vertical-align:top}.n{text-align:right}.b{word-break:break-all;max-width:60em}table.rows td,table.rows th{white-space:nowrap}</style>`

var sigTmpl = template.Must(template.Must(template.New("sig").Parse(crumbsTmpl)).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>oxyfs {{.Path}}</title>` + style + `</head>
<body>{{template "crumbs" .Crumbs}}
<h1>{{.Signer}}</h1>
<table>
<tr><th>key</th><td id="key">{{.Key}}</td></tr>
<tr><th>object</th><td id="object">{{.Object}}</td></tr>
<tr><th>signer</th><td id="signer">{{.Signer}}</td></tr>
<tr><th>size</th><td id="size">{{.Size}} bytes</td></tr>
<tr><th>modified</th><td><time id="mtime" datetime="{{.ModTime}}">{{.ModTime}}</time></td></tr>
<tr><th>hex</th><td id="hex" class="b">{{.Hex}}</td></tr>
<tr><th>base64</th><td id="base64" class="b">{{.Base64}}</td></tr>
</table>
{{- if lt .Shown .Size}}
<p id="shown">The first {{.Shown}} of {{.Size}} bytes are shown: download the signature for all of them.</p>
{{- end}}
<p><a id="download" href="{{.Download}}">download</a> · <a id="raw" href="{{.Raw}}">raw bytes</a></p>
</body></html>
`))
