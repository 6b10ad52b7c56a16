package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store/fileblob"
	"golang.org/x/sys/unix"
)

// nestDirs makes n nested directories named "d" under dir, one descriptor
// at a time (a path of 21,000 levels is far past PATH_MAX), and removes
// them at the test's end the same way, bottom up.
func nestDirs(t *testing.T, dir string, n int) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatalf("mkdir level %d: %v", i, err)
		}
		sub, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("open level %d: %v", i, err)
		}
		unix.Close(fd)
		fd = sub
	}
	unix.Close(fd)
	t.Cleanup(func() {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Error(err)
			return
		}
		depth := 0
		for ; depth < n; depth++ {
			sub, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				break
			}
			unix.Close(fd)
			fd = sub
		}
		for ; depth > 0; depth-- {
			up, err := unix.Openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				t.Error(err)
				return
			}
			fd = up
			if err := unix.Unlinkat(fd, "d", unix.AT_REMOVEDIR); err != nil {
				t.Error(err)
				return
			}
		}
		unix.Close(fd)
	})
}

// TestDeepTreeListsAndWarnsOnce (issue 41, 2): a store writer nests 21,000
// empty folders under sig/ab/ (more than this process's descriptor
// limit); the presence check and a listing of sig/ still work (every
// command failed with "too many open files"), and the listing shows the
// tree once, as one irregular item at fileblob.MaxDepth.
func TestDeepTreeListsAndWarnsOnce(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := Open(ctx, "file://"+root, Options{Layout: LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Put(ctx, "sig/ab/ef01/alice", []byte("sig")); err != nil {
		t.Fatal(err)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	n := int(min(lim.Cur, 1<<20)) + 1000 // past the descriptor limit
	if n > 100_000 {
		t.Fatalf("descriptor limit %d: the tree would take long to make", lim.Cur)
	}
	if err := unix.Mkdir(filepath.Join(root, "sig", "ab"), 0o755); err != nil && err != unix.EEXIST {
		t.Fatal(err)
	}
	nestDirs(t, filepath.Join(root, "sig", "ab"), n)
	p, err := st.Presence(ctx)
	if err != nil || !p.Held {
		t.Fatalf("presence of a store with a deep tree: %+v, %v", p, err)
	}
	var keys, irregular []string
	err = st.List(ctx, "sig/", "", func(it ListItem) error {
		if it.Irregular != "" {
			irregular = append(irregular, it.Shown())
		} else {
			keys = append(keys, it.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list sig/ with %d nested folders: %v", n, err)
	}
	want := "sig/ab/" + strings.Repeat("d/", fileblob.MaxDepth-2) + "d"
	if len(keys) != 1 || keys[0] != "sig/ab/ef01/alice" || len(irregular) != 1 || !strings.HasPrefix(irregular[0], want+" (") {
		t.Fatalf("list sig/: keys %q, irregular %q; want the one key and %s as one irregular item", keys, irregular, want)
	}
}
