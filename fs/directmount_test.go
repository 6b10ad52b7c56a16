package fs

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestRootMountsWithoutFusermount: as root, a mount needs no fusermount
// helper (Debian's fuse3 is not installed on a fresh machine). The test runs
// itself again in a private mount namespace (unshare -m) where every
// fusermount3 and fusermount is hidden under /dev/null, so no helper can run;
// the child then mounts, reads through the mount, sees an unmount of the
// busy mount refused as busy (go-fuse's fallback to /bin/fusermount hid
// EBUSY), and unmounts.
func TestRootMountsWithoutFusermount(t *testing.T) {
	if os.Getenv("OXYFS_TEST_NO_FUSERMOUNT") != "" {
		mountWithoutHelper(t)
		return
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root; this test checks root's direct mount")
		}
		t.Skip("mounting without fusermount needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux) is needed to hide fusermount: %v", err)
	}
	script := `for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
	for f in "$d/fusermount3" "$d/fusermount"; do
		[ -e "$f" ] && mount --bind /dev/null "$f"
	done
done
exec "$@"`
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c", script, "sh",
		os.Args[0], "-test.run", "^TestRootMountsWithoutFusermount$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "OXYFS_TEST_NO_FUSERMOUNT=1", "OXYFS_REQUIRE=fuse") // a mount that fails must fail the child, not skip
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the mount in a namespace without fusermount failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func mountWithoutHelper(t *testing.T) {
	for _, name := range []string{"fusermount3", "fusermount", "/bin/fusermount3", "/bin/fusermount"} {
		if p, err := exec.LookPath(name); err == nil {
			t.Fatalf("%s is still runnable: the test does not test what it says", p)
		}
	}
	st := storefixture.NewMem(t)
	e := format.Entry{Kind: format.KindSig, Object: "ab12", Value: "alice"}
	if err := st.Put(t.Context(), e.Key(), []byte("sig")); err != nil {
		t.Fatal(err)
	}
	srv, _ := testMount(t, openIndex(t, st), Options{})
	got, err := os.ReadFile(srv.path(e))
	if err != nil || string(got) != "sig" {
		t.Fatalf("read through a mount made without fusermount: %q %v", got, err)
	}
	fh, err := os.Open(srv.path(e))
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Unmount()
	fh.Close()
	if !errors.Is(err, ErrMountBusy) || !strings.Contains(err.Error(), "umount -l "+srv.Dir()) {
		t.Errorf("unmount with a file open, without fusermount: %v; want ErrMountBusy and the hint umount -l %s", err, srv.Dir())
	} else {
		t.Log(err)
	}
}
