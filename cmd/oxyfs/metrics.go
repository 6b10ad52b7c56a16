package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"sort"
	"time"

	"github.com/oxyfs/oxyfs/fs"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/web"
)

// metricsLimits bound the metrics server as web.DefaultLimits bound serve,
// with fewer connections (a scraper needs one).
var metricsLimits = web.Limits{MaxConns: 16, MaxRequestBody: 4 << 10}

// serveMetrics serves Prometheus text-format metrics: requests by kind,
// entries, FUSE operations. addr was checked (checkListenAddr). It returns
// a function that stops the server.
func serveMetrics(addr string, ix *index.Index, m *fs.Server, logger *log.Logger) (func(), error) {
	ln, err := web.Listen(addr, metricsLimits)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		writeMetrics(w, ix, m)
	})
	srv := web.NewServer(http.MaxBytesHandler(mux, metricsLimits.MaxRequestBody), metricsLimits, logger)
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			logger.Printf("metrics server: %v", err)
		}
	}()
	logger.Printf("metrics at http://%s/metrics", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

func writeMetrics(w http.ResponseWriter, ix *index.Index, m *fs.Server) {
	s := ix.Status()
	c := ix.Store().Counts()
	fmt.Fprintln(w, "# HELP oxyfs_store_requests_total Requests sent to the store, by kind (one LIST is one page).")
	fmt.Fprintln(w, "# TYPE oxyfs_store_requests_total counter")
	for _, kv := range []struct {
		k string
		v int64
	}{{"list", c.List}, {"get", c.Get}, {"head", c.Head}, {"put", c.Put}, {"delete", c.Delete}} {
		fmt.Fprintf(w, "oxyfs_store_requests_total{kind=%q} %d\n", kv.k, kv.v)
	}
	fmt.Fprintln(w, "# HELP oxyfs_store_retries_total Reads sent again after a transient failure (each also counted in oxyfs_store_requests_total).")
	fmt.Fprintln(w, "# TYPE oxyfs_store_retries_total counter")
	fmt.Fprintf(w, "oxyfs_store_retries_total %d\n", ix.Store().Retries())
	cas := ix.Store().CASStats()
	fmt.Fprintln(w, "# HELP oxyfs_cas_updates_total Compare-and-swap updates of a record (journal appends, partial folds).")
	fmt.Fprintln(w, "# TYPE oxyfs_cas_updates_total counter")
	fmt.Fprintf(w, "oxyfs_cas_updates_total %d\n", cas.Updates)
	fmt.Fprintln(w, "# HELP oxyfs_cas_tries_total Compare-and-swap attempts of those updates.")
	fmt.Fprintln(w, "# TYPE oxyfs_cas_tries_total counter")
	fmt.Fprintf(w, "oxyfs_cas_tries_total %d\n", cas.Tries)
	fmt.Fprintln(w, "# HELP oxyfs_cas_max_tries The most attempts one update needed (the limit is 32).")
	fmt.Fprintln(w, "# TYPE oxyfs_cas_max_tries gauge")
	fmt.Fprintf(w, "oxyfs_cas_max_tries %d\n", cas.MaxTries)
	fmt.Fprintln(w, "# HELP oxyfs_entries Entries held in memory, by kind.")
	fmt.Fprintln(w, "# TYPE oxyfs_entries gauge")
	kinds := make([]string, 0, len(s.EntriesPerKind))
	for k := range s.EntriesPerKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(w, "oxyfs_entries{kind=%q} %d\n", k, s.EntriesPerKind[k])
	}
	fmt.Fprintln(w, "# HELP oxyfs_folded 1 when lookups are answered from the lists and the journal.")
	fmt.Fprintln(w, "# TYPE oxyfs_folded gauge")
	folded := 0
	if s.Folded {
		folded = 1
	}
	fmt.Fprintf(w, "oxyfs_folded %d\n", folded)
	fmt.Fprintln(w, "# HELP oxyfs_journal_lines Journal lines read at the last open or refresh.")
	fmt.Fprintln(w, "# TYPE oxyfs_journal_lines gauge")
	fmt.Fprintf(w, "oxyfs_journal_lines{state=\"folded\"} %d\noxyfs_journal_lines{state=\"unfolded\"} %d\n", s.JournalFolded, s.JournalUnfolded)
	fmt.Fprintln(w, "# HELP oxyfs_fuse_ops_total FUSE operations served, by operation.")
	fmt.Fprintln(w, "# TYPE oxyfs_fuse_ops_total counter")
	ops := m.Ops()
	names := make([]string, 0, len(ops))
	for k := range ops {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(w, "oxyfs_fuse_ops_total{op=%q} %d\n", k, ops[k])
	}
}
