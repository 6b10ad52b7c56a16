package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/oxyfs/oxyfs/testkit/testdeps"
)

// startServe runs `oxyfs serve` with args and returns its base URL
// (http:// or https://) once it says it serves, and its stderr.
func startServe(t *testing.T, args ...string) (string, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve"}, args...), strings.NewReader(""), &stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Errorf("serve did not stop:\n%s", stderr.String())
		}
	})
	ready := regexp.MustCompile(`oxyfs: serving \S+ at (https?://[^/\s]+)/`)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if m := ready.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], &stderr
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready line:\n%s", stderr.String())
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d:\n%s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// testCert writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their paths.
func testCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(41), Subject: pkix.Name{CommonName: "oxyfs test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// Users of testHtpasswd: bcrypt as htpasswd -B writes it ($2y$), and apr1
// (made with `openssl passwd -apr1 -salt x1 secret`, as web's vectors).
const (
	auditor, auditorPassword = "auditor", "correct horse battery staple"
	apr1Name, apr1Password   = "old", "secret"
	apr1Hash                 = "$apr1$x1$sw.x/uEdux/1M3X.rvF211"
)

func testHtpasswd(t *testing.T) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(auditorPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "htpasswd")
	data := auditor + ":$2y$" + strings.TrimPrefix(string(h), "$2a$") + "\n" + apr1Name + ":" + apr1Hash + "\n"
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// curl runs curl with args and returns what it printed (-w's status code
// last), failing the test if curl cannot run.
func curl(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("curl")
	if err != nil {
		testdeps.SkipOrFail(t, "curl", "curl not found: apt-get install curl to run the serve tests with curl")
	}
	out, err := exec.Command(path, append([]string{"-sS", "--max-time", "30"}, args...)...).Output()
	if err != nil {
		t.Fatalf("curl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestServeAsksCurlForAPasswordOverTLS: `oxyfs serve --htpasswd --cert
// --key` answers curl over HTTPS: 401 with WWW-Authenticate on pages,
// bytes, WebDAV and status without a user of the file (or with a wrong
// password), and the tree with one (bcrypt or apr1); it refuses TLS below
// 1.2; it logs the failed user, never the password.
func TestServeAsksCurlForAPasswordOverTLS(t *testing.T) {
	url, sigs := serveStore(t)
	cert, key := testCert(t)
	base, stderr := startServe(t, url, "--layout", "bucket", "--http", "127.0.0.1:0", "--htpasswd", testHtpasswd(t), "--cert", cert, "--key", key)
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("serving at %s, want https", base)
	}
	alice := sigs[0]
	paths := []struct{ method, path, want string }{
		{"GET", "/", "200"},
		{"GET", "/" + alice.Key(), "200"},
		{"GET", "/.oxy/status", "200"},
		{"PROPFIND", "/dav/sig/", "207"},
		{"PROPFIND", "/by-signer/alice/", "401"}, // WebDAV only under /dav/ here: 405 once in
	}
	for _, p := range paths {
		for _, cred := range [][]string{nil, {"-u", auditor + ":wrong"}, {"-u", apr1Name + ":" + auditorPassword}} {
			args := append([]string{"--cacert", cert, "-X", p.method, "-H", "Depth: 1", "-D", "-", "-o", "/dev/null", "-w", "%{http_code}"}, cred...)
			out := curl(t, append(args, base+p.path)...)
			if !strings.HasSuffix(out, "401") || !strings.Contains(strings.ToLower(out), `www-authenticate: basic realm="oxyfs"`) {
				t.Errorf("curl %s %s %v: %q, want 401 asking for Basic", p.method, p.path, cred, out)
			}
		}
		if p.want == "401" {
			continue
		}
		for _, user := range [][2]string{{auditor, auditorPassword}, {apr1Name, apr1Password}} {
			out := curl(t, "--cacert", cert, "-X", p.method, "-H", "Depth: 1", "-u", user[0]+":"+user[1], "-o", "/dev/null", "-w", "%{http_code}", base+p.path)
			if out != p.want {
				t.Errorf("curl %s %s as %s: %s, want %s", p.method, p.path, user[0], out, p.want)
			}
		}
	}
	if got := curl(t, "--cacert", cert, "-u", auditor+":"+auditorPassword, base+"/"+alice.Key()); got != "signature by alice" {
		t.Errorf("alice's bytes over HTTPS: %q", got)
	}
	// TLS 1.1 is refused.
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}}} //nolint:gosec // the test's client offers old versions on purpose
	if resp, err := c.Get(base + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("a TLS 1.1 client was answered: %s", resp.Status)
	}
	logged := stderr.String()
	if !strings.Contains(logged, `authentication failed for user "auditor"`) && !strings.Contains(logged, `authentication failed for user "old"`) {
		t.Errorf("no failed authentication logged:\n%s", logged)
	}
	if strings.Contains(logged, "wrong") || strings.Contains(logged, auditorPassword) {
		t.Errorf("the log shows a password:\n%s", logged)
	}
}

// TestServeRefusesARemoteAddressWithoutAPassword: serve on every interface
// is refused without --htpasswd (exit 2, saying what to pass), unless
// --allow-remote; with --htpasswd it serves, warning that without --cert
// passwords cross the network in clear, and answers a Host that is not
// loopback (DNS rebinding cannot send the password).
func TestServeRefusesARemoteAddressWithoutAPassword(t *testing.T) {
	url, _ := serveStore(t)
	_, errOut, code := runCLI(t, "serve", url, "--layout", "bucket", "--http", "0.0.0.0:0")
	if code != 2 || !strings.Contains(errOut, "--htpasswd FILE") || !strings.Contains(errOut, "--allow-remote") {
		t.Fatalf("serve on 0.0.0.0 without a password: exit %d, %s", code, errOut)
	}
	for _, bad := range [][]string{{"--cert", "x.pem"}, {"--key", "x.pem"}} {
		if _, errOut, code := runCLI(t, append([]string{"serve", url, "--layout", "bucket"}, bad...)...); code != 2 || !strings.Contains(errOut, "--cert and --key go together") {
			t.Errorf("serve %v: exit %d, %s", bad, code, errOut)
		}
	}
	base, stderr := startServe(t, url, "--layout", "bucket", "--http", "0.0.0.0:0", "--htpasswd", testHtpasswd(t))
	if !strings.Contains(stderr.String(), "cross the network in clear text") {
		t.Errorf("no warning of clear text:\n%s", stderr.String())
	}
	port := base[strings.LastIndexByte(base, ':'):]
	req, err := http.NewRequest("GET", "http://127.0.0.1"+port+"/.oxy/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "oxyfs.example.com" + port
	req.SetBasicAuth(auditor, auditorPassword)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET with Host %s and a password: %s, want 200", req.Host, resp.Status)
	}
}
