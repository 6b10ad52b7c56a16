package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/oxyfs/oxyfs/cmd/oxyfs/internal/metrics"
	"github.com/oxyfs/oxyfs/web"
)

// metricsLimits bound the metrics server as web.DefaultLimits() bound serve,
// with fewer connections (a scraper needs one).
var metricsLimits = web.Limits{MaxConns: 16, MaxRequestBody: 4 << 10}

// serveMetrics serves the Prometheus metrics of m (cmd/oxyfs/internal/metrics) at
// /metrics on addr, which was checked (checkListenAddr). It returns a
// function that stops the server. On a loopback address it answers only
// requests whose Host is a loopback name or address, as serve does.
func serveMetrics(addr string, m *metrics.Metrics, logger *log.Logger) (func(), error) {
	ln, err := web.Listen(addr, metricsLimits)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	var h http.Handler = http.MaxBytesHandler(mux, metricsLimits.MaxRequestBody)
	if loopback, _ := loopbackAddr(addr); loopback {
		h = web.LoopbackOnly(h) // serve's Host rule: no DNS rebinding
	}
	srv := web.NewServer(h, metricsLimits, logger)
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
