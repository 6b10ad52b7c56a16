package main

import (
	"net"
	"net/http"
	"strconv"
	"testing"
)

// TestServeOnLoopbackChecksHostWithAllowRemote (F8): serve on a loopback
// --http with --allow-remote given for --metrics-addr 0.0.0.0:Q refuses a
// request whose Host names another site on its loopback port (the one flag
// both opened the metrics and dropped serve's DNS-rebinding check: Host
// evil.example was served /.oxy/status).
func TestServeOnLoopbackChecksHostWithAllowRemote(t *testing.T) {
	url, _ := serveStore(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	base, _ := startServe(t, url, "--layout", "bucket", "--http", "127.0.0.1:0",
		"--metrics-addr", "0.0.0.0:"+strconv.Itoa(port), "--allow-remote")
	checkHosts(t, base+"/.oxy/status", map[string]int{"evil.example": http.StatusForbidden, "127.0.0.1": http.StatusOK})
}
