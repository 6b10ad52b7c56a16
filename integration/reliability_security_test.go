package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// TestReliabilitySecurityDefaults: a mount lets no other user in unless
// asked (no allow_other in the kernel's mount options without
// --allow-other or -o allow_other), and the S3 secret key never appears in
// anything oxyfs prints or serves: a mount's log with --debug, .oxy/ files,
// the metrics page, the mount table, and the output of every command,
// including failures (a wrong secret, a bucket that does not exist, a URL
// carrying credentials, a server that is down is TestReliabilityServerKilled's).
// TestReadOnlyMount covers --read-only (EROFS for every write, no write
// bits); -o ro is checked here to mean the same.
func TestReliabilitySecurityDefaults(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	genFolded(t, srv, url, 50, 2)
	secret := srv.Env["AWS_SECRET_ACCESS_KEY"]
	if len(secret) < 8 {
		t.Fatalf("the server's secret %q is too short to grep for", secret)
	}

	// allow_other only when asked.
	for _, c := range []struct {
		flags []string
		want  bool
	}{
		{nil, false},
		{[]string{"--allow-other"}, true},
		{[]string{"-o", "allow_other"}, true},
	} {
		mnt := t.TempDir()
		m := startMount(t, srv, url, mnt, c.flags...)
		opts := mountOptions(t, mnt)
		if got := strings.Contains(opts, "allow_other"); got != c.want {
			t.Errorf("mount %v: kernel options %q: allow_other %v, want %v", c.flags, opts, got, c.want)
		}
		m.stop()
	}
	// -o ro is --read-only.
	ro := t.TempDir()
	startMount(t, srv, url, ro, "-o", "ro")
	if opts := mountOptions(t, ro); !strings.HasPrefix(opts, "ro,") && !strings.Contains(opts, ",ro,") && opts != "ro" {
		t.Errorf("mount -o ro: kernel options %q, want ro", opts)
	}
	if err := create(sigFiles(t, ro)[0] + "-copy"); errnoOf(err) != syscall.EROFS {
		t.Errorf("create on a -o ro mount: %v, want EROFS", err)
	}

	// A mount with --debug and metrics, put through its paces.
	mnt := t.TempDir()
	m := startMount(t, srv, url, mnt, "--debug", "--metrics-addr", "127.0.0.1:0")
	var seen strings.Builder
	sig := sigFiles(t, mnt)[0]
	for _, p := range []string{sig, filepath.Join(mnt, ".oxy", "status"), filepath.Join(mnt, ".oxy", "journal")} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		seen.Write(data)
	}
	obj := newObject(t)
	run(t, "mkdir", "-p", filepath.Join(mnt, "sig", obj[:2], obj[2:]))
	run(t, "cp", sig, filepath.Join(mnt, "sig", obj[:2], obj[2:], "copied"))
	_ = create(filepath.Join(mnt, "sig", obj[:2], obj[2:], "bad\nname"))
	for _, name := range []string{"user.oxy.key", "user.oxy.source"} {
		seen.WriteString(getxattr(t, sig, name))
	}
	seen.WriteString(metricsPage(t, m))
	m.refresh()
	if data, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		seen.Write(data)
	}

	// The CLI, succeeding and failing.
	commands, failed := 0, 0
	for _, args := range [][]string{
		{"ls", "-R", "-l", "--stats", url},
		{"status", "--json", url},
		{"cat", url, rel(t, mnt, sig)},
		{"put", "--stats", url, "seal/" + obj[:2] + "/" + obj[2:] + "/v"},
		{"fold", "--stats", url},
		{"check", "--json", url},
		{"gc", "--dry-run", url},
		{"ls", strings.Replace(url, "s3://", "s3://no-such-bucket-", 1)},
		{"ls", strings.Replace(url, "s3://", "s3://AKIDINURL:"+secret+"@", 1)},
	} {
		r := oxyfs(t, srv, args...)
		seen.WriteString(r.stdout + r.stderr)
		commands++
		if r.code != 0 {
			failed++
			t.Logf("oxyfs %s: exit %d: %s", args[0], r.code, relFirstLine(r.stderr))
		}
	}
	// A wrong secret: the server refuses, and says so without echoing it.
	wrong := "wrong-" + secret
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	r := runWithEnv(ctx, srv, []string{"AWS_SECRET_ACCESS_KEY=" + wrong}, "ls", url)
	seen.WriteString(r)
	if !strings.Contains(r, "oxyfs ls:") {
		t.Errorf("oxyfs ls with a wrong secret did not fail clearly:\n%s", r)
	}
	t.Logf("oxyfs ls with a wrong secret: %s", relFirstLine(r))
	m.stop()
	seen.WriteString(m.stderr.String() + m.stdout.String())
	if !strings.Contains(m.stderr.String(), "LOOKUP") && !strings.Contains(m.stderr.String(), "rx ") {
		t.Errorf("--debug logged no FUSE request; the grep proves little:\n%s", clip(m.stderr.String(), 2000))
	}

	out := seen.String()
	for _, s := range []string{secret, wrong} {
		if i := strings.Index(out, s); i >= 0 {
			t.Errorf("a secret key appears in oxyfs's output: …%s…", out[max(0, i-200):min(len(out), i+len(s)+50)])
		}
	}
	relFigure(t, "secret key grepped in %d bytes of logs (--debug), .oxy/ files, xattrs, metrics, mountinfo and CLI output (%d commands, %d failing, and one with a wrong secret): 0 matches; allow_other off by default", len(out), commands, failed)
}

// mountOptions returns the options /proc/self/mountinfo shows for dir
// (the per-mount options, then the super options).
func mountOptions(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(data)) {
		f := strings.Fields(l)
		if len(f) > 5 && unescapeOctal(f[4]) == dir {
			opts := f[5]
			for i, x := range f {
				if x == "-" && i+3 < len(f) {
					opts += "," + f[i+3]
				}
			}
			return opts
		}
	}
	t.Fatalf("%s is not in /proc/self/mountinfo", dir)
	return ""
}

// runWithEnv runs the oxyfs binary with the server's environment and extra
// (which overrides it), returning stdout and stderr together.
func runWithEnv(ctx context.Context, srv *testservers.Server, extra []string, args ...string) string {
	cmd := exec.CommandContext(ctx, oxyfsBin, args...)
	cmd.Env = append(childEnv(srv), extra...)
	out, _ := cmd.CombinedOutput()
	return string(out)
}
