package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// landed checks that an entry's own key holds data and the journal names it.
func landed(t *testing.T, st *store.Store, e format.Entry, data []byte) {
	t.Helper()
	got, err := st.Get(context.Background(), e.Key())
	if err != nil {
		t.Fatalf("per-object key %s: %v", e.Key(), err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("per-object key %s holds %q, want %q", e.Key(), got, data)
	}
	if !slices.Contains(storefixture.JournalKeys(t, st), e.Key()) {
		t.Errorf("journal has no line for %s", e.Key())
	}
}

// visible checks that the mount lists and serves an entry at once.
func visible(t *testing.T, srv *Server, e format.Entry, data []byte) {
	t.Helper()
	p := srv.path(e)
	des, err := os.ReadDir(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(des, func(de os.DirEntry) bool { return de.Name() == e.Value }) {
		t.Errorf("%s is not listed in its directory", e.Key())
	}
	if fi, err := os.Lstat(p); err != nil || fi.Size() != int64(len(data)) {
		t.Errorf("lstat %s: %v, %v; want size %d", e.Key(), fi, err, len(data))
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
		t.Errorf("read %s: %q, %v", e.Key(), got, err)
	}
	if src, err := getxattr(p, xattrSource); err != nil || src != "own write" {
		t.Errorf("%s: source %q, %v", e.Key(), src, err)
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
}

func TestCpWritesTheKeyThenTheJournalLine(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	src := filepath.Join(t.TempDir(), "sig")
	data := []byte("-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	e := storefixture.Ent(format.KindSig, "ab12cd34", "dave")
	run(t, "cp", src, srv.path(e))
	landed(t, f.st, e, data)
	visible(t, srv, e, data)
	if target, err := os.Readlink(srv.Dir() + "/by-signer/dave/ab12cd34"); err != nil || target != "../../sig/ab/12cd34/dave" {
		t.Errorf("by-signer link: %q, %v", target, err)
	}
}

func TestShellRedirectWritesASignature(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	e := storefixture.Ent(format.KindSig, "ab12cd34", "erin")
	run(t, "sh", "-c", `printf 'sig by erin' > "$1"`, "sh", srv.path(e))
	landed(t, f.st, e, []byte("sig by erin"))
	visible(t, srv, e, []byte("sig by erin"))
}

func TestRewriteBySameSignerReplaces(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	e := storefixture.Ent(format.KindSig, "ff0011223344", "carol smith") // 5000 bytes, listed
	if fi, err := os.Lstat(srv.path(e)); err != nil || fi.Size() != 5000 {
		t.Fatalf("before: %v %v", fi, err)
	}
	// O_TRUNC comes before any write, so the old bytes are never read: a
	// rewrite costs what a new signature does.
	fresh := storefixture.Delta(f.st, func() {
		if err := os.WriteFile(srv.path(storefixture.Ent(format.KindSig, "ff0011223344", "new")), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	d := storefixture.Delta(f.st, func() {
		if err := os.WriteFile(srv.path(e), []byte("shorter"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if d != fresh {
		t.Errorf("rewrite sent %v, a new signature %v", d, fresh)
	}
	landed(t, f.st, e, []byte("shorter"))
	visible(t, srv, e, []byte("shorter"))
	src := filepath.Join(t.TempDir(), "new")
	os.WriteFile(src, []byte("replaced by cp"), 0o600)
	run(t, "cp", src, srv.path(e))
	landed(t, f.st, e, []byte("replaced by cp"))
	if got, _ := os.ReadFile(srv.path(e)); string(got) != "replaced by cp" {
		t.Errorf("after cp: %q", got)
	}
}

// TestRewriteWithoutAtomicTrunc: a kernel that truncates with a SETATTR
// naming no open file (no FUSE_ATOMIC_O_TRUNC) rewrites the same way.
func TestRewriteWithoutAtomicTrunc(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{noAtomicTrunc: true, AllowOverwrite: true})
	e := storefixture.Ent(format.KindSig, "ab12cd34", "bob")
	if err := os.WriteFile(srv.path(e), []byte("bob again"), 0o644); err != nil {
		t.Fatal(err)
	}
	landed(t, f.st, e, []byte("bob again"))
	if got, _ := os.ReadFile(srv.path(e)); string(got) != "bob again" {
		t.Errorf("after rewrite: %q", got)
	}
	if err := os.Truncate(srv.path(e), 0); !errors.Is(err, syscall.EPERM) {
		t.Errorf("truncate by name: %v, want EPERM", err)
	}
}

func TestAppendToASignature(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{AllowOverwrite: true})
	e := storefixture.Ent(format.KindSig, "ab99", "alice")
	old := f.sigs[e.Key()]
	run(t, "sh", "-c", `printf '+more' >> "$1"`, "sh", srv.path(e))
	want := append(slices.Clone(old), "+more"...)
	landed(t, f.st, e, want)
	if got, _ := os.ReadFile(srv.path(e)); !bytes.Equal(got, want) {
		t.Errorf("after append: %q", got)
	}
}

// TestExistingSignatureIsNotReplacedByDefault: an auditor's stray `echo >`
// or `cp` onto an existing signature is refused (EPERM for an open of the
// existing file, EEXIST for a create the kernel sends for it) and nothing is
// sent; new signatures are still written. --allow-overwrite replaces.
func TestExistingSignatureIsNotReplacedByDefault(t *testing.T) {
	f, _, srv, logs := mountFixture(t, Options{})
	e := storefixture.Ent(format.KindSig, "ab99", "alice")
	old := f.sigs[e.Key()]
	d := storefixture.Delta(f.st, func() {
		if err := os.WriteFile(srv.path(e), []byte("changed"), 0o644); !errors.Is(err, syscall.EPERM) {
			t.Errorf("echo > an existing signature: %v, want EPERM", err)
		}
		if err := exec.Command("sh", "-c", `printf x >> "$1"`, "sh", srv.path(e)).Run(); err == nil {
			t.Error(">> onto an existing signature succeeded")
		}
		src := filepath.Join(t.TempDir(), "new")
		os.WriteFile(src, []byte("replaced by cp"), 0o600)
		if err := exec.Command("cp", src, srv.path(e)).Run(); err == nil {
			t.Error("cp onto an existing signature succeeded")
		}
	})
	if d.Put != 0 || d.Delete != 0 {
		t.Errorf("refused writes sent %v", d)
	}
	landed(t, f.st, e, old)
	if got, _ := os.ReadFile(srv.path(e)); !bytes.Equal(got, old) {
		t.Errorf("after the refused writes: %q, want the old bytes", got)
	}
	if logs.count("--allow-overwrite") == 0 {
		t.Errorf("the log does not say how to replace: %v", logs.all())
	}
	fresh := storefixture.Ent(format.KindSig, "ab99", "new-signer")
	if err := os.WriteFile(srv.path(fresh), []byte("new sig"), 0o644); err != nil {
		t.Fatalf("a new signature: %v", err)
	}
	landed(t, f.st, fresh, []byte("new sig"))
}

func TestEmptyFileUnderSealWritesTheEntry(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	e := storefixture.Ent(format.KindSeal, "ab12cd34", "change-9")
	if err := os.WriteFile(srv.path(e), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	landed(t, f.st, e, []byte{})
	visible(t, srv, e, nil)
	r := storefixture.Ent(format.KindReceipt, "0102", "state-8")
	run(t, "touch", srv.path(r))
	landed(t, f.st, r, []byte{})
	// touch of an existing entry sets its times to now through the file it
	// opened: accepted (utimes by name is EPERM, see checkRefused).
	run(t, "touch", srv.path(r))
	// Opening an existing entry for writing, and closing it, writes nothing.
	if d := storefixture.Delta(f.st, func() {
		if err := os.WriteFile(srv.path(r), nil, 0o644); err != nil {
			t.Error(err)
		}
	}); d.Put != 0 {
		t.Errorf("rewriting an existing index entry sent %v", d)
	}
}

func TestRefusedWritesLeaveNothing(t *testing.T) {
	f, _, srv, l := mountFixture(t, Options{})
	before := f.st.Counts()
	// Bytes into a new index entry: the write is EINVAL, and close writes nothing.
	seal := storefixture.Ent(format.KindSeal, "ab12cd34", "with-bytes")
	fh, err := os.Create(srv.path(seal))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write([]byte("x")); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("write into an index entry: %v, want EINVAL", err)
	}
	if err := fh.Close(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("close after a refused write: %v, want EINVAL", err)
	}
	// An empty signature: close says EINVAL.
	sig := storefixture.Ent(format.KindSig, "ab12cd34", "empty")
	fh, err = os.Create(srv.path(sig))
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("close of an empty signature: %v, want EINVAL", err)
	}
	// Past MaxWriteBytes: EFBIG.
	big := storefixture.Ent(format.KindSig, "ab12cd34", "big")
	fh, err = os.Create(srv.path(big))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("xx"), MaxWriteBytes-1); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("write past the cap: %v, want EFBIG", err)
	}
	if err := fh.Close(); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("close after EFBIG: %v", err)
	}
	if d := f.st.Counts().Sub(before); d.Put != 0 {
		t.Errorf("refused writes sent %v", d)
	}
	for _, e := range []format.Entry{seal, sig, big} {
		waitENOENT(t, srv.path(e))
	}
	if n := l.count("a signature needs bytes"); n != 1 {
		t.Errorf("the empty signature was logged %d times, want 1: %q", n, l.all())
	}
}

// waitENOENT: a name whose write failed is gone once the kernel has
// released the file (release is sent after close returns).
func waitENOENT(t *testing.T, p string) {
	t.Helper()
	for range 200 {
		if _, err := os.Lstat(p); errors.Is(err, syscall.ENOENT) {
			return
		}
		syscall.Nanosleep(&syscall.Timespec{Nsec: 5e6}, nil)
	}
	_, err := os.Lstat(p)
	t.Errorf("%s: %v, want ENOENT", p, err)
}

func TestMkdirMakesVirtualDirectoriesForCp(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	obj := srv.Dir() + "/sig/9a/0b1c2d"
	if d := storefixture.Delta(f.st, func() { run(t, "mkdir", "-p", obj) }); d.Total() != 0 {
		t.Errorf("mkdir sent %v", d)
	}
	if des, err := os.ReadDir(obj); err != nil || len(des) != 0 {
		t.Errorf("new object dir: %v, %v", des, err)
	}
	if des, err := os.ReadDir(srv.Dir() + "/sig/9a"); err != nil || len(des) != 1 || des[0].Name() != "0b1c2d" {
		t.Errorf("sig/9a: %v, %v", des, err)
	}
	if err := os.Mkdir(obj, 0o755); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("mkdir again: %v, want EEXIST", err)
	}
	if err := os.Mkdir(srv.Dir()+"/sig/ab", 0o755); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("mkdir of an existing hh: %v, want EEXIST", err)
	}
	e := storefixture.Ent(format.KindSig, "9a0b1c2d", "frank")
	src := filepath.Join(t.TempDir(), "s")
	os.WriteFile(src, []byte("frank's"), 0o600)
	run(t, "cp", src, obj+"/")
	e2 := storefixture.Ent(format.KindSig, "9a0b1c2d", "s") // cp into a directory keeps the name
	landed(t, f.st, e2, []byte("frank's"))
	run(t, "cp", src, srv.path(e))
	landed(t, f.st, e, []byte("frank's"))
	visible(t, srv, e, []byte("frank's"))
}

func TestCloseIsEIOWhenThePutFails(t *testing.T) {
	f, ix, srv, l := mountFixture(t, Options{})
	ix.Close() // writes now fail with index.ErrClosed
	e := storefixture.Ent(format.KindSig, "ab12cd34", "gina")
	err := os.WriteFile(srv.path(e), []byte("never lands"), 0o644)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("close: %v, want EIO", err)
	}
	if n := l.count("(EIO)"); n != 1 {
		t.Errorf("the cause of the EIO was logged %d times, want once: %q", n, l.all())
	}
	if _, err := f.st.Get(context.Background(), e.Key()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("per-object key: %v, want not found", err)
	}
	waitENOENT(t, srv.path(e))
}

func TestSecondFlushOfTheSameFileWritesNothing(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	e := storefixture.Ent(format.KindSig, "ab12cd34", "hank")
	fh, err := os.Create(srv.path(e))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write([]byte("hank's")); err != nil {
		t.Fatal(err)
	}
	dup, err := dupCloexec(fh)
	if err != nil {
		t.Fatal(err)
	}
	first := storefixture.Delta(f.st, func() {
		if err := syscall.Close(dup); err != nil {
			t.Errorf("first close: %v", err)
		}
	})
	if first.Put == 0 {
		t.Fatalf("the first close wrote nothing: %v", first)
	}
	if second := storefixture.Delta(f.st, func() {
		if err := fh.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
	}); second.Total() != 0 {
		t.Errorf("the second close sent %v", second)
	}
	landed(t, f.st, e, []byte("hank's"))
	n := 0
	for _, k := range storefixture.JournalKeys(t, f.st) {
		if k == e.Key() {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d journal lines for %s, want 1", n, e.Key())
	}
}

func TestConcurrentWritersAllLand(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{})
	const writers, each = 8, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := storefixture.Ent(format.KindSig, fmt.Sprintf("c%d%04x", w, i), fmt.Sprintf("w%d", w))
				if err := os.MkdirAll(filepath.Dir(srv.path(e)), 0o755); err != nil {
					t.Error(err)
					return
				}
				if err := os.WriteFile(srv.path(e), []byte(e.Key()), 0o644); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	keys := storefixture.JournalKeys(t, f.st)
	for w := range writers {
		for i := range each {
			e := storefixture.Ent(format.KindSig, fmt.Sprintf("c%d%04x", w, i), fmt.Sprintf("w%d", w))
			if !slices.Contains(keys, e.Key()) {
				t.Errorf("no journal line for %s", e.Key())
			}
			if got, err := os.ReadFile(srv.path(e)); err != nil || string(got) != e.Key() {
				t.Errorf("%s: %q, %v", e.Key(), got, err)
			}
		}
	}
	st := ix.Status()
	t.Logf("%d entries in %d journal updates", st.JournalKeys, st.JournalAppends)
	if st.JournalKeys != writers*each || st.JournalAppends > st.JournalKeys {
		t.Errorf("journal: %d keys in %d updates", st.JournalKeys, st.JournalAppends)
	}
}

// TestOwnWriteIsListedAtOnce: the kernel keeps listings (FOPEN_CACHE_DIR);
// every listing a write changes shows it at the next ls.
func TestOwnWriteIsListedAtOnce(t *testing.T) {
	_, _, srv, _ := mountFixture(t, Options{})
	names := func(rel string) []string {
		t.Helper()
		des, err := os.ReadDir(srv.Dir() + "/" + rel)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, de := range des {
			out = append(out, de.Name())
		}
		return out
	}
	dirs := []string{"sig/ab", "sig/ab/12cd34", "by-signer", "by-signer/alice"}
	for _, d := range dirs {
		names(d) // the kernel caches these listings
	}
	judy := storefixture.Ent(format.KindSig, "ab12cd34", "judy")
	if err := os.WriteFile(srv.path(judy), []byte("judy's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(srv.Dir()+"/sig/ab/77", 0o755); err != nil {
		t.Fatal(err)
	}
	alice := storefixture.Ent(format.KindSig, "ab77", "alice")
	if err := os.WriteFile(srv.path(alice), []byte("alice's"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, name string }{
		{"sig/ab/12cd34", "judy"}, {"sig/ab", "77"}, {"sig/ab/77", "alice"},
		{"by-signer", "judy"}, {"by-signer/alice", "ab77"}, {"by-signer/judy", "ab12cd34"},
	} {
		if got := names(c.dir); !slices.Contains(got, c.name) {
			t.Errorf("ls %s = %q, want %s in it", c.dir, got, c.name)
		}
	}
	// A create that fails leaves no name in the listing.
	empty := storefixture.Ent(format.KindSig, "ab12cd34", "empty")
	os.WriteFile(srv.path(empty), nil, 0o644)
	waitENOENT(t, srv.path(empty))
	if got := names("sig/ab/12cd34"); slices.Contains(got, "empty") {
		t.Errorf("ls after a failed create = %q", got)
	}
}
