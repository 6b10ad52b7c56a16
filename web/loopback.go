package web

import (
	"net/http"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// LoopbackOnly wraps h with serve's Host rule (Options.LoopbackOnly,
// loopbackHost): a request whose Host header is not a loopback name or
// address gets 403. A server listening on loopback takes it so that a web
// page in a browser on this machine cannot read it through a name it
// rebinds to 127.0.0.1 (DNS rebinding): the metrics port (issue 41, 5).
func LoopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "oxyfs serves loopback requests only (Host "+termsafe.Escape(r.Host)+" is not a loopback name or address)", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
