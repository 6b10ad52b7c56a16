package fs

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestNoXattrOutsideTheUserNamespace: an attribute of another namespace
// (security.*, system.*, trusted.*) is ENOTSUP on every node — this file
// system keeps none — and a user.* name a node lacks is ENODATA.
func TestNoXattrOutsideTheUserNamespace(t *testing.T) {
	f, _, srv, _ := mountFixture(t, Options{})
	e := f.all()[0]
	for _, p := range []string{srv.path(e), srv.Dir() + "/" + e.Kind.String(), srv.Dir()} {
		for _, name := range []string{"security.selinux", "system.posix_acl_access", "trusted.x"} {
			if _, err := getxattr(p, name); !errors.Is(err, syscall.ENOTSUP) {
				t.Errorf("%s: getxattr %s: %v, want ENOTSUP", p, name, err)
			}
		}
		if _, err := getxattr(p, "user.other"); !errors.Is(err, syscall.ENODATA) {
			t.Errorf("%s: getxattr user.other: %v, want ENODATA", p, err)
		}
	}
}

// TestLsLongAsksNoXattrPerName: ls -l asks security.selinux and
// system.posix_acl_access of every name it shows, and stops asking a
// device that answered ENOTSUP once. Answered ENODATA, they cost two FUSE
// round trips a name (54,789 in an ls -lR of 10k ids).
func TestLsLongAsksNoXattrPerName(t *testing.T) {
	_, _, srv, _ := mountFixture(t, Options{})
	before := srv.Requests()
	out, err := exec.Command("ls", "-lR", srv.Dir()+"/sig").CombinedOutput()
	if err != nil {
		t.Fatalf("ls -lR: %v\n%s", err, out)
	}
	d := delta(before, srv.Requests())
	names := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "-") || strings.HasPrefix(l, "d") || strings.HasPrefix(l, "l") {
			names++
		}
	}
	if names < 8 {
		t.Fatalf("ls -lR showed %d names: too few to tell one GETXATTR a name from one a device; fix the fixture\n%s", names, out)
	}
	// Two attributes, asked until the first ENOTSUP of each.
	if d["GETXATTR"] > 2 {
		t.Errorf("ls -lR of %d names sent %d GETXATTR, want at most 2 (one ENOTSUP of each attribute ends its questions)", names, d["GETXATTR"])
	}
	t.Logf("ls -lR of %d names: %v", names, nonZero(d))
}
