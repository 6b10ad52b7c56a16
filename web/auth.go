package web

import (
	"net/http"
	"sync"
	"time"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// Realm is the realm of serve's WWW-Authenticate.
const Realm = "oxyfs"

// authorized answers 401 with WWW-Authenticate (Basic, realm "oxyfs") to a
// request without a user and password the htpasswd file holds, and reports
// whether the request may go on. Every path asks: pages, bytes, WebDAV,
// /.oxy/status, OPTIONS. A wrong password is logged (user and client, never
// the password) at most once per authFailEvery, with the number of others
// since; a request without credentials (a browser's first) is not.
func (h *handler) authorized(w http.ResponseWriter, r *http.Request) bool {
	user, password, ok := r.BasicAuth()
	if ok && h.opts.Htpasswd.Check(user, password, h.opts.Logf) {
		return true
	}
	if ok {
		h.authFails.note(h.opts.Logf, user, r.RemoteAddr)
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="`+Realm+`", charset="UTF-8"`)
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "authentication required", http.StatusUnauthorized)
	return false
}

// authFailEvery is the least time between two log lines of failed
// authentication.
const authFailEvery = 10 * time.Second

// authFailLog logs failed authentication, rate-limited.
//
// Locks: mu guards last and since.
type authFailLog struct {
	mu    sync.Mutex
	last  time.Time // of the last line logged
	since int       // failures not logged since
}

func (l *authFailLog) note(logf func(string, ...any), user, client string) {
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < authFailEvery {
		l.since++
		l.mu.Unlock()
		return
	}
	more := l.since
	l.last, l.since = now, 0
	l.mu.Unlock()
	if more > 0 {
		logf("oxyfs: warning: authentication failed for user %q from %s (and %d more failure(s) in the last %s, not logged)", termsafe.Value(user), client, more, authFailEvery)
		return
	}
	logf("oxyfs: warning: authentication failed for user %q from %s", termsafe.Value(user), client)
}
