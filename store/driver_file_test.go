//go:build linux || darwin

package store

import (
	"context"
	"errors"
	"fmt"
	"github.com/oxyfs/oxyfs/store/fileblob"
	"github.com/oxyfs/oxyfs/store/format"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"gocloud.dev/blob"
)

// openFileTest opens a bucket-layout file:// store on a fresh directory.
func openFileTest(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := Open(context.Background(), "file://"+dir, Options{Layout: LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dir
}

// openFileTestWith opens a bucket-layout file:// store on a fresh
// directory through a bucket with opts.
func openFileTestWith(t *testing.T, opts fileblob.Options) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := fileblob.OpenBucket(dir, &opts)
	if err != nil {
		t.Fatal(err)
	}
	st := New(b, "file", dir, Options{Layout: LayoutBucket})
	t.Cleanup(func() { st.Close() })
	return st, dir
}

// listKeys lists prefix (every page of size) and returns the items shown.
func listKeys(st *Store, prefix, delim string, size int) ([]string, error) {
	var out []string
	var token []byte
	for {
		items, next, err := st.ListPage(context.Background(), prefix, delim, token, size)
		if err != nil {
			return out, err
		}
		for _, it := range items {
			out = append(out, it.Shown())
		}
		if next == nil {
			return out, nil
		}
		token = next
	}
}

// writeFile writes a file at dir/rel, creating its directories.
func writeFile(t *testing.T, dir, rel, data string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFileListingFailsClosed: a directory the listing cannot read, or a
// file it cannot stat, fails the listing (and every page of it); it is
// never skipped. Root ignores permission bits, so the test makes the
// failures with the bucket's fault hook (fileblob.Options.Fault), which returns
// what the system call would (EACCES, EIO); run as another user it also
// checks a real chmod 000 directory. A file that vanished under the
// listing (ENOENT at stat) is listed again, not an error.
func TestFileListingFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var fault atomic.Pointer[func(op, path string) error]
	st, dir := openFileTestWith(t, fileblob.Options{Fault: func(op, path string) error {
		if f := fault.Load(); f != nil {
			return (*f)(op, path)
		}
		return nil
	}})
	inject := func(f func(op, path string) error) (restore func()) {
		fault.Store(&f)
		return func() { fault.Store(nil) }
	}
	keys := []string{"sig/00/aa/alice", "sig/01/bb/bob", "sig/01/bb/carol", "sig/02/cc/dave"}
	for _, k := range keys {
		if err := st.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := listKeys(st, "sig/", "", 0); err != nil || !slices.Equal(got, keys) {
		t.Fatalf("listing before any fault = %q, %v; want %q", got, err, keys)
	}
	cases := []struct {
		name, op, path string
		errno          syscall.Errno
		prefix, delim  string
		size           int
	}{
		{"unreadable <hh> directory", "readdir", "sig/01/", syscall.EACCES, "sig/", "", 0},
		{"unreadable <hh> directory, pages of 1", "readdir", "sig/01/", syscall.EACCES, "sig/", "", 1},
		{"unreadable object directory", "readdir", "sig/01/bb/", syscall.EIO, "sig/", "", 0},
		{"unreadable kind directory", "readdir", "sig/", syscall.EACCES, "sig/", "", 0},
		{"unreadable root", "readdir", "", syscall.EACCES, "pack-", "", 0},
		{"unreadable directory under a delimited listing", "readdir", "sig/01/", syscall.EACCES, "sig/", "/", 0},
		{"file that cannot be stated", "stat", "sig/01/bb/carol", syscall.EIO, "sig/", "", 0},
		{"file that cannot be stated, listing its directory", "stat", "sig/01/bb/carol", syscall.EACCES, "sig/01/bb/", "/", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			restore := inject(func(op, path string) error {
				if op == c.op && path == c.path {
					return c.errno
				}
				return nil
			})
			defer restore()
			before := st.Counts()
			got, err := listKeys(st, c.prefix, c.delim, c.size)
			if !errors.Is(err, c.errno) || errors.Is(err, ErrNotFound) {
				t.Fatalf("listing = %q, %v; want the listing to fail with %v", got, err, c.errno)
			}
			if !strings.Contains(err.Error(), strings.TrimSuffix(c.path, "/")) {
				t.Errorf("error %q does not name %q", err, c.path)
			}
			if d := st.Counts().Sub(before); d.List == 0 || d.List > int64(len(keys)) {
				t.Errorf("sent %v", d)
			}
			// List stops too.
			n := 0
			if err := st.List(ctx, c.prefix, c.delim, func(ListItem) error { n++; return nil }); !errors.Is(err, c.errno) {
				t.Fatalf("List after %d items: %v, want %v", n, err, c.errno)
			}
		})
	}
	t.Run("file that vanished is listed again", func(t *testing.T) {
		var once atomic.Bool
		restore := inject(func(op, path string) error {
			if op == "stat" && path == "sig/01/bb/carol" && once.CompareAndSwap(false, true) {
				return syscall.ENOENT
			}
			return nil
		})
		defer restore()
		before := st.Counts()
		got, err := listKeys(st, "sig/", "", 0)
		if err != nil || !slices.Equal(got, keys) {
			t.Fatalf("listing = %q, %v; want %q", got, err, keys)
		}
		if d := st.Counts().Sub(before); d != (Counts{List: 2}) {
			t.Fatalf("sent %v, want the page listed twice", d)
		}
	})
	if os.Geteuid() != 0 {
		// Not root: a real unreadable directory fails the listing too.
		p := filepath.Join(dir, "sig", "01")
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(p, 0o755)
		if got, err := listKeys(st, "sig/", "", 0); !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("listing with sig/01 mode 000 = %q, %v; want permission denied", got, err)
		}
	}
}

