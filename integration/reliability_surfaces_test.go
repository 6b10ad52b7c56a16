package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// Every output surface of oxyfs: what a user, a log collector, another
// local user (the mount table) or a web client sees. The two tests below
// put a secret and a hostile name through each of them.

// TestReliabilityEndpointSecretNeverShown plants a user and password in the
// store URL's endpoint= (plain and percent-encoded, and at a server that is
// down, so the SDK's own errors quote it) and greps every surface for
// them: the CLI's output of succeeding and failing commands, a mount's log,
// its .oxy/status, the mount table (/proc/mounts, mountinfo, df), the
// metrics page, serve's pages and /.oxy/status, and a failing mount.
func TestReliabilityEndpointSecretNeverShown(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	genFolded(t, srv, url, 30, 2)
	const user, secret = "planted-user", "PLANTED-SECRET"
	endpoint := "endpoint=" + srv.URL
	if !strings.Contains(url, endpoint) {
		t.Fatalf("bucket URL %q has no %q", url, endpoint)
	}
	withSecret := strings.Replace(srv.URL, "http://", "http://"+user+":"+secret+"@", 1)
	planted := strings.Replace(url, endpoint, "endpoint="+withSecret, 1)
	encoded := strings.Replace(url, endpoint, "endpoint="+neturl.QueryEscape(withSecret), 1)
	down := strings.Replace(planted, srv.URL[len("http://"):], "127.0.0.1:"+closedPort(t), 1)
	var seen strings.Builder

	// A mount, its .oxy/status, the mount table, df and the metrics page.
	mnt := t.TempDir()
	m := startMount(t, srv, planted, mnt, "--metrics-addr", "127.0.0.1:0")
	for _, p := range []string{filepath.Join(mnt, ".oxy", "status"), "/proc/mounts", "/proc/self/mountinfo"} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		seen.Write(data)
	}
	wantSource := "oxyfs:" + strings.Replace(url, endpoint, "endpoint=http://REDACTED@"+srv.URL[len("http://"):], 1)
	if got := mountSource(t, mnt); got != wantSource {
		t.Errorf("the mount's source in mountinfo is %q, want %q", got, wantSource)
	}
	seen.WriteString(run(t, "df", mnt))
	seen.WriteString(metricsPage(t, m))
	m.refresh()

	// serve: its log, pages and status.
	s := startServe(t, srv, planted)
	for _, p := range []string{"/", "/sig/", "/.oxy/", "/.oxy/status", "/?format=json", "/no-such-dir/"} {
		seen.WriteString(httpGet(t, "http://"+s.addr+p))
	}

	// The CLI, succeeding and failing.
	sig := sigFiles(t, mnt)[0]
	failed := 0
	for _, args := range [][]string{
		{"status", planted},
		{"status", "--json", encoded},
		{"ls", "-R", "-l", planted},
		{"ls", "--json", encoded, "sig"},
		{"cat", planted, rel(t, mnt, sig)},
		{"check", planted},
		{"fold", "--stats", encoded},
		{"gc", "--dry-run", planted},
		{"status", "--timeout", "2s", down},
		{"ls", "--timeout", "2s", down},
		{"cat", "--timeout", "2s", down, rel(t, mnt, sig)},
		{"check", "--timeout", "2s", down},
		{"fold", "--timeout", "2s", down},
		{"ls", strings.Replace(down, "endpoint=", "endpoint=%zz", 1)},
		{"mount", "--timeout", "2s", down, t.TempDir()},
	} {
		r := oxyfs(t, srv, args...)
		seen.WriteString(r.stdout + r.stderr)
		if r.code != 0 {
			failed++
			if !strings.Contains(r.stderr, "REDACTED") && args[0] != "ls" {
				t.Errorf("oxyfs %s failed without naming the store (redacted):\n%s", args[0], r)
			}
		}
	}
	if failed != 7 {
		t.Errorf("%d commands failed, want the 7 given a store that is down or unparseable", failed)
	}
	m.stop()
	s.stop()
	seen.WriteString(m.stderr.String() + m.stdout.String() + s.log.String())

	out := seen.String()
	for _, x := range []string{secret, user} {
		if i := strings.Index(out, x); i >= 0 {
			t.Errorf("%q appears in oxyfs's output: …%s…", x, out[max(0, i-200):min(len(out), i+len(x)+50)])
		}
	}
	relFigure(t, "endpoint user and password grepped in %d bytes of CLI output (15 commands, %d failing), mount log, .oxy/status, /proc/mounts, mountinfo, df, metrics, serve's pages and log: 0 matches", len(out), failed)
}

