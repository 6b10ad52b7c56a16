package main

import (
	"context"
	"log"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/cmd/oxyfs/internal/metrics"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestServeMetricsCountARead runs `oxyfs serve --metrics-addr`, reads one
// signature over HTTP and finds exactly one more GET, counted and timed,
// on /metrics.
func TestServeMetricsCountARead(t *testing.T) {
	url, sigs := serveStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", url, "--layout", "bucket", "--http", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--read-ahead", "-1"}, strings.NewReader(""), &stdout, &stderr)
	}()
	ready := regexp.MustCompile(`(?s)metrics at (http://127\.0\.0\.1:\d+/metrics)\n.*oxyfs: serving \S+ at (http://127\.0\.0\.1:\d+)/\n`)
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil; {
		if m = ready.FindStringSubmatch(stderr.String()); m != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready lines:\n%s", stderr.String())
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d:\n%s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	metricsURL, base := m[1], m[2]
	c := &http.Client{Timeout: 10 * time.Second}
	gets := func() (count float64, observed uint64) {
		t.Helper()
		resp, err := c.Get(metricsURL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatalf("parse /metrics: %v", err)
		}
		if fams["oxyfs_fuse_ops_total"] != nil {
			t.Error("serve reports FUSE operations")
		}
		for _, mt := range fams["oxyfs_store_requests_total"].GetMetric() {
			if mt.GetLabel()[0].GetValue() == "get" {
				count = mt.GetCounter().GetValue()
			}
		}
		for _, mt := range fams["oxyfs_store_request_duration_seconds"].GetMetric() {
			if mt.GetLabel()[0].GetValue() == "get" {
				observed = mt.GetHistogram().GetSampleCount()
			}
		}
		return count, observed
	}
	n0, h0 := gets()
	if n0 != float64(h0) {
		t.Fatalf("after the open: %v GETs counted, %d timed", n0, h0)
	}
	resp, err := c.Get(base + "/" + sigs[0].Key())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the signature: %s", resp.Status)
	}
	n1, h1 := gets()
	if n1 != n0+1 || h1 != h0+1 {
		t.Fatalf("reading one signature: GETs counted %v → %v, timed %d → %d; want one more of each", n0, n1, h0, h1)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, stderr.String())
	}
}

// TestServeRefusesRemoteMetricsUnlessAllowed: the metrics address of serve
// follows the loopback rule of --http.
func TestServeRefusesRemoteMetricsUnlessAllowed(t *testing.T) {
	var stdout, stderr lockedBuffer
	code := run(context.Background(), []string{"serve", "mem://", "--metrics-addr", ":9310"}, strings.NewReader(""), &stdout, &stderr)
	want := "oxyfs serve: --metrics-addr :9310 is not a loopback address; metrics are served without authentication, so pass --allow-remote to serve it there (or listen on 127.0.0.1)\n" +
		"usage: oxyfs serve STORE [--http ADDR] [--webdav] [--refresh-interval D] [--metrics-addr ADDR] (see oxyfs serve --help)\n"
	if code != 2 || stderr.String() != want {
		t.Fatalf("serve --metrics-addr :9310: exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, stderr.String(), want)
	}
}

// TestMetricsRefusesANonLoopbackHost (issue 41, 5): the metrics port on
// loopback answers a request whose Host names another site (a page in a
// browser that rebound that name to 127.0.0.1) with 403, as serve's port
// does, and a loopback Host with the metrics.
func TestMetricsRefusesANonLoopbackHost(t *testing.T) {
	var logs lockedBuffer
	stop, err := serveMetrics("127.0.0.1:0", metrics.New(), log.New(&logs, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m := regexp.MustCompile(`metrics at (http://127\.0\.0\.1:\d+/metrics)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no address logged: %q", logs.String())
	}
	checkHosts(t, m[1], map[string]int{"rebound.example:80": http.StatusForbidden, "localhost": http.StatusOK, "127.0.0.1": http.StatusOK})
}

// checkHosts GETs url with each Host header and checks the status each
// gets (a DNS-rebinding page's request names a foreign Host).
func checkHosts(t *testing.T, url string, want map[string]int) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	for host, status := range want {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Errorf("GET %s with Host %s: %s, want %d", url, host, resp.Status, status)
		}
	}
}
