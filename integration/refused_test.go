package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRefusedOperationsThroughMount: the namespace only grows by adding
// entries (DESIGN §4). rm, rmdir, mv, ln and ln -s are EPERM; bytes written
// into an index entry and names that are not valid keys are EINVAL; and
// none of them sends a request that changes the bucket.
func TestRefusedOperationsThroughMount(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	genFolded(t, srv, url, 200, 4)
	st := openStore(t, url)
	mnt := t.TempDir()
	startMount(t, srv, url, mnt)

	sig := sigFiles(t, mnt)[0]
	objDir := filepath.Dir(sig)
	seals := lines(run(t, "find", filepath.Join(mnt, "seal"), "-type", "f"))
	if len(seals) == 0 {
		t.Fatal("no seal entries")
	}
	seal := seals[0]
	// A new, valid object directory (mkdir only makes it in memory).
	obj := newObject(t)
	newDir := filepath.Join(mnt, "sig", obj[:2], obj[2:])
	run(t, "mkdir", "-p", newDir)

	bucketBefore := readBucket(t, st)
	before := readStatus(t, mnt).Requests

	syscalls := []struct {
		what string
		want syscall.Errno
		op   func() error
	}{
		{"unlink a signature", syscall.EPERM, func() error { return syscall.Unlink(sig) }},
		{"unlink a seal", syscall.EPERM, func() error { return syscall.Unlink(seal) }},
		{"rmdir an object directory", syscall.EPERM, func() error { return syscall.Rmdir(objDir) }},
		{"rmdir a new (empty) object directory", syscall.EPERM, func() error { return syscall.Rmdir(newDir) }},
		{"rename a signature within its directory", syscall.EPERM, func() error { return syscall.Rename(sig, filepath.Join(objDir, "renamed")) }},
		{"rename a signature to a new object", syscall.EPERM, func() error { return syscall.Rename(sig, filepath.Join(newDir, "renamed")) }},
		{"hard link a signature", syscall.EPERM, func() error { return syscall.Link(sig, filepath.Join(newDir, "linked")) }},
		{"symlink in an object directory", syscall.EPERM, func() error { return syscall.Symlink("../x", filepath.Join(newDir, "symlinked")) }},
		{"mknod in an object directory", syscall.EPERM, func() error { return syscall.Mknod(filepath.Join(newDir, "fifo"), syscall.S_IFIFO|0o644, 0) }},
		{"create a file in a <hh> directory", syscall.EPERM, func() error { return create(filepath.Join(mnt, "sig", obj[:2], "file")) }},
		{"mkdir in an object directory", syscall.EPERM, func() error { return syscall.Mkdir(filepath.Join(newDir, "sub"), 0o755) }},
		{"truncate a signature by name", syscall.EPERM, func() error { return syscall.Truncate(sig, 1) }},
		{"mkdir an uppercase <hh>", syscall.EINVAL, func() error { return syscall.Mkdir(filepath.Join(mnt, "sig", "AB"), 0o755) }},
		{"mkdir an uppercase <rest>", syscall.EINVAL, func() error {
			return syscall.Mkdir(filepath.Join(mnt, "sig", obj[:2], strings.ToUpper(obj[2:])), 0o755)
		}},
		{"mkdir an odd-length object", syscall.EINVAL, func() error { return syscall.Mkdir(filepath.Join(mnt, "sig", obj[:2], obj[2:7]), 0o755) }},
		{"mkdir a non-hex object", syscall.EINVAL, func() error { return syscall.Mkdir(filepath.Join(mnt, "seal", "zz"), 0o755) }},
		{"create a name with a newline", syscall.EINVAL, func() error { return create(filepath.Join(newDir, "bad\nsigner")) }},
		{"create a 256-byte name", syscall.EINVAL, func() error { return create(filepath.Join(newDir, strings.Repeat("s", 256))) }},
		{"create a name with a carriage return", syscall.EINVAL, func() error { return create(filepath.Join(newDir, "bad\rsigner")) }},
	}
	for _, c := range syscalls {
		err := c.op()
		if got := errnoOf(err); got != c.want {
			t.Errorf("%s: %v (errno %d), want %v", c.what, err, got, c.want)
		}
	}

	// Bytes written into a seal: the write is EINVAL, and so is the close.
	f, err := os.OpenFile(seal, os.O_WRONLY, 0)
	if err != nil {
		t.Errorf("open a seal for writing: %v", err)
	} else {
		if _, err := f.Write([]byte("bytes")); errnoOf(err) != syscall.EINVAL {
			t.Errorf("write into a seal: %v, want EINVAL", err)
		}
		if err := f.Close(); errnoOf(err) != syscall.EINVAL {
			t.Errorf("close after a refused write into a seal: %v, want EINVAL", err)
		}
	}
	// An empty signature cannot be written: a signature needs bytes.
	if err := create(filepath.Join(newDir, "empty-signer")); errnoOf(err) != syscall.EINVAL {
		t.Errorf("create and close an empty signature: %v, want EINVAL", err)
	}

	// The coreutils a user runs fail and say why.
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"rm", "-f", sig}, "Operation not permitted"},
		{[]string{"rm", "-rf", objDir}, "Operation not permitted"},
		{[]string{"mv", sig, filepath.Join(objDir, "moved")}, "Operation not permitted"},
		{[]string{"ln", sig, filepath.Join(newDir, "ln")}, "Operation not permitted"},
		{[]string{"ln", "-s", sig, filepath.Join(newDir, "ln-s")}, "Operation not permitted"},
		{[]string{"mkdir", filepath.Join(mnt, "sig", "AB")}, "Invalid argument"},
		{[]string{"dd", "if=" + sig, "of=" + seal}, "Invalid argument"},
	} {
		_, stderr, err := runErr(c.args[0], c.args[1:]...)
		if err == nil || !strings.Contains(stderr, c.msg) {
			t.Errorf("%s: err %v, stderr %q; want a failure saying %q", strings.Join(c.args, " "), err, strings.TrimSpace(stderr), c.msg)
		}
	}

	// Everything is still there, and the bucket did not change.
	if _, err := os.Stat(sig); err != nil {
		t.Errorf("the signature after the refused operations: %v", err)
	}
	if _, err := os.Stat(seal); err != nil {
		t.Errorf("the seal after the refused operations: %v", err)
	}
	d := readStatus(t, mnt).Requests.Sub(before)
	t.Logf("%d refused syscalls and 7 refused commands sent %s", len(syscalls)+3, d)
	if d.Put != 0 || d.Delete != 0 || d.List != 0 {
		t.Errorf("refused operations sent %s, want no PUT, DELETE or LIST", d)
	}
	if diff := bucketBefore.diff(readBucket(t, st)); diff != "" {
		t.Errorf("the bucket changed:\n%s", diff)
	}
}

// create opens name with O_CREAT|O_WRONLY and closes it: how touch or a
// shell redirection make a file. The first error is returned.
func create(name string) error {
	fd, err := syscall.Open(name, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	if err := syscall.Close(fd); err != nil {
		return &os.PathError{Op: "close", Path: name, Err: err}
	}
	return nil
}
