package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"golang.org/x/net/webdav"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store/format"
)

// Paths the handler serves beside the tree.
const (
	DAVPrefix  = "/dav"         // WebDAV over the tree
	StatusPath = "/.oxy/status" // index.Status as JSON
)

// Options configure Handler.
type Options struct {
	// WebDAVRoot serves WebDAV at every path of the tree too, not only
	// under /dav/: PROPFIND goes to WebDAV, GET and HEAD to the pages and
	// bytes (which a WebDAV client reads the same way), so a client can
	// mount http://ADDR/ itself.
	WebDAVRoot bool
	// LoopbackOnly refuses (403) requests whose Host is not a loopback
	// name or address: set it when listening on a loopback address.
	LoopbackOnly bool
	// Logf logs failed requests; nil: log.Printf. What it is given is
	// already redacted and escaped (termsafe.Line).
	Logf func(format string, args ...any)
	// MaxRequestBody is the most bytes of a request's body read (a
	// PROPFIND's XML): a longer body is refused with 413 having read no
	// more than that. 0: DefaultMaxRequestBody; negative: no limit.
	MaxRequestBody int64
	// PageRows is the most rows of a signers page (signers.go); 0:
	// DefaultPageRows.
	PageRows int
	// Htpasswd, when set, is asked for a user and password (HTTP Basic)
	// on every request: without them, 401 (auth.go).
	Htpasswd *Htpasswd
}

// Methods the handler accepts; every other one is 405.
const (
	allowTree = "OPTIONS, GET, HEAD"
	allowDAV  = "OPTIONS, GET, HEAD, PROPFIND"
)

// Handler serves ix's tree read-only over HTTP and WebDAV (see the package
// documentation for the routes).
func Handler(ix *index.Index, opts Options) http.Handler {
	if opts.Logf == nil {
		opts.Logf = log.Printf
	}
	if opts.MaxRequestBody == 0 {
		opts.MaxRequestBody = DefaultMaxRequestBody
	}
	logf := opts.Logf
	opts.Logf = func(format string, args ...any) { logf("%s", termsafe.Line(fmt.Sprintf(format, args...))) }
	h := &handler{ix: ix, opts: opts, started: time.Now()}
	fsys := davFS{ix: ix, modTime: h.modTime}
	h.dav = &webdav.Handler{Prefix: DAVPrefix, FileSystem: fsys, LockSystem: webdav.NewMemLS(), Logger: h.davLog}
	h.davRoot = &webdav.Handler{FileSystem: fsys, LockSystem: webdav.NewMemLS(), Logger: h.davLog}
	return h
}

type handler struct {
	ix      *index.Index
	opts    Options
	dav     *webdav.Handler // under DAVPrefix
	davRoot *webdav.Handler // at every path, with WebDAVRoot
	started time.Time       // when Handler made it: the last change if none is known

	authFails authFailLog // locks itself
}

// modTime is what WebDAV reports as a file's last change (getlastmodified):
// a signature's key's own Last-Modified when the index read it with its
// bytes (index.Node.ModTime: a PROPFIND of the file reads it,
// propfindReads); else the store's last change as the index knows it
// (index.Index.ModTime: the newest key its open listed), or for a
// signature the last time the index saw its bytes change
// (index.Index.SigChangedAt), if later. When the index knows neither (the
// directory layout, a backend that reports no times), the time the handler
// was made: the tree it shows is at least that recent. Never year 1.
func (h *handler) modTime(fi fs.FileInfo) time.Time {
	n, ok := fi.Sys().(index.Node)
	return h.entryTime(n, ok && n.Type == index.NodeFile)
}

// entryTime is modTime of node n (file: n is an entry's).
func (h *handler) entryTime(n index.Node, file bool) time.Time {
	if file && !n.ModTime.IsZero() {
		return n.ModTime
	}
	t := h.ix.ModTime()
	if file && n.Entry.Kind == format.KindSig {
		if c := h.ix.SigChangedAt(n.Entry); c.After(t) {
			t = c
		}
	}
	if t.IsZero() {
		return h.started
	}
	return t
}

