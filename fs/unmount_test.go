package fs

import (
	"errors"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// TestUnmountReturnsOnceTheConnectionIsClosed: Unmount unmounts in a
// helper process and returns once the kernel has closed the mount's
// connection and freed the mountpoint, without waiting for the helper to
// return from umount(2), in which the kernel frees every inode and dentry
// it kept of the mount: after a walk of a million entries, the seconds an
// unmount used to take (unmount.go). The helper here unmounts, then waits
// on a pipe the test holds: Unmount must return while it still waits.
// Before, the unmount was done in the mount's own process (or by a helper
// it waited for), so the mount exited only after the kernel's clean-up.
func TestUnmountReturnsOnceTheConnectionIsClosed(t *testing.T) {
	f := buildFixture(t)
	ix := openIndex(t, f.st)
	srv, _ := testMount(t, ix, Options{})
	e := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	if _, err := os.Stat(srv.path(e)); err != nil { // the kernel holds nodes
		t.Fatal(err)
	}
	release, hold, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer release.Close()
	defer hold.Close()
	var helpers []*exec.Cmd
	srv.helper = func(dir string) (*exec.Cmd, string) {
		h, hint := unmountHelper(dir)
		if h == nil {
			t.Fatal("no unmount helper (umount or fusermount3) on this machine")
		}
		// The real unmount, then a wait for the test to let go.
		cmd := exec.Command("sh", append([]string{"-c", `"$@" && read -r _`, "sh"}, h.Args...)...)
		cmd.Stdin = release
		helpers = append(helpers, cmd)
		return cmd, hint
	}
	if err := srv.Unmount(); err != nil {
		t.Fatalf("unmount: %v", err)
	}
	if len(helpers) != 1 {
		t.Fatalf("%d helpers ran, want 1", len(helpers))
	}
	if mounted, err := isMountPoint(srv.Dir()); err != nil || mounted {
		t.Errorf("after Unmount, %s is still a mount point (%v)", srv.Dir(), err)
	}
	select {
	case <-srv.served:
	default:
		t.Error("Unmount returned before the serve loops ended")
	}
	if state := procState(t, helpers[0].Process.Pid); state == "" || state == "Z" {
		t.Errorf("the helper has exited (state %q): Unmount waited for it", state)
	}
	hold.Close() // the helper reads EOF and exits; its reaper goroutine waits for it
}

// procState is the state letter of process pid (/proc/PID/stat), "" when
// there is no such process.
func procState(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return ""
		}
		t.Fatal(err)
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		t.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	return s[i+2 : i+3]
}
