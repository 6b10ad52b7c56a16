package fs

import (
	"bufio"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// unmountDirect is umount(2) of dir, tried a few times while it is busy:
// the kernel may not yet have seen the release of a file just closed (as
// go-fuse's own unmount does).
func unmountDirect(dir string) error {
	delay := 5 * time.Millisecond
	var err error
	for try := 0; try < 5; try++ {
		if err = syscall.Unmount(dir, 0); !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(delay)
		delay *= 2
	}
	if err != nil {
		return &os.PathError{Op: "umount", Path: dir, Err: err}
	}
	return nil
}

// unmountCommand is the command that unmounts dir for this user: umount for
// root (which needs no fusermount helper), else fusermount3 -u.
func unmountCommand(dir string) string {
	if os.Geteuid() == 0 {
		return "umount " + dir
	}
	return "fusermount3 -u " + dir
}

// preflight turns the usual reasons a mount fails into clear errors.
func preflight(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return fmt.Errorf("%w: %s is a FUSE mount whose server is gone (transport endpoint is not connected); unmount it first: %s", ErrMountBusy, dir, unmountCommand(dir))
	case err != nil:
		return fmt.Errorf("mountpoint: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("mountpoint %s is not a directory", dir)
	}
	if mounted, _ := isMountPoint(dir); mounted {
		return fmt.Errorf("%w: %s is already a mount point; unmount it first (%s)", ErrMountBusy, dir, unmountCommand(dir))
	}
	return CheckFUSE()
}

// CheckFUSE reports whether this process can mount at all: /dev/fuse opens,
// and, unless it runs as root (which mounts with mount(2) directly), a
// fusermount3 helper is installed. The demo calls it before generating its
// store, so a machine without FUSE learns it before any work is done.
func CheckFUSE() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return fmt.Errorf("%w: no /dev/fuse: load the fuse module (modprobe fuse), or give the container the device (--device /dev/fuse --cap-add SYS_ADMIN)", ErrNoFUSE)
	case errors.Is(err, iofs.ErrPermission):
		return fmt.Errorf("%w: %w: cannot open /dev/fuse (%w): run as root or give your user access to the device", ErrNoFUSE, iofs.ErrPermission, err)
	case err != nil:
		return fmt.Errorf("%w: open /dev/fuse: %w", ErrNoFUSE, err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			if _, err := exec.LookPath("fusermount"); err != nil {
				return fmt.Errorf("%w: neither fusermount3 nor fusermount is in PATH: install Debian's fuse3 package (apt-get install fuse3), or mount as root, which needs no helper", ErrNoFUSE)
			}
		}
	}
	return nil
}

// isMountPoint reports whether dir is the mount point of some mount, from
// /proc/self/mountinfo (field 5, octal escapes for space, tab, newline, \).
func isMountPoint(dir string) (bool, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false, err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMountinfo(fields[4]) == real {
			return true, nil
		}
	}
	return false, sc.Err()
}

func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			v := 0
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + int(c-'0')
			}
			if ok {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountErr names what a failed mount most likely lacked.
func mountErr(err error) error {
	s := err.Error()
	switch {
	case strings.Contains(s, "Permission denied") || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES):
		return fmt.Errorf("%w: %w (mounting needs root, or fusermount3 with access to /dev/fuse; --allow-other needs user_allow_other in /etc/fuse.conf)", iofs.ErrPermission, err)
	case strings.Contains(s, "busy") || errors.Is(err, syscall.EBUSY):
		return fmt.Errorf("%w: %w", ErrMountBusy, err)
	case strings.Contains(s, "fusermount") && strings.Contains(s, "not found"):
		return fmt.Errorf("%w: %w", ErrNoFUSE, err)
	}
	return err
}
