// Package metrics is oxyfs's Prometheus exposition, shared by `oxyfs mount
// --metrics-addr` and `oxyfs serve --metrics-addr`: one registry of its own
// (not the global one) holding
//
//   - histograms fed as things happen: store requests by kind (through
//     store.Options.Observe) and FUSE operations by name (fs.Options.Observe);
//   - a collector that reads, at scrape time, the counters that already
//     exist: store.Store.Counts, Retries and CASStats, index.Index.Status
//     (entries, journal, signature cache, refreshes) and fs.Server.Ops.
//
// The store and fs packages do not import Prometheus: they call a func.
// Every metric is listed, with its type and labels, in README.md
// ("Metrics").
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// StoreKinds are the values of the kind label of the store's metrics.
var StoreKinds = []string{"list", "get", "head", "put", "delete"}

// Metrics is one registry and the histograms fed into it. Its methods are
// safe for concurrent use.
type Metrics struct {
	reg       *prometheus.Registry
	storeDur  *prometheus.HistogramVec
	storeErrs *prometheus.CounterVec
	fuseDur   *prometheus.HistogramVec
}

// New returns a registry holding the histograms, with a series for every
// store kind already at zero. Watch adds what is read at scrape time.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		storeDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "oxyfs_store_request_duration_seconds",
			Help: "Time of one request to the store (one attempt: a retried read is two), by kind.",
			// 1 ms to 33 s.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"kind"}),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oxyfs_store_request_errors_total",
			Help: "Requests to the store that ended in an error (not found and failed preconditions included), by kind.",
		}, []string{"kind"}),
		fuseDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "oxyfs_fuse_op_duration_seconds",
			Help: "Time oxyfs took to answer one FUSE operation, by operation.",
			// 10 µs to 42 s.
			Buckets: prometheus.ExponentialBuckets(0.00001, 4, 12),
		}, []string{"op"}),
	}
	for _, k := range StoreKinds {
		m.storeDur.WithLabelValues(k)
		m.storeErrs.WithLabelValues(k)
	}
	m.reg.MustRegister(m.storeDur, m.storeErrs)
	return m
}

// ObserveStore is a store.Options.Observe.
func (m *Metrics) ObserveStore(kind string, d time.Duration, err error) {
	m.storeDur.WithLabelValues(kind).Observe(d.Seconds())
	if err != nil {
		m.storeErrs.WithLabelValues(kind).Inc()
	}
}

// ObserveFUSE is an fs.Options.Observe.
func (m *Metrics) ObserveFUSE(op string, d time.Duration) {
	m.fuseDur.WithLabelValues(op).Observe(d.Seconds())
}

// Watch registers what is read at scrape time from ix (and its store) and,
// if ops is not nil (a mount: fs.Server.Ops), the FUSE operations and
// their histogram. Call it once.
func (m *Metrics) Watch(ix *index.Index, ops func() map[string]int64) {
	m.reg.MustRegister(&collector{ix: ix, ops: ops})
	if ops != nil {
		m.reg.MustRegister(m.fuseDur)
	}
}

// WatchRequests registers the FUSE requests the kernel sent, by opcode
// (fs.Server.Requests), read at scrape time. Call it once, on a mount.
func (m *Metrics) WatchRequests(reqs func() map[string]int64) {
	m.reg.MustRegister(requestCollector(reqs))
}

// requestCollector reads fs.Server.Requests at scrape time.
type requestCollector func() map[string]int64

func (c requestCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descFUSEReqs }

func (c requestCollector) Collect(ch chan<- prometheus.Metric) {
	for op, v := range c() {
		ch <- prometheus.MustNewConstMetric(descFUSEReqs, prometheus.CounterValue, float64(v), op)
	}
}

// Registry is the registry, for tests and linting.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

