package web

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Users of the test password file: one bcrypt ($2y$, as htpasswd -B
// writes it), one apr1 (an OpenSSL vector of apr1_test.go).
const (
	bcryptUser, bcryptPassword = "auditor", "correct horse battery staple"
	apr1User, apr1Password     = "old", "secret"
)

// writeHtpasswd writes the test password file and returns its path.
func writeHtpasswd(t *testing.T) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(bcryptPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	y := "$2y$" + strings.TrimPrefix(string(h), "$2a$")
	p := filepath.Join(t.TempDir(), "htpasswd")
	data := "# users\n" + bcryptUser + ":" + y + "\n\n" + apr1User + ":" + apr1Vectors[3].hash + "\n"
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// logLines collects what the handler logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func basic(user, password string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password)), "Depth": "1"}
}

// TestEveryPathAsksForAPassword: with a password file, pages, bytes,
// WebDAV, status, signers and OPTIONS answer 401 with WWW-Authenticate
// without a user of the file, and as before with one (bcrypt or apr1).
// A wrong password is logged without the password, once per interval.
func TestEveryPathAsksForAPassword(t *testing.T) {
	htp, err := LoadHtpasswd(writeHtpasswd(t))
	if err != nil {
		t.Fatal(err)
	}
	var log logLines
	f := newFixture(t, Options{Htpasswd: htp, Logf: log.logf})
	requests := []struct {
		method, path string
		ok           int
	}{
		{"GET", "/", 200},
		{"GET", keyURL(alice), 200},
		{"HEAD", keyURL(alice), 200},
		{"GET", keyURL(alice) + "?view=page", 200},
		{"PROPFIND", "/dav/sig/", 207},
		{"GET", "/dav/sig/", 200},
		{"GET", StatusPath, 200},
		{"GET", SignersPath, 200},
		{"OPTIONS", "/dav/", 200},
		{"PUT", "/dav/x", 405},
	}
	for _, r := range requests {
		for _, cred := range []map[string]string{{"Depth": "1"}, basic(bcryptUser, "wrong"), basic(apr1User, "wrong"), basic("nobody", bcryptPassword), basic(bcryptUser, apr1Password)} {
			resp, body := f.do(t, noRedirect, r.method, r.path, cred, "")
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="oxyfs", charset="UTF-8"` {
				t.Errorf("%s %s with %v: %s, WWW-Authenticate %q, want 401 asking for Basic\n%s", r.method, r.path, cred, resp.Status, resp.Header.Get("WWW-Authenticate"), body)
			}
			if strings.Contains(string(body), "signature of") {
				t.Errorf("%s %s with %v: the 401 holds a signature", r.method, r.path, cred)
			}
		}
		for _, cred := range []map[string]string{basic(bcryptUser, bcryptPassword), basic(apr1User, apr1Password)} {
			if resp, body := f.do(t, noRedirect, r.method, r.path, cred, ""); resp.StatusCode != r.ok {
				t.Errorf("%s %s as %s: %s, want %d\n%s", r.method, r.path, cred["Authorization"], resp.Status, r.ok, body)
			}
		}
	}
	logged := log.all()
	for _, pw := range []string{"wrong", bcryptPassword, apr1Password} {
		if strings.Contains(logged, pw) {
			t.Errorf("the log shows a password %q:\n%s", pw, logged)
		}
	}
	// 40 failures within the interval: one line, naming a user.
	if n := strings.Count(logged, "authentication failed"); n != 1 || !strings.Contains(logged, `user "`) {
		t.Errorf("%d lines of failed authentication, want 1 (rate-limited):\n%s", n, logged)
	}
}

// TestHtpasswdIsReadAgainWhenItChanges: a user added to the file can log in
// (within the second the file is stated at most), and a file that no
// longer parses keeps the users read before, with a warning.
func TestHtpasswdIsReadAgainWhenItChanges(t *testing.T) {
	p := writeHtpasswd(t)
	htp, err := LoadHtpasswd(p)
	if err != nil {
		t.Fatal(err)
	}
	var log logLines
	if htp.Check("new", "secret", log.logf) {
		t.Fatal("a user the file does not name logged in")
	}
	data, _ := os.ReadFile(p)
	if err := os.WriteFile(p, append(data, "new:"+apr1Vectors[3].hash+"\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	var in bool
	for deadline := time.Now().Add(time.Minute); !in && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		in = htp.Check("new", "secret", log.logf)
	}
	if !in {
		t.Fatalf("a user added to the file never logged in:\n%s", log.all())
	}
	if err := os.WriteFile(p, []byte("new:plaintext\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(log.all(), "still checking the users read before") && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		htp.Check("new", "secret", log.logf)
	}
	if !strings.Contains(log.all(), "still checking the users read before") || !htp.Check(bcryptUser, bcryptPassword, log.logf) {
		t.Fatalf("a file that no longer parses: no warning, or the users before were dropped:\n%s", log.all())
	}
	if strings.Contains(log.all(), "plaintext") {
		t.Errorf("the warning shows the hash:\n%s", log.all())
	}
}

func TestLoadHtpasswdRefusesWhatItCannotCheck(t *testing.T) {
	for _, data := range []string{"alice:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=\n", "alice:plain\n", "alice\n", "# only a comment\n", "alice:$apr1$x1$sw.x/uEdux/1M3X.rvF211\nalice:$apr1$x1$sw.x/uEdux/1M3X.rvF211\n"} {
		p := filepath.Join(t.TempDir(), "htpasswd")
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadHtpasswd(p); err == nil {
			t.Errorf("LoadHtpasswd of %q: no error", data)
		} else if strings.Contains(err.Error(), "qUqP5") || strings.Contains(err.Error(), "plain") {
			t.Errorf("LoadHtpasswd of %q: the error %q shows the hash", data, err)
		}
	}
}