// TestReliabilityHostileNamesShownEscaped puts a signer name holding ESC,
// BEL, DEL and U+009B (8-bit CSI), all allowed by the spec, and a journal
// key that is not UTF-8 (malformed: skipped with a warning) through every
// surface: none of those bytes reaches a terminal or a log raw, ls quotes
// the name so a shell reads it back, and the mount still holds the exact
// bytes.
func TestReliabilityHostileNamesShownEscaped(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	genFolded(t, srv, url, 10, 2)
	const name = "evil\x1b]0;pwned\x07\x7f\u009bname"
	obj := newObject(t)
	sigPath := "sig/" + obj[:2] + "/" + obj[2:] + "/" + name
	mustOxyfs(t, srv, "put", url, sigPath, relTempFile(t, "sig", []byte("signature bytes")))
	// A journal line whose key is not UTF-8.
	st := openStore(t, url)
	ctx := context.Background()
	j, err := st.Bucket().ReadAll(ctx, format.JournalKey)
	if err != nil {
		t.Fatal(err)
	}
	j = append(j, "0 seal/"+obj[:2]+"/"+obj[2:]+"/bad\xffvalue\x1b[2J\n"...)
	if err := st.Bucket().WriteAll(ctx, format.JournalKey, j, nil); err != nil {
		t.Fatal(err)
	}
	var seen bytes.Buffer

	r := mustOxyfs(t, srv, "ls", url, "sig/"+obj[:2]+"/"+obj[2:])
	if want := `$'evil\x1b]0;pwned\x07\x7f\xc2\x9bname'` + "\n"; r.stdout != want {
		t.Errorf("ls printed %q, want %q", r.stdout, want)
	}
	back, err := exec.Command("bash", "-c", "printf %s "+strings.TrimSpace(r.stdout)).Output()
	if err != nil || string(back) != name {
		t.Errorf("bash reads ls's %s back as %q (%v), want %q", strings.TrimSpace(r.stdout), back, err, name)
	}
	if !strings.Contains(r.stderr, `bad\xffvalue\x1b[2J`) {
		t.Errorf("ls did not warn of the malformed key, escaped:\n%s", r.stderr)
	}
	seen.WriteString(r.stdout + r.stderr)
	for _, args := range [][]string{
		{"ls", "-R", "-l", url},
		{"ls", "--json", "-R", url},
		{"status", url},
		{"status", "--json", url},
		{"check", url},
		{"check", "--json", url},
		{"fold", "--dry-run", url},
		{"gc", "--dry-run", url},
		{"cat", url, "sig/" + obj[:2] + "/" + obj[2:] + "/no\x1b]0;such\x07"},
		{"put", url, "sig/" + obj[:2] + "/" + obj[2:] + "/bad\xff\x1b"},
	} {
		r := oxyfs(t, srv, args...)
		seen.WriteString(r.stdout + r.stderr)
	}

	// The mount: the exact name on it, its log (--debug logs every name).
	mnt := t.TempDir()
	m := startMount(t, srv, url, mnt, "--debug")
	des, err := os.ReadDir(filepath.Join(mnt, "sig", obj[:2], obj[2:]))
	if err != nil || len(des) != 1 || des[0].Name() != name {
		t.Errorf("the mount lists %v (%v), want the one name %q, raw", des, err, name)
	}
	if data, err := os.ReadFile(filepath.Join(mnt, sigPath)); err != nil || string(data) != "signature bytes" {
		t.Errorf("read %q through the mount: %q, %v", name, data, err)
	}
	m.stop()
	seen.WriteString(m.stderr.String())

	// serve: the object's page (HTML and JSON) and its log.
	s := startServe(t, srv, url)
	page := httpGet(t, "http://"+s.addr+"/sig/"+obj[:2]+"/"+obj[2:]+"/")
	if !strings.Contains(page, `evil\x1b]0;pwned\x07\x7f\u009bname`) {
		t.Errorf("serve's page does not show the name escaped:\n%s", page)
	}
	seen.WriteString(page)
	js := httpGet(t, "http://"+s.addr+"/sig/"+obj[:2]+"/"+obj[2:]+"/?format=json")
	if !strings.Contains(js, `evil\u001b]0;pwned\u0007\u007f\u009bname`) {
		t.Errorf("serve's JSON page does not escape the name:\n%s", js)
	}
	seen.WriteString(js)
	s.stop()
	seen.WriteString(s.log.String())

	out := seen.String()
	for _, c := range []string{"\x1b", "\x07", "\x7f", "\u009b", "\xff"} {
		if i := strings.Index(out, c); i >= 0 {
			t.Errorf("%q reaches the output raw: …%q…", c, out[max(0, i-120):min(len(out), i+40)])
		}
	}
	if !utf8.ValidString(out) {
		t.Errorf("the output holds invalid UTF-8")
	}
	relFigure(t, "a signer name with ESC, BEL, DEL, U+009B and a journal key not UTF-8, through 11 CLI commands, a --debug mount's log and serve's pages and log (%d bytes): no control byte raw; ls quotes it $'…' and bash reads it back", len(out))
}

