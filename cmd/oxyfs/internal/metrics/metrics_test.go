package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// setup opens a mem store whose requests feed m, with one signature.
func setup(t *testing.T) (*Metrics, *index.Index, format.Entry) {
	t.Helper()
	ctx := context.Background()
	m := New()
	st := storefixture.Open(t, "mem://", store.Options{Layout: store.LayoutBucket, Observe: m.ObserveStore})
	ix, err := index.Open(ctx, st, index.Options{ReadAhead: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	sig := format.Entry{Kind: format.KindSig, Object: strings.Repeat("ab", 32), Value: "alice"}
	if err := ix.Put(ctx, sig, []byte("signature bytes")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return m, ix, sig
}

// scrape GETs the handler and parses the text exposition.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the exposition: %v", err)
	}
	return fams
}

// value is the metric of fam whose labels are labels (name, value pairs).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	fam, ok := fams[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range fam.Metric {
		if len(m.Label) != len(labels)/2 {
			continue
		}
		for i, l := range m.Label {
			if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no metric %s%v", name, labels)
	return nil
}

// TestScrapeCountsKnownRequests sends known requests to a mem store and
// checks the counters and histograms the endpoint reports, exactly.
func TestScrapeCountsKnownRequests(t *testing.T) {
	ctx := context.Background()
	m, ix, sig := setup(t)
	m.Watch(ix, func() map[string]int64 { return map[string]int64{"lookup": 7, "read": 2} })
	m.ObserveFUSE("lookup", 0)
	st := ix.Store()
	for range 2 {
		if _, err := ix.ReadSig(ctx, sig); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	fams0 := scrape(t, m.Handler())
	before := st.Counts()
	const n = 5
	for range n {
		if _, err := st.Get(ctx, sig.Key()); err != nil {
			t.Fatal(err)
		}
	}
	fams := scrape(t, m.Handler())
	c := st.Counts()
	if d := c.Sub(before); d != (store.Counts{Get: n}) {
		t.Fatalf("store counted %v, want %d GETs", d, n)
	}
	for i, kind := range StoreKinds {
		want := []int64{c.List, c.Get, c.Head, c.Put, c.Delete}[i]
		wantDelta := 0
		if kind == "get" {
			wantDelta = n
		}
		got := value(t, fams, "oxyfs_store_requests_total", "kind", kind).GetCounter().GetValue()
		got0 := value(t, fams0, "oxyfs_store_requests_total", "kind", kind).GetCounter().GetValue()
		if got != float64(want) || got-got0 != float64(wantDelta) {
			t.Errorf("oxyfs_store_requests_total{kind=%q} = %v (was %v), want %d (%d more)", kind, got, got0, want, wantDelta)
		}
		h := value(t, fams, "oxyfs_store_request_duration_seconds", "kind", kind).GetHistogram().GetSampleCount()
		h0 := value(t, fams0, "oxyfs_store_request_duration_seconds", "kind", kind).GetHistogram().GetSampleCount()
		if h != uint64(want) || h-h0 != uint64(wantDelta) {
			t.Errorf("oxyfs_store_request_duration_seconds_count{kind=%q} = %d (was %d), want %d (%d more)", kind, h, h0, want, wantDelta)
		}
		e := value(t, fams, "oxyfs_store_request_errors_total", "kind", kind).GetCounter().GetValue()
		e0 := value(t, fams0, "oxyfs_store_request_errors_total", "kind", kind).GetCounter().GetValue()
		if e != e0 {
			t.Errorf("oxyfs_store_request_errors_total{kind=%q} went from %v to %v, want no change", kind, e0, e)
		}
	}
	for name, want := range map[string]float64{
		"oxyfs_sig_cache_hits_total":      2,
		"oxyfs_sig_cache_misses_total":    0,
		"oxyfs_sig_cache_evictions_total": 0,
		"oxyfs_store_retries_total":       0,
		"oxyfs_last_refresh_success":      1,
	} {
		fam := fams[name]
		if fam == nil || len(fam.Metric) != 1 {
			t.Errorf("%s: %v", name, fam)
			continue
		}
		v := fam.Metric[0].GetCounter().GetValue() + fam.Metric[0].GetGauge().GetValue()
		if v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if got := value(t, fams, "oxyfs_refreshes_total", "result", "ok").GetCounter().GetValue(); got != 1 {
		t.Errorf("oxyfs_refreshes_total{result=ok} = %v, want 1", got)
	}
	for kind, want := range ix.Status().EntriesPerKind {
		if got := value(t, fams, "oxyfs_entries", "kind", kind).GetGauge().GetValue(); got != float64(want) {
			t.Errorf("oxyfs_entries{kind=%q} = %v, want %d", kind, got, want)
		}
	}
	if got := value(t, fams, "oxyfs_fuse_ops_total", "op", "lookup").GetCounter().GetValue(); got != 7 {
		t.Errorf("oxyfs_fuse_ops_total{op=lookup} = %v, want 7", got)
	}
	if got := value(t, fams, "oxyfs_fuse_op_duration_seconds", "op", "lookup").GetHistogram().GetSampleCount(); got != 1 {
		t.Errorf("oxyfs_fuse_op_duration_seconds_count{op=lookup} = %d, want 1", got)
	}
}

// TestServeHasNoFUSEMetrics: without a mount there is no FUSE family.
func TestServeHasNoFUSEMetrics(t *testing.T) {
	m, ix, _ := setup(t)
	m.Watch(ix, nil)
	fams := scrape(t, m.Handler())
	for _, name := range []string{"oxyfs_fuse_ops_total", "oxyfs_fuse_op_duration_seconds", "oxyfs_last_refresh_success"} {
		if fams[name] != nil {
			t.Errorf("%s reported: %v", name, fams[name])
		}
	}
	if fams["oxyfs_store_requests_total"] == nil {
		t.Error("no oxyfs_store_requests_total")
	}
}

// TestMetricsLintClean runs promlint over every metric.
func TestMetricsLintClean(t *testing.T) {
	m, ix, _ := setup(t)
	m.Watch(ix, func() map[string]int64 { return map[string]int64{"lookup": 1} })
	m.ObserveFUSE("lookup", 0)
	if err := ix.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestFUSERequestsByOpcode: the kernel's requests are a counter per opcode,
// as fs.Server.Requests reports them.
func TestFUSERequestsByOpcode(t *testing.T) {
	m, ix, _ := setup(t)
	m.Watch(ix, nil)
	m.WatchRequests(func() map[string]int64 { return map[string]int64{"LOOKUP": 3, "READDIRPLUS": 5} })
	fams := scrape(t, m.Handler())
	for op, want := range map[string]float64{"LOOKUP": 3, "READDIRPLUS": 5} {
		if got := value(t, fams, "oxyfs_fuse_requests_total", "opcode", op).GetCounter().GetValue(); got != want {
			t.Errorf("oxyfs_fuse_requests_total{opcode=%q} = %v, want %v", op, got, want)
		}
	}
}

// TestListCacheCounters (issue 38): the list cache's use is in the
// metrics as in .oxy/status (index.ListCacheStats): a first open with the
// cache reads its list from the store and writes it into the cache, a
// second maps it; the byte counts are the sizes the status gives.
func TestListCacheCounters(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 500, Seed: 3, Fold: true, SkipObjects: true}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	open := func() (*Metrics, *index.Index) {
		c, err := index.OpenListCache(dir, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		ix, err := index.Open(ctx, st, index.Options{ListCache: c})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		if err := ix.Load(ctx); err != nil {
			t.Fatal(err)
		}
		c.Wait()
		m := New()
		m.Watch(ix, nil)
		return m, ix
	}
	check := func(name string, m *Metrics, ix *index.Index, hits, misses, written int64) {
		t.Helper()
		s := ix.Status().ListCache
		if s.Hits != hits || s.Misses != misses || s.Written != written {
			t.Fatalf("%s: status says %d hits, %d misses, %d written; want %d, %d, %d", name, s.Hits, s.Misses, s.Written, hits, misses, written)
		}
		fams := scrape(t, m.Handler())
		for _, c := range []struct {
			metric, source string
			want           int64
		}{
			{"oxyfs_list_cache_lists_total", "cache", s.Hits},
			{"oxyfs_list_cache_lists_total", "store", s.Misses},
			{"oxyfs_list_cache_list_bytes_total", "cache", s.HitBytes},
			{"oxyfs_list_cache_list_bytes_total", "store", s.MissBytes},
		} {
			if got := value(t, fams, c.metric, "source", c.source).GetCounter().GetValue(); got != float64(c.want) {
				t.Errorf("%s: %s{source=%q} = %v, want %d", name, c.metric, c.source, got, c.want)
			}
		}
		for metric, want := range map[string]float64{
			"oxyfs_list_cache_written_total": float64(s.Written),
			"oxyfs_list_cache_ignored_total": float64(s.Ignored),
			"oxyfs_list_cache_bytes":         float64(s.Bytes),
			"oxyfs_list_cache_bound_bytes":   1 << 30,
		} {
			fam := fams[metric]
			if fam == nil || len(fam.Metric) != 1 {
				t.Errorf("%s: %s: %v", name, metric, fam)
				continue
			}
			if got := fam.Metric[0].GetCounter().GetValue() + fam.Metric[0].GetGauge().GetValue(); got != want {
				t.Errorf("%s: %s = %v, want %v", name, metric, got, want)
			}
		}
	}
	m1, ix1 := open()
	check("first open", m1, ix1, 0, 1, 1)
	if ix1.Status().ListCache.MissBytes == 0 {
		t.Fatal("the first open's list has no size")
	}
	m2, ix2 := open()
	check("second open", m2, ix2, 1, 0, 0)
}