// sigTime is the time of a signature's bytes as its handle gives it
// (index.SigHandle.ModTime), else entryTime's.
func (h *handler) sigTime(n index.Node, mod time.Time) time.Time {
	if !mod.IsZero() {
		return mod
	}
	return h.entryTime(n, true)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.LoopbackOnly && !loopbackHost(r.Host) {
		http.Error(w, "oxyfs serves loopback requests only (Host "+termsafe.Escape(r.Host)+" is not a loopback name or address)", http.StatusForbidden)
		return
	}
	if h.opts.Htpasswd != nil && !h.authorized(w, r) {
		return
	}
	p := r.URL.Path
	underDAV := p == DAVPrefix || strings.HasPrefix(p, DAVPrefix+"/")
	oxy := p == "/.oxy" || strings.HasPrefix(p, "/.oxy/")
	dav := underDAV || h.opts.WebDAVRoot && !oxy
	allow := allowTree
	if dav {
		allow = allowDAV
	}
	switch r.Method {
	case http.MethodOptions:
		w.Header().Set("Allow", allow)
		if dav {
			w.Header().Set("DAV", "1") // class 1: no locking, nothing to lock
			w.Header().Set("MS-Author-Via", "DAV")
		}
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet, http.MethodHead:
	case "PROPFIND":
		if dav {
			break
		}
		fallthrough
	default:
		w.Header().Set("Allow", allow)
		http.Error(w, "oxyfs serves a read-only tree: "+termsafe.Escape(r.Method)+" is not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !limitBody(w, r, h.opts.MaxRequestBody) {
		return
	}
	switch {
	case oxy:
		h.serveOxy(w, r)
	case r.Method != "PROPFIND" && underDAV:
		// GET and HEAD under /dav/ are the same pages and bytes as
		// outside it (x/net/webdav answers a directory's GET with 405).
		h.serveTree(w, r, DAVPrefix)
	case r.Method != "PROPFIND":
		h.serveTree(w, r, "")
	case underDAV:
		h.serveDAV(w, r, h.dav)
	default:
		h.serveDAV(w, r, h.davRoot)
	}
}

// serveDAV hands a read request to WebDAV, refusing an infinite PROPFIND
// and answering one whose reads fail (propfindReads).
func (h *handler) serveDAV(w http.ResponseWriter, r *http.Request, dh *webdav.Handler) {
	if r.Method == "PROPFIND" {
		d := strings.TrimSpace(r.Header.Get("Depth"))
		if d != "0" && d != "1" {
			w.Header().Set("Content-Type", "application/xml; charset=utf-8")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<?xml version="1.0" encoding="utf-8"?>`+"\n"+`<D:error xmlns:D="DAV:"><D:propfind-finite-depth/></D:error>`+"\n")
			return
		}
		if err := h.propfindReads(r, dh, d); err != nil {
			h.fail(w, r, err)
			return
		}
		o := &omitUnknownSizes{ResponseWriter: w}
		defer o.Close()
		w = o
	}
	dh.ServeHTTP(w, r)
}

// davLog logs what WebDAV failed to do, but a name that does not exist, a
// write refused, and anything of a client who left.
func (h *handler) davLog(r *http.Request, err error) {
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) && r.Context().Err() == nil {
		h.opts.Logf("oxyfs: %s %s: %v", r.Method, r.URL.Path, err)
	}
}

// serveOxy serves /.oxy/ (a page naming status and signers), /.oxy/status
// and the signers pages.
func (h *handler) serveOxy(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case StatusPath:
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Add("Vary", "Accept")
		if wantsHTML(r) {
			h.statusPage(w, r)
			return
		}
		h.writeJSON(w, r, statusJSON{Status: h.ix.Status(), LastChange: h.ix.ModTime()}, "  ")
	case "/.oxy":
		redirect(w, r, "/.oxy/")
	case "/.oxy/":
		h.page(w, r, "", ".oxy", []entry{{Name: "signers", Type: "dir", Href: "./signers/"}, {Name: "status", Type: "file", Href: "./status"}})
	case strings.TrimSuffix(SignersPath, "/"):
		redirect(w, r, SignersPath)
	default:
		if strings.HasPrefix(r.URL.Path, SignersPath) {
			h.serveSigners(w, r)
			return
		}
		http.NotFound(w, r)
	}
}

// writeJSON writes v as JSON, with what a terminal would act on escaped
// (termsafe.JSON).
func (h *handler) writeJSON(w http.ResponseWriter, r *http.Request, v any, indent string) {
	w.Header().Set("Content-Type", "application/json")
	var b []byte
	var err error
	if indent == "" {
		b, err = json.Marshal(v)
	} else {
		b, err = json.MarshalIndent(v, "", indent)
	}
	if err != nil {
		h.opts.Logf("oxyfs: %s %s: %v", r.Method, r.URL.Path, err)
		http.Error(w, "encode JSON", http.StatusInternalServerError)
		return
	}
	w.Write(append(termsafe.JSON(b), '\n'))
}

// serveTree answers GET and HEAD of a path of the tree from the index;
// prefix is what the URL path has before the tree path ("" or DAVPrefix).
func (h *handler) serveTree(w http.ResponseWriter, r *http.Request, prefix string) {
	ctx := r.Context()
	p := strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(r.URL.Path, prefix)), "/")
	n, err := h.ix.Stat(ctx, p)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	slash := strings.HasSuffix(r.URL.Path, "/")
	switch n.Type {
	case index.NodeDir:
		if !slash {
			redirect(w, r, escapePath(prefix+"/"+p)+"/")
			return
		}
		nodes, err := h.ix.ReadDir(ctx, p)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		es := make([]entry, len(nodes))
		for i, n := range nodes {
			es[i] = entryOf(n)
		}
		h.page(w, r, prefix, p, es)
	case index.NodeSymlink:
		redirect(w, r, escapePath(prefix+"/"+path.Join(path.Dir(p), n.Target)))
	default:
		if slash {
			redirect(w, r, escapePath(prefix+"/"+p))
			return
		}
		q := r.URL.Query()
		if q.Get("view") == "page" && n.Entry.Kind == format.KindSig {
			size, shown, mod, err := h.sigPrefix(ctx, n.Entry)
			if err != nil {
				h.fail(w, r, err)
				return
			}
			h.sigPage(w, r, prefix, p, n.Entry, size, shown, h.sigTime(n, mod))
			return
		}
		content, etag, mod, release, err := h.sigContent(ctx, n.Entry)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		defer release()
		if q.Get("download") == "1" {
			attachment(w, n.Entry)
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("ETag", etag)
		// Escaped as bodies are: a header printed by curl -i must not
		// drive the terminal either.
		w.Header().Set("X-Oxy-Key", termsafe.Escape(n.Entry.Key()))
		// Last-Modified: the signature's key's own (the time its bytes
		// were read with); an index entry's, the store's last change.
		http.ServeContent(w, r, "", h.sigTime(n, mod), content)
	}
}

// StatusClientClosedRequest is the status (nginx's 499) a request whose
// client left before its answer is given: nothing is sent, and nothing
// logged, but a log of statuses shows it.
const StatusClientClosedRequest = 499

// RetryAfter is the Retry-After of a 503: what was refused for now (the
// bytes readers may hold are spent) is worth asking again in a second.
const RetryAfter = "1"

// failStatus is the status that answers err, by its class (index.Classify,
// which the mount's errnos follow too):
//
//	the request's context done (the client left)         499
//	ClassNotFound, ClassNotDir: no such path               404
//	ClassInvalid: a name or key the rules refuse           400
//	ClassReadOnly: a write refused                         403
//	ClassTooLarge: over its size cap (store.ErrTooLarge)   500
//	ClassBusy: refused for now (the readers' budget)       503 with Retry-After
//	ClassTimeout: the store's deadline passed              504
//	anything else (ClassCorrupt, ClassUnavailable, and
//	  ClassCanceled while the client is still there):
//	  the store did not answer as it should               502
//
// An oversized signature is the server's own limit, not the store failing
// (502) nor the request's body (413): 500, with the error naming the size and
// the cap.
func failStatus(r *http.Request, err error) int {
	if r.Context().Err() != nil {
		return StatusClientClosedRequest
	}
	if status, ok := classStatus[index.Classify(err)]; ok {
		return status
	}
	return http.StatusBadGateway
}

// classStatus is the HTTP status of each class of error (index.Classify);
// a class not listed (the store failing) is 502.
var classStatus = map[index.Class]int{
	index.ClassNotFound: http.StatusNotFound,
	index.ClassNotDir:   http.StatusNotFound,
	index.ClassInvalid:  http.StatusBadRequest,
	index.ClassReadOnly: http.StatusForbidden,
	index.ClassTooLarge: http.StatusInternalServerError,
	index.ClassBusy:     http.StatusServiceUnavailable,
	index.ClassTimeout:  http.StatusGatewayTimeout,
}

// fail answers an index error (failStatus): 499 with nothing, 404 as
// http.NotFound, else with the error's text, redacted and escaped, and
// logged once.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := failStatus(r, err)
	switch code {
	case StatusClientClosedRequest:
		w.WriteHeader(code)
		return
	case http.StatusNotFound:
		if errors.Is(err, index.ErrListedMissing) {
			// Listed by the index, gone from the store: say so (the
			// index warned once, naming the key), not a bare "not found".
			http.Error(w, "404 "+termsafe.Line(err.Error()), code)
			return
		}
		http.NotFound(w, r)
		return
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", RetryAfter)
	}
	h.opts.Logf("oxyfs: %s %s: %v", r.Method, r.URL.Path, err)
	http.Error(w, termsafe.Line(err.Error()), code)
}

// entry is one line of a directory page (and one element of its JSON).
type entry struct {
	Name string `json:"name"`
	Type string `json:"type"` // dir, file, symlink
	Size *int64 `json:"size,omitempty"`
	// ModTime: a signature's key's own Last-Modified, when the index
	// read it with its size (omitted otherwise, as its size is).
	ModTime *time.Time `json:"mtime,omitempty"`
	Key     string     `json:"key,omitempty"`
	Source  string     `json:"source,omitempty"`
	Target  string     `json:"target,omitempty"`
	Href    string     `json:"-"`
	Raw     string     `json:"-"` // a signature's bytes, when Href is its page
}

func entryOf(n index.Node) entry {
	e := entry{Name: n.Name, Type: n.Type.String(), Target: n.Target, Href: "./" + url.PathEscape(n.Name)}
	switch n.Type {
	case index.NodeDir:
		e.Href += "/"
	case index.NodeFile:
		e.Key, e.Source = n.Entry.Key(), n.Source
		if n.Entry.Kind == format.KindSig {
			e.Raw, e.Href = e.Href, e.Href+"?view=page"
		}
		if n.Size >= 0 {
			e.Size = &n.Size
		}
		if !n.ModTime.IsZero() {
			t := n.ModTime.UTC()
			e.ModTime = &t
		}
	}
	return e
}

// dirPage is a directory's JSON (?format=json).
type dirPage struct {
	Path    string  `json:"path"`
	Entries []entry `json:"entries"`
}

// page writes a directory as HTML, or as JSON with ?format=json.
func (h *handler) page(w http.ResponseWriter, r *http.Request, prefix, p string, es []entry) {
	w.Header().Set("Cache-Control", "no-cache")
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		if es == nil {
			es = []entry{}
		}
		h.writeJSON(w, r, dirPage{Path: p, Entries: es}, "")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if r.Method == http.MethodHead {
		return
	}
	// Names are shown escaped (termsafe): a page read with curl on a
	// terminal must not drive it. Links keep the exact bytes (escaped).
	shown := make([]entry, len(es))
	for i, e := range es {
		e.Name, e.Target, e.Source = termsafe.EscapeSpaces(e.Name), termsafe.EscapeSpaces(e.Target), termsafe.EscapeSpaces(e.Source)
		shown[i] = e
	}
	s := h.ix.Status()
	data := struct {
		Path, URL, Mode string
		Root            bool
		Crumbs          []crumb
		Entries         []entry
	}{Path: termsafe.EscapeSpaces(prefix + "/" + p), URL: termsafe.Line(s.URL), Mode: s.Mode, Root: p == "" && prefix == "", Entries: shown}
	data.Crumbs = breadcrumbs(prefix, p)
	data.Crumbs[len(data.Crumbs)-1].Href = ""
	if err := pageTmpl.Execute(w, data); err != nil {
		h.opts.Logf("oxyfs: %s %s: %v", r.Method, r.URL.Path, err)
	}
}

var pageTmpl = template.Must(template.Must(template.New("page").Parse(crumbsTmpl)).Funcs(template.FuncMap{
	"size": func(n *int64) string {
		if n == nil {
			return ""
		}
		return fmt.Sprint(*n)
	},
	"mtime": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>oxyfs {{.Path}}</title>
` + style + `</head>
<body>{{template "crumbs" .Crumbs}}
<h1>{{.Path}}</h1>
<p>{{.URL}} ({{.Mode}})</p>
<table>
{{- if not .Root}}
<tr><td><a href="../">../</a></td><td></td><td></td><td></td></tr>
{{- end}}
{{- range .Entries}}
<tr><td><a href="{{.Href}}">{{.Name}}{{if eq .Type "dir"}}/{{end}}</a>{{if .Target}} → {{.Target}}{{end}}{{if .Raw}} (<a href="{{.Raw}}">raw</a>){{end}}</td><td class="n">{{size .Size}}</td><td>{{with mtime .ModTime}}<time datetime="{{.}}">{{.}}</time>{{end}}</td><td>{{.Source}}</td></tr>
{{- end}}
</table>
{{- if .Root}}
<p><a id="signers" href="/.oxy/signers/">Signers</a> · <a href="/.oxy/status">.oxy/status</a> · WebDAV: <a href="/dav/">/dav/</a> · this page as <a href="?format=json">JSON</a></p>
{{- end}}
</body></html>
`))

// redirect sends a 302 to target (an escaped path), keeping the query.
func redirect(w http.ResponseWriter, r *http.Request, target string) {
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	http.Redirect(w, r, target, http.StatusFound)
}

// escapePath escapes each segment of a slash-separated path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// loopbackHost reports whether a Host header names a loopback host:
// localhost (or a name under .localhost) or a loopback address.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
