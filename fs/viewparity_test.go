package fs

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestViewDirectoriesAnswerAsNodesDid: every call a user can make on the
// index tree's directories — stat, listing, xattrs, statfs, access, fsync,
// chmod, times, rename and link with a directory on either side, mkdir,
// create where nothing can be made — answers the same errno with view ids
// as with go-fuse's nodes, and costs the same FUSE operations (Ops) and
// kernel requests (Requests).
func TestViewDirectoriesAnswerAsNodesDid(t *testing.T) {
	run := func(views bool) ([]string, map[string]int64, map[string]int64) {
		_, _, srv, _ := mountFixture(t, Options{noViewIDs: !views})
		p := func(rel string) string { return srv.Dir() + "/" + rel }
		var out []string
		note := func(what string, err error) {
			var errno syscall.Errno
			if err != nil && !errors.As(err, &errno) {
				t.Fatalf("%s: %v", what, err)
			}
			out = append(out, fmt.Sprintf("%s: %d", what, errno))
		}
		buf := make([]byte, 256)
		for _, d := range []string{"sig", "sig/ab", "sig/ab/12cd34", "seal/ab/12cd34"} {
			_, err := os.Stat(p(d))
			note("stat "+d, err)
			_, err = os.ReadDir(p(d))
			note("readdir "+d, err)
			_, err = syscall.Getxattr(p(d), "user.x", buf)
			note("getxattr user "+d, err)
			_, err = syscall.Getxattr(p(d), "security.selinux", buf)
			note("getxattr security "+d, err)
			n, err := syscall.Listxattr(p(d), buf)
			note(fmt.Sprintf("listxattr %s %d", d, n), err)
			note("setxattr "+d, syscall.Setxattr(p(d), "user.x", []byte("x"), 0))
			note("setxattr oxy "+d, syscall.Setxattr(p(d), xattrKey, []byte("x"), 0))
			note("removexattr "+d, syscall.Removexattr(p(d), "user.x"))
			var fs syscall.Statfs_t
			err = syscall.Statfs(p(d), &fs)
			note(fmt.Sprintf("statfs %s %d %d", d, fs.Bsize, fs.Namelen), err)
			note("access "+d, syscall.Access(p(d), 7))
			if dir, err := os.Open(p(d)); err == nil {
				note("fsync "+d, dir.Sync())
				dir.Close()
			} else {
				note("open "+d, err)
			}
			note("chmod "+d, os.Chmod(p(d), 0o700))
			note("chtimes "+d, os.Chtimes(p(d), time.Unix(1, 0), time.Unix(1, 0)))
			note("truncate "+d, os.Truncate(p(d), 0))
			note("rename into "+d, os.Rename(p("by-signer"), p(d)+"/x"))
			note("rename "+d, os.Rename(p(d), p("sig/ab/99")+"/x"))
			note("link into "+d, os.Link(p("sig/ab/99/alice"), p(d)+"/x"))
			note("symlink "+d, os.Symlink("x", p(d)+"/y"))
			note("rmdir "+d, syscall.Rmdir(p(d)))
			note("unlink in "+d, os.Remove(p(d)+"/nothing"))
			note("mkdir bad "+d, os.Mkdir(p(d)+"/XY", 0o755))
			// A name no level holds (a line feed): nothing is created, so
			// no FLUSH, RELEASE or notice comes after, out of step.
			f, err := os.OpenFile(p(d)+"/bad\nname", os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				f.Close()
			}
			note("create bad "+d, err)
			_, err = os.Stat(p(d) + "/nothing")
			note("stat nothing in "+d, err)
		}
		note("mkdir hh", os.Mkdir(p("sig/77"), 0o755))
		note("mkdir obj", os.Mkdir(p("sig/77/7777"), 0o755))
		note("mkdir again", os.Mkdir(p("sig/77/7777"), 0o755))
		_, err := os.ReadDir(p("sig/77/7777"))
		note("readdir mkdir's", err)
		return out, srv.Ops(), srv.Requests()
	}
	withViews, opsViews, reqsViews := run(true)
	nodes, opsNodes, reqsNodes := run(false)
	for i := range max(len(withViews), len(nodes)) {
		if i >= len(withViews) || i >= len(nodes) || withViews[i] != nodes[i] {
			t.Errorf("with view ids %q, with nodes %q", at(withViews, i), at(nodes, i))
		}
	}
	if !maps.Equal(opsViews, opsNodes) {
		t.Errorf("operations with view ids %v, with nodes %v", opsViews, opsNodes)
	}
	// FORGETs come when the kernel evicts a node: not in step with calls.
	delete(reqsViews, "FORGET")
	delete(reqsNodes, "FORGET")
	if !maps.Equal(reqsViews, reqsNodes) {
		t.Errorf("requests with view ids %v, with nodes %v", reqsViews, reqsNodes)
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(none)"
}
