package fs

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// listed is what a walk read: the directories it listed, the names of
// each, and the other names (files, links).
type listed struct {
	dirs  map[string][]os.DirEntry
	files []string
}

// walkNames lists every directory under root as find does: it opens each,
// reads it to its end (getdents until it returns nothing) and descends
// into the names whose type says directory, never stating a name.
func walkNames(t *testing.T, root string) listed {
	t.Helper()
	l := listed{dirs: map[string][]os.DirEntry{}}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("readdir %s: %v", dir, err)
		}
		l.dirs[dir] = ents
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if e.IsDir() {
				walk(p)
			} else {
				l.files = append(l.files, p)
			}
		}
	}
	walk(root)
	return l
}

// delta is after - before, for each key of after.
func delta(before, after map[string]int64) map[string]int64 {
	d := make(map[string]int64, len(after))
	for k, v := range after {
		d[k] = v - before[k]
	}
	return d
}

// direntplusBytes is the size of a READDIRPLUS reply's record for a name
// (include/uapi/linux/fuse.h: a fuse_entry_out of 128 bytes, a fuse_dirent
// of 24 bytes and the name, padded to 8).
func direntplusBytes(name string) int { return 128 + (24+len(name)+7)&^7 }

// TestKernelRequestsOfAColdWalk counts the requests the kernel sends for a
// find over a fresh mount (the fixture: every directory fits in one
// reply), then for the same walk warm, then for a stat of every name that
// is not a directory.
func TestKernelRequestsOfAColdWalk(t *testing.T) {
	_, _, srv, _ := mountFixture(t, Options{})
	before, endsBefore := srv.Requests(), srv.ListingEnds()
	l := walkNames(t, srv.Dir())
	d, ends := delta(before, srv.Requests()), delta(endsBefore, srv.ListingEnds())
	t.Logf("cold walk of %d directories, %d other names: %v, empty replies %v", len(l.dirs), len(l.files), nonZero(d), ends)

	// Each directory: the replies that carry its names, then the empty one
	// that tells the kernel the listing ended. The smallest buffer the
	// kernel reads a listing into is a page (4096 bytes); every listing
	// here fits in one.
	want := int64(0)
	for dir, ents := range l.dirs {
		size := 0
		for _, e := range ents {
			size += direntplusBytes(e.Name())
		}
		if size > 4096 {
			t.Fatalf("the fixture's %s needs %d bytes of reply, more than a page: fix the test", dir, size)
		}
		want++ // the reply that finds the end
		if len(ents) > 0 {
			want++
		}
	}
	if d["READDIR"] != 0 {
		t.Errorf("%d READDIR: the mount offers READDIRPLUS, and the kernel does not choose per directory (no FUSE_READDIRPLUS_AUTO)", d["READDIR"])
	}
	if d["READDIRPLUS"] != want {
		t.Errorf("%d READDIRPLUS for %d directories listed once each, want %d (one with the names of each non-empty directory, one empty at the end of each)", d["READDIRPLUS"], len(l.dirs), want)
	}
	if ends["READDIRPLUS"] != int64(len(l.dirs)) {
		t.Errorf("%d READDIRPLUS answered empty, want one a directory (%d)", ends["READDIRPLUS"], len(l.dirs))
	}
	// The walk opened only directories that a READDIRPLUS named with a
	// node and attributes (dirHandle.Lookup), and stated nothing.
	for _, op := range []string{"LOOKUP", "GETATTR", "RELEASEDIR", "OPEN", "READ"} {
		if d[op] != 0 {
			t.Errorf("%d %s in a walk that names only what READDIRPLUS returned", d[op], op)
		}
	}
	if d["OPENDIR"] > 1 {
		t.Errorf("%d OPENDIR: the first is declined (ENOSYS) and the kernel sends no other", d["OPENDIR"])
	}

	// .oxy/status, read just after the walk, reports the counts of when it
	// is read (the walk listed .oxy/ but stated nothing in it: see
	// oxyDirHandle).
	before = srv.Requests()
	b, err := os.ReadFile(filepath.Join(srv.Dir(), ".oxy", "status"))
	if err != nil {
		t.Fatal(err)
	}
	after := srv.Requests()
	var doc struct {
		Requests map[string]int64 `json:"fuse_requests"`
		Ends     map[string]int64 `json:"fuse_listing_ends"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Requests) != numReqs {
		t.Errorf("status has %d fuse_requests, want %d", len(doc.Requests), numReqs)
	}
	for op, n := range doc.Requests {
		if n < before[op] || n > after[op] {
			t.Errorf("status says %d %s, between %d and %d", n, op, before[op], after[op])
		}
	}
	if doc.Ends["READDIRPLUS"] != srv.ListingEnds()["READDIRPLUS"] {
		t.Errorf("status says %d empty READDIRPLUS, the mount %d", doc.Ends["READDIRPLUS"], srv.ListingEnds()["READDIRPLUS"])
	}

	// Warm: the kernel holds every listing and every directory's entry.
	// (The status read's RELEASE may come in the meantime: the kernel
	// sends it when the file's last reference goes.)
	before = srv.Requests()
	walkNames(t, srv.Dir())
	d = delta(before, srv.Requests())
	for _, op := range []string{"READDIRPLUS", "READDIR", "LOOKUP", "GETATTR", "OPENDIR"} {
		if d[op] != 0 {
			t.Errorf("the walk again sent %d %s (all: %v), want none", d[op], op, nonZero(d))
		}
	}

	// Names other than directories came without a node: the first stat of
	// each is its LOOKUP (.oxy/status had its own when it was read).
	status := filepath.Join(srv.Dir(), ".oxy", "status")
	before = srv.Requests()
	stated := 0
	for _, p := range l.files {
		if p == status {
			continue
		}
		if _, err := os.Lstat(p); err != nil {
			t.Fatal(err)
		}
		stated++
	}
	if d := delta(before, srv.Requests()); d["LOOKUP"] != int64(stated) {
		t.Errorf("stat of %d names READDIRPLUS gave no node sent %d LOOKUPs, want one each (all: %v)", stated, d["LOOKUP"], nonZero(d))
	}
}

// TestColdFindRequests runs find -type f over a fresh mount of a generated
// store whose larger directories hold more than glibc's smallest getdents
// buffer (32 KiB) of READDIRPLUS records: with directories reporting
// st_blksize = maxWrite, each is one READDIRPLUS with its names (more only
// past maxWrite bytes) and one empty, and find sends no LOOKUP.
func TestColdFindRequests(t *testing.T) {
	_, srv := mountGenerated(t, 3000)
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(srv.Dir(), "sig"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blksize != dirBlksize {
		t.Errorf("a directory's st_blksize is %d, want %d", st.Blksize, dirBlksize)
	}
	before, endsBefore := srv.Requests(), srv.ListingEnds()
	if err := exec.Command("find", srv.Dir(), "-type", "f").Run(); err != nil {
		t.Fatal(err)
	}
	d, ends := delta(before, srv.Requests()), delta(endsBefore, srv.ListingEnds())
	l := walkNames(t, srv.Dir()) // warm: what find read, at no request
	t.Logf("cold find of %d directories: %v, empty replies %v", len(l.dirs), nonZero(d), ends)

	// At most as many replies as the directory's records fill, each reply
	// holding all but less than one record of maxWrite bytes.
	nonEmpty, most, big := 0, 0, 0
	for _, ents := range l.dirs {
		size, largest := 0, 0
		for _, e := range ents {
			n := direntplusBytes(e.Name())
			size += n
			largest = max(largest, n)
		}
		if len(ents) > 0 {
			nonEmpty++
			most += (size + maxWrite - largest - 1) / (maxWrite - largest)
		}
		if size > 32<<10 {
			big++
		}
	}
	if big == 0 {
		t.Fatal("no directory holds more than 32 KiB of records: the store is too small to prove anything")
	}
	if d["LOOKUP"] != 0 {
		t.Errorf("find sent %d LOOKUPs: every directory it opened came with a node in a READDIRPLUS reply", d["LOOKUP"])
	}
	if d["READDIR"] != 0 {
		t.Errorf("find sent %d READDIR, want READDIRPLUS only", d["READDIR"])
	}
	if ends["READDIRPLUS"] != int64(len(l.dirs)) {
		t.Errorf("%d READDIRPLUS answered empty, want one a directory (%d)", ends["READDIRPLUS"], len(l.dirs))
	}
	full := d["READDIRPLUS"] - ends["READDIRPLUS"]
	if full < int64(nonEmpty) {
		t.Errorf("%d READDIRPLUS with names for %d directories with names", full, nonEmpty)
	}
	if !kernelAtLeast(t, 6, 16) {
		t.Skip("the kernel reads a listing a page at a time before Linux 6.16 (commit dabb90391028, \"fuse: increase readdir buffer size\")")
	}
	if full > int64(most) {
		t.Errorf("%d READDIRPLUS with names for %d directories (%d of them over 32 KiB of records), want at most %d (replies of %d bytes)", full, nonEmpty, big, most, maxWrite)
	}
}

// kernelAtLeast reports whether the running kernel is at least major.minor.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	t.Helper()
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	f := strings.FieldsFunc(b.String(), func(r rune) bool { return r < '0' || r > '9' })
	if len(f) < 2 {
		t.Fatalf("kernel release %q", b.String())
	}
	ma, _ := strconv.Atoi(f[0])
	mi, _ := strconv.Atoi(f[1])
	return ma > major || ma == major && mi >= minor
}

func nonZero(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}