// withBothResolvers runs fn with openat2 (where the kernel has it) and with
// the openat walk that stands in for it on older kernels
// (fileblob.Options.NoOpenat2, per bucket: the two run in parallel).
func withBothResolvers(t *testing.T, fn func(t *testing.T, opts fileblob.Options)) {
	t.Run("openat2", func(t *testing.T) {
		t.Parallel()
		fn(t, fileblob.Options{})
	})
	t.Run("openat walk", func(t *testing.T) {
		t.Parallel()
		fn(t, fileblob.Options{NoOpenat2: true})
	})
}

// TestFileSymlinksNotFollowed: symbolic links planted in a file:// store,
// to a file and to a directory outside it, as a per-object key, an <hh>
// directory, an object directory, a kind directory and an entry list: no
// read, HEAD or write goes through one, and a listing shows each as an
// irregular item (a malformed key to every reader), never what it points to.
func TestFileSymlinksNotFollowed(t *testing.T) {
	withBothResolvers(t, testSymlinks)
}

func testSymlinks(t *testing.T, opts fileblob.Options) {
	ctx := context.Background()
	st, dir := openFileTestWith(t, opts)
	outside := t.TempDir()
	writeFile(t, outside, "secret", "SECRET")
	writeFile(t, outside, "0102/alice", "OUTSIDE SIG")
	writeFile(t, dir, "sig/ab/cdef/bob", "bob's signature")
	link := func(target, rel string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	list := format.EntryListName(strings.Repeat("ab", 32), true)
	link(filepath.Join(outside, "secret"), "sig/ab/cdef/evil")       // a per-object key
	link(outside, "sig/cd")                                          // an <hh> directory
	link(filepath.Join(outside, "0102"), "seal/ab/cdef")             // an object directory
	link(outside, "cert")                                            // a kind directory
	link(filepath.Join(outside, "secret"), list)                     // an entry list
	link("../../../../../../../../../../etc/hostname", "sig/ab/rel") // relative, climbing out
	refused := []string{"sig/ab/cdef/evil", "sig/cd/0102/alice", "seal/ab/cdef/alice", "cert/0102/alice", list, "sig/ab/rel"}
	for _, k := range refused {
		if data, err := st.Get(ctx, k); !errors.Is(err, fileblob.ErrSymlink) || data != nil {
			t.Errorf("Get(%s) = %q, %v; want refused as a symbolic link", k, data, err)
		}
		if ok, err := st.Exists(ctx, k); !errors.Is(err, fileblob.ErrSymlink) || ok {
			t.Errorf("Exists(%s) = %v, %v; want refused", k, ok, err)
		}
		if n, err := st.Size(ctx, k); !errors.Is(err, fileblob.ErrSymlink) || n != 0 {
			t.Errorf("Size(%s) = %d, %v; want refused", k, n, err)
		}
		if _, _, err := st.ReadRecord(ctx, k); !errors.Is(err, fileblob.ErrSymlink) {
			t.Errorf("ReadRecord(%s): %v, want refused", k, err)
		}
	}
	if got, err := st.Get(ctx, "sig/ab/cdef/bob"); err != nil || string(got) != "bob's signature" {
		t.Fatalf("the regular key beside the links: %q, %v", got, err)
	}
	// Writes through a linked directory are refused and land nowhere.
	for _, k := range []string{"sig/cd/0102/mallory", "seal/ab/cdef/mallory", "cert/0102/mallory"} {
		if err := st.Put(ctx, k, []byte("x")); !errors.Is(err, fileblob.ErrSymlink) {
			t.Errorf("Put(%s): %v, want refused", k, err)
		}
		if err := st.PutIfAbsent(ctx, k, []byte("x")); !errors.Is(err, fileblob.ErrSymlink) {
			t.Errorf("PutIfAbsent(%s): %v, want refused", k, err)
		}
	}
	if err := st.Delete(ctx, "sig/cd/0102/alice"); !errors.Is(err, fileblob.ErrSymlink) {
		t.Errorf("Delete through a linked directory: %v, want refused", err)
	}
	var outsideFiles []string
	filepath.WalkDir(outside, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			outsideFiles = append(outsideFiles, strings.TrimPrefix(p, outside+"/"))
		}
		return nil
	})
	if want := []string{"0102/alice", "secret"}; !slices.Equal(outsideFiles, want) {
		t.Fatalf("files outside the store after the writes: %q, want %q", outsideFiles, want)
	}
	// Listings show the links as what they are, and never their targets.
	for _, c := range []struct {
		prefix, delim string
		want          []string
	}{
		{"sig/", "", []string{"sig/ab/cdef/bob", "sig/ab/cdef/evil (symbolic link, not followed)", "sig/ab/rel (symbolic link, not followed)", "sig/cd (symbolic link, not followed)"}},
		{"sig/", "/", []string{"sig/ab/", "sig/cd (symbolic link, not followed)"}},
		{"sig/ab/cdef/", "/", []string{"sig/ab/cdef/bob", "sig/ab/cdef/evil (symbolic link, not followed)"}},
		{"seal/", "", []string{"seal/ab/cdef (symbolic link, not followed)"}},
		{"", "/", []string{"cert (symbolic link, not followed)", list + " (symbolic link, not followed)", "seal/", "sig/"}},
		{"pack-", "", []string{list + " (symbolic link, not followed)"}},
	} {
		if got, err := listKeys(st, c.prefix, c.delim, 0); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("list %q %q = %q, %v; want %q", c.prefix, c.delim, got, err, c.want)
		}
	}
	// A listing whose prefix goes through a link fails, naming it.
	for _, prefix := range []string{"sig/cd/", "sig/cd/0102/", "cert/0102/a"} {
		if got, err := listKeys(st, prefix, "", 0); !errors.Is(err, fileblob.ErrSymlink) {
			t.Errorf("list %q = %q, %v; want refused", prefix, got, err)
		}
	}
	// The pack listing does not take a linked list for a list.
	sn, err := st.ReadSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sn.Lists) != 0 || !slices.Equal(sn.Irregular, []string{list + " (symbolic link, not followed)"}) {
		t.Fatalf("snapshot lists %v, irregular %q", sn.Lists, sn.Irregular)
	}
	// Replacing or deleting a linked key touches the link, not its target.
	if err := st.Put(ctx, "sig/ab/cdef/evil", []byte("replaced")); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "sig/ab/rel"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(b) != "SECRET" {
		t.Fatalf("the link's target after Put over the link: %q, %v", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "sig/ab/cdef/evil")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the key after Put over the link: %v, %v; want a regular file", fi, err)
	}
}

