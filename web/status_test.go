package web

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// TestStatusPageNamesEveryFigure: the status page names every field of
// index.Status (a row's header or a table's id), so a field added there is
// not left off the page; no value is Go's default printing of a map, a
// struct or a zero time.
func TestStatusPageNamesEveryFigure(t *testing.T) {
	f := newFixture(t, Options{})
	_, body := f.do(t, noRedirect, "GET", StatusPath, map[string]string{"Accept": "text/html"}, "")
	page := string(body)
	st := reflect.TypeFor[index.Status]()
	for i := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if !strings.Contains(page, "<th>"+name+"</th>") && !strings.Contains(page, `id="`+name+`"`) {
			t.Errorf("the status page does not name %s (%s)", name, st.Field(i).Name)
		}
	}
	for _, bad := range []string{"map[", "{0 ", "0001-01-01", "+0000 UTC"} {
		if strings.Contains(page, bad) {
			t.Errorf("the status page holds %q:\n%s", bad, page)
		}
	}
}

// TestStatusRows: times are RFC 3339 and how long ago (never when zero),
// counts per kind and requests per kind are rows and cells of their own.
func TestStatusRows(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	s := index.Status{
		Mode:            "folded",
		EntriesPerKind:  map[string]int{"sig": 3, "accepted": 613},
		Requests:        store.Counts{List: 1, Get: 4, Head: 2, Put: 0, Delete: 5},
		LastRefreshTime: now.Add(-3*time.Hour - 20*time.Minute),
		MemoryBytes:     3 << 20,
	}
	v := statusOf(s, time.Time{}, now)
	rows := map[string]statusRow{}
	for _, r := range v.Rows {
		rows[r.Name] = r
	}
	if r := rows["last_refresh_time"]; r.Value != "2026-12-03T06:40:00Z (3 h 20 min ago)" || r.DateTime != "2026-12-03T06:40:00Z" {
		t.Errorf("last_refresh_time %+v", r)
	}
	if r := rows["last_change"]; r.Value != "never" || r.DateTime != "" {
		t.Errorf("last_change (zero) %+v", r)
	}
	if r := rows["memory_bytes"]; r.Value != "3145728 (3.0 MiB)" {
		t.Errorf("memory_bytes %+v", r)
	}
	kinds := map[string]string{}
	for _, r := range v.Kinds {
		kinds[r.Name] = r.Value
	}
	if len(v.Kinds) != format.NumKinds || kinds["accepted"] != "613" || kinds["sig"] != "3" || kinds["seal"] != "0" {
		t.Errorf("entries per kind %+v", v.Kinds)
	}
	if r := v.Requests[0]; r.Name != "requests" || r.List != 1 || r.Get != 4 || r.Head != 2 || r.Put != 0 || r.Delete != 5 || r.Total != 12 {
		t.Errorf("requests row %+v", r)
	}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{12 * time.Second, "12 s ago"}, {5*time.Minute + 3*time.Second, "5 min ago"},
		{49 * time.Hour, "2 days 1 h ago"}, {-time.Second, "in the future"},
	} {
		if got := ago(c.d); got != c.want {
			t.Errorf("ago(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// TestStatusJSONKeepsItsForm: the JSON form is index.Status's (a nested
// object for requests, per kind), plus the store's last change.
func TestStatusJSONKeepsItsForm(t *testing.T) {
	f := newFixture(t, Options{})
	var v map[string]any
	f.getJSON(t, StatusPath, &v)
	if _, ok := v["requests"].(map[string]any)["list"]; !ok {
		t.Errorf("requests: %v", v["requests"])
	}
	if n, ok := v["entries_per_kind"].(map[string]any)["sig"]; !ok || n != float64(3) {
		t.Errorf("entries_per_kind: %v", v["entries_per_kind"])
	}
	if v["mode"] != f.ix.Status().Mode {
		t.Errorf("mode %v", v["mode"])
	}
	_, has := v["last_change"]
	if has != !f.ix.ModTime().IsZero() {
		t.Errorf("last_change %v, the index's ModTime %v", v["last_change"], f.ix.ModTime())
	}
	resp, _ := f.do(t, noRedirect, "GET", StatusPath, nil, "")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("status without Accept: %s", ct)
	}
}

// TestStatusRowsOfAStoreNotFolded: on a store that is not folded (prefix
// listings) nothing counts the entries, so the entries row and every kind's
// row say so rather than show 0 — which read as "no signatures".
func TestStatusRowsOfAStoreNotFolded(t *testing.T) {
	s := index.Status{Loaded: true, Mode: index.ModePrefixListing, EntriesPerKind: map[string]int{"sig": 0}}
	v := statusOf(s, time.Time{}, time.Now())
	for _, r := range v.Rows {
		if r.Name == "entries" && !strings.Contains(r.Value, "not counted") {
			t.Errorf("entries row %q, want it to say the entries are not counted", r.Value)
		}
	}
	for _, r := range v.Kinds {
		if !strings.HasPrefix(r.Value, "not counted") {
			t.Errorf("kind %s: %q, want \"not counted …\"", r.Name, r.Value)
		}
	}
}
