package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadOnlyMount: with --read-only every write is EROFS, files and
// directories show no write permission, reading works, and nothing is sent
// but the open and the GETs of what was read.
func TestReadOnlyMount(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	genFolded(t, srv, url, 200, 4)
	st := openStore(t, url)
	mnt := t.TempDir()
	startMount(t, srv, url, mnt, "--read-only")

	s := readStatus(t, mnt)
	if !s.ReadOnly {
		t.Errorf(".oxy/status read_only = false on a --read-only mount")
	}
	sig := sigFiles(t, mnt)[0]
	objDir := filepath.Dir(sig)
	seal := lines(run(t, "find", filepath.Join(mnt, "seal"), "-type", "f"))[0]
	bucketBefore := readBucket(t, st)
	before := s.Requests

	for _, p := range []string{sig, seal} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		if fi.Mode().Perm()&0o222 != 0 {
			t.Errorf("%s: mode %v on a read-only mount, want no write bits", rel(t, mnt, p), fi.Mode())
		}
	}
	for _, p := range []string{mnt, filepath.Join(mnt, "sig"), objDir} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		if fi.Mode().Perm()&0o222 != 0 {
			t.Errorf("directory %s: mode %v on a read-only mount, want no write bits", p, fi.Mode())
		}
	}
	if data, err := os.ReadFile(sig); err != nil || len(data) == 0 {
		t.Errorf("read a signature on a read-only mount: %d bytes, %v", len(data), err)
	}

	obj := newObject(t)
	for _, c := range []struct {
		what string
		op   func() error
	}{
		{"open a signature for writing", func() error {
			f, err := os.OpenFile(sig, os.O_WRONLY, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"open a signature with O_TRUNC", func() error {
			f, err := os.OpenFile(sig, os.O_WRONLY|os.O_TRUNC, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"create a signature in an object directory", func() error { return create(filepath.Join(objDir, "new-signer")) }},
		{"mkdir a new <hh>/<rest>", func() error { return syscall.Mkdir(filepath.Join(mnt, "sig", obj[:2]+"-x"), 0o755) }},
		{"mkdir a new object directory", func() error { return os.MkdirAll(filepath.Join(mnt, "sig", obj[:2], obj[2:]), 0o755) }},
		{"unlink a signature", func() error { return syscall.Unlink(sig) }},
		{"rename a signature", func() error { return syscall.Rename(sig, filepath.Join(objDir, "renamed")) }},
		{"touch a seal (utimes)", func() error { return syscall.UtimesNano(seal, make([]syscall.Timespec, 2)) }},
		{"chmod a signature", func() error { return syscall.Chmod(sig, 0o644) }},
		{"set an xattr", func() error { return syscall.Setxattr(sig, "user.test", []byte("x"), 0) }},
	} {
		if err := c.op(); errnoOf(err) != syscall.EROFS {
			t.Errorf("%s on a read-only mount: %v, want EROFS", c.what, err)
		}
	}
	for _, args := range [][]string{
		{"cp", sig, filepath.Join(objDir, "copied")},
		{"touch", filepath.Join(filepath.Dir(seal), "new-value")},
		{"mkdir", "-p", filepath.Join(mnt, "seal", obj[:2], obj[2:])},
	} {
		_, stderr, err := runErr(args[0], args[1:]...)
		if err == nil || !strings.Contains(stderr, "Read-only file system") {
			t.Errorf("%s: err %v, stderr %q; want a failure saying \"Read-only file system\"", strings.Join(args, " "), err, strings.TrimSpace(stderr))
		}
	}

	d := readStatus(t, mnt).Requests.Sub(before)
	t.Logf("refused writes on a read-only mount sent %s", d)
	if d.Put != 0 || d.Delete != 0 || d.List != 0 {
		t.Errorf("a read-only mount sent %s, want no PUT, DELETE or LIST", d)
	}
	if diff := bucketBefore.diff(readBucket(t, st)); diff != "" {
		t.Errorf("the bucket changed under a read-only mount:\n%s", diff)
	}
}

// TestMountFailsClearly: a mount that cannot happen exits 1 at once with a
// message naming the cause, and leaves nothing mounted.
func TestMountFailsClearly(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	genFolded(t, srv, url, 20, 2)

	missing := filepath.Join(t.TempDir(), "no-such-dir")
	busy := t.TempDir()
	startMount(t, srv, url, busy)
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	free := t.TempDir()
	noBucket := strings.Replace(url, "s3://", "s3://no-such-bucket-", 1)
	const secret = "wJalrXUtnFEMI-secret-in-url"

	for _, c := range []struct {
		what  string
		args  []string
		dir   string
		msg   []string // each must appear in stderr
		never string   // must not appear in stderr (a secret)
	}{
		{"a mountpoint that does not exist", []string{"mount", url, missing}, missing, []string{"oxyfs mount:", missing, "no such file or directory"}, ""},
		{"a mountpoint that is a file", []string{"mount", url, notDir}, notDir, []string{"oxyfs mount:", "not a directory"}, ""},
		{"a mountpoint already mounted", []string{"mount", url, busy}, busy, []string{"oxyfs mount:", busy, "already"}, ""},
		{"an unsupported store URL", []string{"mount", "bogus://bucket", free}, free, []string{"oxyfs mount:", "unsupported scheme"}, ""},
		{"a store URL that does not parse", []string{"mount", "s3://%zz", free}, free, []string{"oxyfs mount:", "open store"}, ""},
		// README: credentials "are never printed", not even when the URL
		// that carries them does not parse.
		{"a store URL with credentials that does not parse", []string{"mount", "s3://AKIAEXAMPLE:" + secret + "@bucket%zz", free}, free, []string{"oxyfs mount:", "open store"}, secret},
		{"a bucket that does not exist", []string{"mount", noBucket, free}, free, []string{"oxyfs mount:", "no-such-bucket-"}, ""},
	} {
		r := oxyfs(t, srv, c.args...)
		if r.code != 1 {
			t.Errorf("%s: exit %d, want 1\n%s", c.what, r.code, r)
			continue
		}
		for _, m := range c.msg {
			if !strings.Contains(r.stderr, m) {
				t.Errorf("%s: stderr does not say %q:\n%s", c.what, m, r.stderr)
			}
		}
		if c.never != "" && strings.Contains(r.stderr, c.never) {
			t.Errorf("%s: stderr prints the secret %q from the store URL:\n%s", c.what, c.never, r.stderr)
		}
		if strings.Contains(r.stderr, "oxyfs: mounted") || strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
			t.Errorf("%s: stderr:\n%s", c.what, r.stderr)
		}
		if len(lines(r.stderr)) > 3 {
			t.Errorf("%s: %d lines on stderr, want a short message:\n%s", c.what, len(lines(r.stderr)), r.stderr)
		}
		if c.dir != busy && isMounted(c.dir) {
			t.Errorf("%s: %s is mounted", c.what, c.dir)
			forceUnmount(c.dir)
		}
		t.Logf("%s: %s", c.what, strings.TrimSpace(r.stderr))
	}
	// The mount that was there still serves.
	if _, err := os.Stat(filepath.Join(busy, "sig")); err != nil {
		t.Errorf("the first mount after a second mount on it failed: %v", err)
	}
	// Usage errors exit 2.
	if r := oxyfs(t, srv, "mount", url); r.code != 2 {
		t.Errorf("mount with one argument: exit %d, want 2\n%s", r.code, r)
	}
}