// serveProc is `oxyfs serve STORE --http 127.0.0.1:0` as a child process.
type serveProc struct {
	t      *testing.T
	addr   string
	cmd    *exec.Cmd
	log    *lineLog
	exited chan struct{}
}

var servingRE = regexp.MustCompile(`serving .* at http://(\S+)/`)

// startServe starts `oxyfs serve` and waits for the address it serves at;
// stop (also at cleanup) interrupts it and waits for it to exit.
func startServe(t *testing.T, srv *testservers.Server, storeURL string, flags ...string) *serveProc {
	t.Helper()
	s := &serveProc{t: t, log: newLineLog(), exited: make(chan struct{})}
	s.cmd = exec.Command(oxyfsBin, append([]string{"serve", storeURL, "--http", "127.0.0.1:0"}, flags...)...)
	s.cmd.Env = childEnv(srv)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start oxyfs serve: %v", err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(s.stop)
	deadline := time.NewTimer(mountReady)
	defer deadline.Stop()
	for {
		n, changed := s.log.count("oxyfs: serving ")
		if n > 0 {
			break
		}
		select {
		case <-changed:
		case <-s.exited:
			t.Fatalf("oxyfs serve exited:\n%s", s.log)
		case <-deadline.C:
			t.Fatalf("oxyfs serve did not start within %v:\n%s", mountReady, s.log)
		}
	}
	m := servingRE.FindStringSubmatch(s.log.first("oxyfs: serving "))
	if m == nil {
		t.Fatalf("no address in %q", s.log.first("oxyfs: serving "))
	}
	s.addr = m[1]
	return s
}

func (s *serveProc) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(unmountTimeout):
		s.cmd.Process.Kill()
		s.t.Errorf("oxyfs serve did not stop on SIGINT within %v", unmountTimeout)
	}
}

// httpGet returns a page's status line, headers and body.
func httpGet(t *testing.T, u string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	b.WriteString(resp.Status + "\n")
	resp.Header.Write(&b)
	io.Copy(&b, resp.Body)
	return b.String()
}

// mountSource is the source field of dir's line in /proc/self/mountinfo
// (what /proc/mounts and df show every local user).
func mountSource(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(data)) {
		f := strings.Fields(l)
		if len(f) > 5 && unescapeOctal(f[4]) == dir {
			for i, x := range f {
				if x == "-" && i+2 < len(f) {
					return unescapeOctal(f[i+2])
				}
			}
		}
	}
	t.Fatalf("%s is not in /proc/self/mountinfo", dir)
	return ""
}

// closedPort returns a loopback port nothing listens on (just closed).
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if err := ln.Close(); err != nil && !errors.Is(err, syscall.EINVAL) {
		t.Fatal(err)
	}
	return port
}
