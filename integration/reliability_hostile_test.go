package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReliabilityHostileNamesAndInput: names and input that are not valid
// entries (DESIGN §3), tried through a mount (the errno a syscall gets) and
// through the CLI (exit 2, a usage error, before any request), leave the
// bucket unchanged: no PUT, DELETE or LIST counted by the mount, none by
// `oxyfs --stats`, and the same listing and records before and after.
// TestRefusedOperationsThroughMount covers rm, mv, ln, ln -s, mknod and more
// of the names refused through a mount; this test adds what it does not.
func TestReliabilityHostileNamesAndInput(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	genFolded(t, srv, url, 50, 2)
	st := openStore(t, url)
	mnt := t.TempDir()
	startMount(t, srv, url, mnt)

	sig := sigFiles(t, mnt)[0]
	obj := "ab" + newObject(t)[2:] // letters in <hh>, so upper case differs
	hh, rest := obj[:2], obj[2:]
	objDir := filepath.Join(mnt, "sig", hh, rest)
	seal := filepath.Join(mnt, "seal", hh, rest, "v")
	run(t, "mkdir", "-p", objDir, filepath.Dir(seal))
	run(t, "touch", seal)
	big := make([]byte, 64<<20+1) // one byte past the 64 MiB a signature may hold
	bigFile := relTempFile(t, "big.sig", big)
	small := relTempFile(t, "small.sig", []byte("a signature"))
	empty := relTempFile(t, "empty.sig", nil)

	bucketBefore := readBucket(t, st)
	before := readStatus(t, mnt).Requests

	// Through the mount. The kernel answers some names itself, before
	// oxyfs sees them: those errnos are the kernel's.
	type mountCase struct {
		what string
		want syscall.Errno
		op   func() error
	}
	in := func(name string) string { return filepath.Join(objDir, name) }
	mountCases := []mountCase{
		{"create \".\" (kernel)", syscall.EISDIR, func() error { return create(in(".")) }},
		{"create \"..\" (kernel)", syscall.EISDIR, func() error { return create(in("..")) }},
		{"create \"a/b\": a name with / is a path (kernel)", syscall.ENOENT, func() error { return create(in("a/b")) }},
		{"create a name with NUL (refused before the syscall)", syscall.EINVAL, func() error { return create(in("a\x00b")) }},
		{"create a name that is not UTF-8", syscall.EINVAL, func() error { return create(in("sig\xff\xfe")) }},
		{"create a name with a tab and a newline", syscall.EINVAL, func() error { return create(in("a\tb\nc")) }},
		{"create a 255-byte name of 2-byte characters (510 bytes)", syscall.EINVAL, func() error { return create(in(strings.Repeat("é", 255))) }},
		{"mkdir an object id of 130 hex", syscall.EINVAL, func() error {
			return syscall.Mkdir(filepath.Join(mnt, "sig", hh, strings.Repeat("a", 128)), 0o755)
		}},
		{"mkdir a one-character <hh>", syscall.EINVAL, func() error { return syscall.Mkdir(filepath.Join(mnt, "sig", "a"), 0o755) }},
		{"mkdir a kind that does not exist", syscall.EPERM, func() error { return syscall.Mkdir(filepath.Join(mnt, "sigs"), 0o755) }},
		{"create a file at the root", syscall.EPERM, func() error { return create(filepath.Join(mnt, "pack-entries")) }},
		{"create under by-signer/", syscall.EPERM, func() error { return create(filepath.Join(mnt, "by-signer", "mallory")) }},
		{"symlink under by-signer/", syscall.EPERM, func() error {
			return syscall.Symlink("../../sig/"+hh+"/"+rest+"/x", filepath.Join(mnt, "by-signer", "mallory"))
		}},
		{"create under .oxy/", syscall.EROFS, func() error { return create(filepath.Join(mnt, ".oxy", "journal2")) }},
		{"write .oxy/journal", syscall.EROFS, func() error { return os.WriteFile(filepath.Join(mnt, ".oxy", "journal"), []byte("0 x\n"), 0o644) }},
		{"set user.oxy.key", syscall.EPERM, func() error { return syscall.Setxattr(sig, "user.oxy.key", []byte("sig/00/00/x"), 0) }},
		{"hard link into by-signer/", syscall.EPERM, func() error { return syscall.Link(sig, filepath.Join(mnt, "by-signer", "x")) }},
		{"write a 64 MiB + 1 byte signature", syscall.EFBIG, func() error { return relWrite(in("big-signer"), big) }},
		{"write an empty signature", syscall.EINVAL, func() error { return relWrite(in("empty-signer"), nil) }},
		{"truncate a seal to 1 byte", syscall.EINVAL, func() error {
			f, err := os.OpenFile(seal, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(1)
		}},
	}
	for _, c := range mountCases {
		if got := errnoOf(c.op()); got != c.want {
			t.Errorf("mount: %s: errno %v (%d), want %v", c.what, got, got, c.want)
		}
	}
	mountReq := readStatus(t, mnt).Requests.Sub(before)

	// Through the CLI: every one a usage error (exit 2) before any request.
	type cliCase struct {
		what  string
		args  []string
		stdin string
	}
	key := "sig/" + hh + "/" + rest + "/"
	batch := func(lines string) string { return relTempFile(t, "batch", []byte(lines)) }
	cliCases := []cliCase{
		{"path ending in ..", []string{"put", url, key + "..", small}, ""},
		{"path ending in .", []string{"put", url, key + ".", small}, ""},
		{"path escaping the tree", []string{"put", url, "../../../../etc/passwd", small}, ""},
		{"value with a /", []string{"put", url, key + "a/b", small}, ""},
		{"value with a newline", []string{"put", url, key + "a\nb", small}, ""},
		{"value with a carriage return", []string{"put", url, key + "a\rb", small}, ""},
		{"value that is not UTF-8", []string{"put", url, key + "\xff\xfe", small}, ""},
		{"value of 256 bytes", []string{"put", url, key + strings.Repeat("v", 256), small}, ""},
		{"value with NUL (in a batch line)", []string{"put", url, "--batch", batch(key + "a\x00b\t" + small + "\n")}, ""},
		{"upper-case hex object", []string{"put", url, "sig/" + strings.ToUpper(hh) + "/" + rest + "/alice", small}, ""},
		{"odd-length hex object", []string{"put", url, "sig/" + hh + "/" + rest[:5] + "/alice", small}, ""},
		{"object that is not hex", []string{"put", url, "sig/zz/" + rest + "/alice", small}, ""},
		{"object of 130 hex", []string{"put", url, "sig/aa/" + strings.Repeat("a", 128) + "/alice", small}, ""},
		{"a kind that does not exist (the older sigs/)", []string{"put", url, "sigs/" + hh + "/" + rest + "/alice", small}, ""},
		{"the journal's own key", []string{"put", url, "pack-entries", small}, ""},
		{"an entry list's key", []string{"put", url, "pack-" + strings.Repeat("ab", 32) + ".entries", small}, ""},
		{"a by-signer/ link", []string{"put", url, "by-signer/alice/" + obj, small}, ""},
		{"a .oxy/ file", []string{"put", url, ".oxy/journal", small}, ""},
		{"a signature of 64 MiB + 1 byte", []string{"put", url, key + "big", bigFile}, ""},
		{"a signature from an endless stream", []string{"put", url, key + "zero", "/dev/zero"}, ""},
		{"an empty signature", []string{"put", url, key + "empty", empty}, ""},
		{"a signature without bytes", []string{"put", url, key + "nobytes"}, ""},
		{"a seal with bytes", []string{"put", url, "seal/" + hh + "/" + rest + "/v", small}, ""},
		{"a batch with one bad line among good ones", []string{"put", url, "--batch", batch(key + "good\t" + small + "\n" + key + "BAD/x\t" + small + "\n")}, ""},
		{"an unknown flag", []string{"put", "--no-such-flag", url, key + "alice", small}, ""},
	}
	var cliReq int64
	for _, c := range cliCases {
		r := oxyfs(t, srv, append(append([]string{}, c.args...), "--stats")...)
		if r.code != 2 {
			t.Errorf("oxyfs %s: exit %d, want 2 (usage)\n%s", c.what, r.code, r)
		}
		if r.hasStats {
			cliReq += r.requests.Total()
		}
		if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
			t.Errorf("oxyfs %s crashed:\n%s", c.what, r)
		}
	}
	// Reading a path outside the tree reads nothing outside the store.
	if r := oxyfs(t, srv, "cat", url, "../../../../etc/passwd"); r.code != 1 || r.stdout != "" {
		t.Errorf("oxyfs cat ../../../../etc/passwd: exit %d, %d bytes; want exit 1 and nothing", r.code, len(r.stdout))
	}

	if mountReq.Put != 0 || mountReq.Delete != 0 || mountReq.List != 0 {
		t.Errorf("the refused names through the mount sent %s, want no PUT, DELETE or LIST", mountReq)
	}
	if cliReq != 0 {
		t.Errorf("the refused commands sent %d requests, want none", cliReq)
	}
	if diff := bucketBefore.diff(readBucket(t, st)); diff != "" {
		t.Errorf("the bucket changed:\n%s", diff)
	}
	relFigure(t, "%d hostile inputs through the mount (plus those of TestRefusedOperationsThroughMount) and %d through the CLI refused; mount sent %s; CLI sent %d requests; bucket unchanged",
		len(mountCases), len(cliCases), mountReq, cliReq)
}