// TestFileSpecialFilesNotRead: a named pipe at a key is refused at once
// (an open of it must not hang) and listed as irregular.
func TestFileSpecialFilesNotRead(t *testing.T) {
	ctx := context.Background()
	st, dir := openFileTest(t)
	if err := os.MkdirAll(filepath.Join(dir, "sig/ab/cdef"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "sig/ab/cdef/pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "sig/ab/cdef/pipe"); !errors.Is(err, fileblob.ErrNotRegular) {
		t.Fatalf("Get of a named pipe: %v, want refused", err)
	}
	if _, err := st.Exists(ctx, "sig/ab/cdef/pipe"); !errors.Is(err, fileblob.ErrNotRegular) {
		t.Fatalf("Exists of a named pipe: %v, want refused", err)
	}
	if got, err := listKeys(st, "sig/", "", 0); err != nil || !slices.Equal(got, []string{"sig/ab/cdef/pipe (named pipe, not followed)"}) {
		t.Fatalf("listing = %q, %v", got, err)
	}
}

// TestFileLongValue: a key whose last component is 249 to 255 bytes (DESIGN
// §3 allows 1-255) writes, reads, lists, HEADs and deletes; so does one
// written by hand. 256 bytes fails cleanly.
func TestFileLongValue(t *testing.T) {
	ctx := context.Background()
	st, dir := openFileTest(t)
	for n := 249; n <= 255; n++ {
		key := "sig/ab/cdef/" + strings.Repeat("v", n)
		if err := st.Put(ctx, key, []byte("sig")); err != nil {
			t.Fatalf("Put of a %d-byte value: %v", n, err)
		}
		if err := st.PutIfAbsent(ctx, key, []byte("sig")); !errors.Is(err, ErrConflict) {
			t.Fatalf("PutIfAbsent of an existing %d-byte value: %v, want conflict", n, err)
		}
		if got, err := st.Get(ctx, key); err != nil || string(got) != "sig" {
			t.Fatalf("Get of a %d-byte value: %q, %v", n, got, err)
		}
		if sz, err := st.Size(ctx, key); err != nil || sz != 3 {
			t.Fatalf("Size of a %d-byte value: %d, %v", n, sz, err)
		}
		if got, err := listKeys(st, "sig/ab/cdef/", "/", 0); err != nil || !slices.Equal(got, []string{key}) {
			t.Fatalf("listing of a %d-byte value: %q, %v", n, got, err)
		}
		if err := st.Delete(ctx, key); err != nil {
			t.Fatalf("Delete of a %d-byte value: %v", n, err)
		}
	}
	hand := "seal/ab/cdef/" + strings.Repeat("h", 255)
	writeFile(t, dir, hand, "")
	if ok, err := st.Exists(ctx, hand); err != nil || !ok {
		t.Fatalf("Exists of a hand-written 255-byte value: %v, %v", ok, err)
	}
	if got, err := st.Get(ctx, hand); err != nil || len(got) != 0 {
		t.Fatalf("Get of a hand-written 255-byte value: %q, %v", got, err)
	}
	if err := st.Put(ctx, "sig/ab/cdef/"+strings.Repeat("v", 256), nil); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("Put of a 256-byte value: %v, want ENAMETOOLONG", err)
	}
}