var (
	descRequests  = desc("oxyfs_store_requests_total", "Requests sent to the store, by kind (one LIST is one page; every attempt of a retried read counts).", "kind")
	descRetries   = desc("oxyfs_store_retries_total", "Reads sent again after a transient failure (each also counted in oxyfs_store_requests_total).")
	descCASUpd    = desc("oxyfs_cas_updates_total", "Compare-and-swap updates of a record (journal appends, partial folds).")
	descCASTries  = desc("oxyfs_cas_tries_total", "Compare-and-swap attempts of those updates (one more than the conflicts).")
	descCASMax    = desc("oxyfs_cas_max_tries", "The most attempts one compare-and-swap update needed (the limit is 32).")
	descSigHits   = desc("oxyfs_sig_cache_hits_total", "Signature reads answered from the signature cache.")
	descSigMisses = desc("oxyfs_sig_cache_misses_total", "Signature reads that waited for a GET (their own or one already in flight).")
	descSigEvict  = desc("oxyfs_sig_cache_evictions_total", "Signatures dropped from the cache to make room for others.")
	descSigBytes  = desc("oxyfs_sig_cache_bytes", "Bytes the signature cache holds (keys and per-item overhead included).")
	descEntries   = desc("oxyfs_entries", "Entries held in memory, by kind.", "kind")
	descFolded    = desc("oxyfs_folded", "1 when lookups are answered from the lists and the journal, else 0.")
	descJournal   = desc("oxyfs_journal_lines", "Journal lines read at the last open or refresh, by state.", "state")
	descRefreshes = desc("oxyfs_refreshes_total", "Refreshes of the index, by result (ok, error).", "result")
	descRefreshAt = desc("oxyfs_last_refresh_timestamp_seconds", "When the last refresh ended, in Unix seconds (absent before the first).")
	descRefreshOK = desc("oxyfs_last_refresh_success", "1 if the last refresh succeeded, 0 if it failed (absent before the first).")
	descListHits  = desc("oxyfs_list_cache_lists_total", "Entry lists read since the open, by source (cache: mapped from --cache-dir; store: read from the store).", "source")
	descListBytes = desc("oxyfs_list_cache_list_bytes_total", "Sizes in the store of those entry lists, by source (cache: bytes not read from the store).", "source")
	descListWrit  = desc("oxyfs_list_cache_written_total", "Entry lists written into the list cache.")
	descListIgn   = desc("oxyfs_list_cache_ignored_total", "Files found in the list cache that were not their list (corrupt, foreign, stale): removed, and the list read from the store.")
	descListUse   = desc("oxyfs_list_cache_bytes", "Bytes the list cache's directory holds (absent without a cache).")
	descListBound = desc("oxyfs_list_cache_bound_bytes", "What the list cache may hold, --cache-size (absent without a cache).")
	descFUSEOps   = desc("oxyfs_fuse_ops_total", "FUSE operations answered, by operation.", "op")
	descFUSEReqs  = desc("oxyfs_fuse_requests_total", "FUSE requests the kernel sent, by opcode (LOOKUP, READDIRPLUS, READ, ...).", "opcode")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// collector reads the counters that exist at scrape time.
type collector struct {
	ix  *index.Index
	ops func() map[string]int64
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descRetries, descCASUpd, descCASTries, descCASMax,
		descSigHits, descSigMisses, descSigEvict, descSigBytes, descEntries, descFolded, descJournal,
		descRefreshes, descRefreshAt, descRefreshOK, descListHits, descListBytes, descListWrit, descListIgn,
		descListUse, descListBound} {
		ch <- d
	}
	if c.ops != nil {
		ch <- descFUSEOps
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	st := c.ix.Store()
	n := st.Counts()
	for i, v := range []int64{n.List, n.Get, n.Head, n.Put, n.Delete} {
		counter(descRequests, v, StoreKinds[i])
	}
	counter(descRetries, st.Retries())
	cas := st.CASStats()
	counter(descCASUpd, cas.Updates)
	counter(descCASTries, cas.Tries)
	gauge(descCASMax, float64(cas.MaxTries))

	s := c.ix.Status()
	counter(descSigHits, s.SigCache.Hits)
	counter(descSigMisses, s.SigCache.Misses)
	counter(descSigEvict, s.SigCache.Evictions)
	gauge(descSigBytes, float64(s.SigCacheBytes))
	for _, k := range format.Kinds {
		gauge(descEntries, float64(s.EntriesPerKind[k.String()]), k.String())
	}
	gauge(descFolded, b2f(s.Folded))
	gauge(descJournal, float64(s.JournalFolded), "folded")
	gauge(descJournal, float64(s.JournalUnfolded), "unfolded")
	counter(descRefreshes, s.Refreshes-s.RefreshFailures, "ok")
	counter(descRefreshes, s.RefreshFailures, "error")
	if !s.LastRefreshTime.IsZero() {
		gauge(descRefreshAt, float64(s.LastRefreshTime.UnixNano())/1e9)
		gauge(descRefreshOK, b2f(s.LastRefreshError == ""))
	}
	lc := s.ListCache
	counter(descListHits, lc.Hits, "cache")
	counter(descListHits, lc.Misses, "store")
	counter(descListBytes, lc.HitBytes, "cache")
	counter(descListBytes, lc.MissBytes, "store")
	counter(descListWrit, lc.Written)
	counter(descListIgn, lc.Ignored)
	if lc.Dir != "" {
		gauge(descListUse, float64(lc.Bytes))
		gauge(descListBound, float64(lc.Bound))
	}
	if c.ops != nil {
		for op, v := range c.ops() {
			counter(descFUSEOps, v, op)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
