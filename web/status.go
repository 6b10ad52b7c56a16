package web

import (
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// /.oxy/status is index.Status: as JSON for a program (and curl), as a page
// for a browser. The page is tables a person reads: one row per figure,
// named by its JSON name; times as RFC 3339 with how long ago ("never" for
// none); the nested counts as rows of their own (entries per kind, requests
// by kind, the lists, the signature cache, the readers).

// statusJSON is the JSON of /.oxy/status: index.Status, and the store's last
// change as the index knows it (index.Index.ModTime), which WebDAV reports as
// every file's getlastmodified.
type statusJSON struct {
	index.Status
	LastChange time.Time `json:"last_change,omitzero"`
}

// wantsHTML reports whether /.oxy/status should be a page: the client
// accepts text/html (a browser) and did not ask for ?format=json.
func wantsHTML(r *http.Request) bool {
	if f := r.URL.Query().Get("format"); f != "" {
		return f == "html"
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// statusRow is one row of a status table: Value is shown, and a time's
// DateTime (RFC 3339) is its machine form (the <time> element's datetime).
type statusRow struct {
	Name, Value, DateTime string
}

// requestRow is one row of the requests table: a count of each kind.
type requestRow struct {
	Name, What                   string
	List, Get, Head, Put, Delete int64
	Total                        int64
}

// listRow is one entry list of the store (live or retired); its name holds
// its id.
type listRow struct {
	Name, Size string
	Complete   bool
}

// statusView is what the status page shows.
type statusView struct {
	Crumbs            []crumb
	Rows              []statusRow // id="status": one figure each
	Kinds             []statusRow // id="entries_per_kind"
	Requests          []requestRow
	Live, Retired     []listRow
	SigCache, Readers []statusRow
	ReadAhead         []statusRow // id="read_ahead"
	ListCache         []statusRow // id="list_cache"
	Warnings          []string
}

// statusOf builds the page from s, the store's last change and now (for
// "ago").
func statusOf(s index.Status, lastChange, now time.Time) statusView {
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	row := func(name, v string) statusRow { return statusRow{Name: name, Value: termsafe.Line(v)} }
	v := statusView{Crumbs: []crumb{{Name: "/", Href: "/"}, {Name: ".oxy", Href: "/.oxy/"}, {Name: "status"}}}
	v.Rows = []statusRow{
		row("url", s.URL), row("layout", s.Layout), row("mode", s.Mode),
		row("loaded", strconv.FormatBool(s.Loaded)), row("folded", strconv.FormatBool(s.Folded)),
		timeRow("last_change", lastChange, now),
		row("entries", entriesValue(s)), row("entries_counted", strconv.FormatBool(s.EntriesCounted)),
		row("own_writes", strconv.Itoa(s.OwnWrites)),
		row("malformed", strconv.Itoa(s.Malformed)), row("listed_missing", num(s.ListedMissing)),
		row("journal_lines", strconv.Itoa(s.JournalLines)), row("journal_folded", strconv.Itoa(s.JournalFolded)),
		row("journal_unfolded", strconv.Itoa(s.JournalUnfolded)),
		row("journal_appends", num(s.JournalAppends)), row("journal_keys", num(s.JournalKeys)),
		row("legacy_read", strconv.FormatBool(s.LegacyRead)),
		row("memory_bytes", bytesText(s.MemoryBytes)), row("generation", strconv.FormatUint(s.Generation, 10)),
		row("sig_cache_bytes", bytesText(s.SigCacheBytes)), row("sig_cache_bound", bytesText(s.SigCacheBound)),
		row("sig_sizes_bound", bytesText(s.SigSizesBound)), row("memory_bound", bytesText(s.MemoryBound)),
		row("refreshes", num(s.Refreshes)), row("refresh_failures", num(s.RefreshFailures)),
		timeRow("last_refresh_time", s.LastRefreshTime, now),
		row("last_refresh_error", orNone(s.LastRefreshError)),
		row("conditions", conditionsText(s.Conditions)),
	}
	for _, k := range format.Kinds {
		n := strconv.Itoa(s.EntriesPerKind[k.String()])
		if s.Loaded && !s.EntriesCounted {
			n = "not counted (" + s.Mode + ")"
		}
		v.Kinds = append(v.Kinds, row(k.String(), n))
	}
	reqs := func(name, what string, c store.Counts) requestRow {
		return requestRow{Name: name, What: what, List: c.List, Get: c.Get, Head: c.Head, Put: c.Put, Delete: c.Delete, Total: c.Total()}
	}
	v.Requests = []requestRow{
		reqs("requests", "sent so far", s.Requests),
		reqs("open_requests", "the open (snapshot and lists)", s.OpenRequests),
		reqs("last_refresh_requests", "the last refresh", s.LastRefresh),
	}
	lists := func(ls []store.ListInfo) []listRow {
		out := make([]listRow, len(ls))
		for i, l := range ls {
			out[i] = listRow{Name: termsafe.EscapeSpaces(l.Name), Size: bytesText(l.Size), Complete: l.Complete}
		}
		return out
	}
	v.Live, v.Retired = lists(s.LiveLists), lists(s.RetiredLists)
	v.SigCache = []statusRow{row("hits", num(s.SigCache.Hits)), row("misses", num(s.SigCache.Misses)), row("evictions", num(s.SigCache.Evictions))}
	v.Readers = []statusRow{
		row("held_bytes", bytesText(s.Readers.HeldBytes)), row("peak_bytes", bytesText(s.Readers.PeakBytes)),
		row("bound_bytes", bytesText(s.Readers.BoundBytes)), row("refused", num(s.Readers.Refused)),
	}
	v.ReadAhead = []statusRow{
		row("max", num(int64(s.ReadAhead.Max))), row("limit", num(int64(s.ReadAhead.Limit))),
		row("peak", num(int64(s.ReadAhead.Peak))), row("depth", num(int64(s.ReadAhead.Depth))),
		row("sent", num(s.ReadAhead.Sent)),
	}
	// The cache's directory is a path of the serving host: the page says
	// whether there is one, not where.
	cacheDir := "none"
	if s.ListCache.Dir != "" {
		cacheDir = "on this host"
	}
	lc := s.ListCache
	v.ListCache = []statusRow{
		row("dir", cacheDir), row("bound", bytesText(lc.Bound)), row("bytes", bytesText(lc.Bytes)),
		row("hits", num(lc.Hits)), row("hit_bytes", bytesText(lc.HitBytes)),
		row("misses", num(lc.Misses)), row("miss_bytes", bytesText(lc.MissBytes)),
		row("written", num(lc.Written)), row("ignored", num(lc.Ignored)),
	}
	for _, w := range s.Warnings {
		v.Warnings = append(v.Warnings, termsafe.Line(w))
	}
	return v
}

// conditionsText says whether the server honours the conditions of its
// writes, as this process found (store.ConditionsVerdict).
func conditionsText(c store.ConditionsVerdict) string {
	switch {
	case !c.Checked:
		return "not checked yet (no write)"
	case c.Honoured:
		return "honoured: " + c.How
	}
	return "IGNORED, writes refused: " + c.How
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// timeRow shows t as RFC 3339 (UTC, to the second) and how long before now
// it was; the zero time is "never".
func timeRow(name string, t, now time.Time) statusRow {
	if t.IsZero() {
		return statusRow{Name: name, Value: "never"}
	}
	at := t.UTC().Format(time.RFC3339)
	return statusRow{Name: name, Value: at + " (" + ago(now.Sub(t)) + ")", DateTime: at}
}

// ago says how long a duration is, to its largest unit or two: "12 s ago",
// "5 min ago", "3 h 20 min ago", "2 days 4 h ago"; a time after now is "in
// the future".
func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "in the future"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %d min ago", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%d days %d h ago", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// bytesText is a byte count, with its size in KiB, MiB or GiB when it is
// that large: "1048576 (1.0 MiB)".
func bytesText(n int64) string {
	s := strconv.FormatInt(n, 10)
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			return fmt.Sprintf("%s (%.1f %s)", s, float64(n)/float64(u.size), u.name)
		}
	}
	return s
}

// statusPage writes /.oxy/status as a page of tables.
func (h *handler) statusPage(w http.ResponseWriter, r *http.Request) {
	h.html(w, r, statusTmpl, statusOf(h.ix.Status(), h.ix.ModTime(), time.Now()))
}

var statusTmpl = template.Must(template.Must(template.New("status").Parse(crumbsTmpl)).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>oxyfs status</title>` + style + `</head>
<body>{{template "crumbs" .Crumbs}}
<h1>status</h1>
<table id="status">
{{- range .Rows}}
<tr><th>{{.Name}}</th><td>{{if .DateTime}}<time datetime="{{.DateTime}}">{{.Value}}</time>{{else}}{{.Value}}{{end}}</td></tr>
{{- end}}
</table>
<h2>entries per kind</h2>
<table id="entries_per_kind" class="rows">
<tr><th>kind</th><th class="n">entries</th></tr>
{{- range .Kinds}}
<tr><th>{{.Name}}</th><td class="n">{{.Value}}</td></tr>
{{- end}}
</table>
<h2>requests to the store</h2>
<table id="requests" class="rows">
<tr><th></th><th></th><th class="n">LIST</th><th class="n">GET</th><th class="n">HEAD</th><th class="n">PUT</th><th class="n">DELETE</th><th class="n">total</th></tr>
{{- range .Requests}}
<tr><th>{{.Name}}</th><td>{{.What}}</td><td class="n">{{.List}}</td><td class="n">{{.Get}}</td><td class="n">{{.Head}}</td><td class="n">{{.Put}}</td><td class="n">{{.Delete}}</td><td class="n">{{.Total}}</td></tr>
{{- end}}
</table>
<h2>live lists</h2>
<div id="live_lists">{{template "lists" .Live}}</div>
<h2>retired lists</h2>
<div id="retired_lists">{{template "lists" .Retired}}</div>
<h2>signature cache</h2>
<table id="sig_cache">
{{- range .SigCache}}
<tr><th>{{.Name}}</th><td class="n">{{.Value}}</td></tr>
{{- end}}
</table>
<h2>readers</h2>
<table id="readers">
{{- range .Readers}}
<tr><th>{{.Name}}</th><td class="n">{{.Value}}</td></tr>
{{- end}}
</table>
<h2>read_ahead</h2>
<table id="read_ahead">
{{- range .ReadAhead}}
<tr><th>{{.Name}}</th><td class="n">{{.Value}}</td></tr>
{{- end}}
</table>
<h2>list_cache</h2>
<table id="list_cache">
{{- range .ListCache}}
<tr><th>{{.Name}}</th><td class="n">{{.Value}}</td></tr>
{{- end}}
</table>
<h2>warnings</h2>
{{- if .Warnings}}
<ul id="warnings">
{{- range .Warnings}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- else}}
<p id="warnings">none</p>
{{- end}}
<p>as <a href="?format=json">JSON</a></p>
</body></html>
{{define "lists"}}{{if .}}<table class="rows">
<tr><th>name</th><th>complete</th><th class="n">size</th></tr>
{{- range .}}
<tr><td>{{.Name}}</td><td>{{.Complete}}</td><td class="n">{{.Size}}</td></tr>
{{- end}}
</table>{{else}}<p>none</p>{{end}}{{end}}
`))

// entriesValue is the entries row: the count, or in the prefix modes that
// the store's entries are not counted (index.Status.EntriesText).
func entriesValue(s index.Status) string {
	if !s.Loaded || s.EntriesCounted {
		return strconv.Itoa(s.Entries)
	}
	return s.EntriesText()
}