// TestFileWritesLeaveNoTemporaryFile: a write leaves exactly the key's file
// (no temporary file, no sidecar), a temporary file in progress is never
// listed, and no key may take a temporary file's name.
func TestFileWritesLeaveNoTemporaryFile(t *testing.T) {
	ctx := context.Background()
	st, dir := openFileTest(t)
	if err := st.Put(ctx, "sig/ab/cdef/alice", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteRecord(ctx, format.JournalKey, []byte("0 sig/ab/cdef/alice\n"), Version{}); err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	// The writers' lock file (file_lock.go) stays, under a temporary
	// file's name that no listing shows.
	if want := []string{lockFileName, "pack-entries", "sig/ab/cdef/alice"}; !slices.Equal(files, want) {
		t.Fatalf("files after two writes: %q, want %q", files, want)
	}
	writeFile(t, dir, "sig/ab/cdef/.oxytmp-0123456789abcdef", "in progress")
	writeFile(t, dir, "sig/ab/cdef/.oxytmp-not-mine", "a key")
	if got, err := listKeys(st, "sig/", "", 0); err != nil || !slices.Equal(got, []string{"sig/ab/cdef/.oxytmp-not-mine", "sig/ab/cdef/alice"}) {
		t.Fatalf("listing beside a temporary file: %q, %v", got, err)
	}
	if err := st.Put(ctx, "sig/ab/cdef/.oxytmp-0123456789abcdef", nil); err == nil {
		t.Fatal("a write of a temporary file's name succeeded")
	}
}

// TestFileCreateOnlyIsAtomic: the driver's create-only write (IfNotExist)
// has exactly one winner among racing writers, each of which could see the
// key absent before its write.
func TestFileCreateOnlyIsAtomic(t *testing.T) {
	ctx := context.Background()
	st, _ := openFileTest(t)
	const racers = 16
	var wins, lost atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			err := st.Bucket().WriteAll(ctx, "pack-race", []byte(fmt.Sprint(i)), &blob.WriterOptions{IfNotExist: true})
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(mapErr(err), ErrConflict):
				lost.Add(1)
			default:
				t.Errorf("racer %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 || lost.Load() != racers-1 {
		t.Fatalf("%d winners, %d conflicts; want 1 and %d", wins.Load(), lost.Load(), racers-1)
	}
}

// TestFileListingMatchesMem: paged and delimited listings of a file://
// store list exactly what a bucket lists for the same keys, in the same
// order, with names that sort around "/" ("a-b" < "a/x" < "a0").
func TestFileListingMatchesMem(t *testing.T) {
	ctx := context.Background()
	st, _ := openFileTest(t)
	mem, err := Open(ctx, "mem://", Options{Layout: LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	keys := []string{"a", "a-b", "a.c", "a0", "b/a-b", "b/a/x", "b/a/y/z", "b/a0", "b/a.c/d", "b/b", "c/d/e/f/g", "c/d-e", "c~"}
	for _, k := range keys {
		if err := st.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
		if err := mem.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	// An empty directory names no common prefix, as no key has it.
	if err := st.Put(ctx, "d/e/f", nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "d/e/f"); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"", "a", "b/", "b/a", "b/a/", "c/", "c/d", "x/", "b/a/y/z"} {
		for _, delim := range []string{"", "/"} {
			for _, size := range []int{1, 2, 3, 1000} {
				want, err := listKeys(mem, prefix, delim, size)
				if err != nil {
					t.Fatal(err)
				}
				got, err := listKeys(st, prefix, delim, size)
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("list %q %q pages of %d = %q, %v; want %q", prefix, delim, size, got, err, want)
				}
			}
		}
	}
}
