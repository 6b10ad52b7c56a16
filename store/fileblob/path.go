//go:build linux || darwin

package fileblob

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gocloud.dev/gcerrors"
	"golang.org/x/sys/unix"
)

// Path resolution of the file:// driver (driver.go). A key names
// exactly the file root/key, and no symbolic link is followed on any of its
// components: openat2(2) with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the
// kernel has it (Linux 5.6), else a walk of openat(2) with O_NOFOLLOW, one
// component at a time. Only the root directory itself is opened by path
// (its own path may hold symbolic links; the store is what lies beneath).

// openat2 use: 0 not probed yet, 1 available, 2 not (ENOSYS, or refused by
// a seccomp filter; never on macOS, path_darwin.go), probed once per
// process; Options.NoOpenat2 turns it off for one bucket (tests of the walk).
var (
	openat2State atomic.Int32
	openat2Probe sync.Mutex
)

func haveOpenat2() bool {
	switch openat2State.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	openat2Probe.Lock()
	defer openat2Probe.Unlock()
	if openat2State.Load() == 0 {
		if probeOpenat2() {
			openat2State.Store(1)
		} else {
			openat2State.Store(2)
		}
	}
	return openat2State.Load() == 1
}

// openBeneath opens the components parts beneath the directory dirfd with
// flags, following no symbolic link. Errors are classified (classify).
func (b *fileBucket) openBeneath(dirfd int, parts []string, flags int) (int, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	rel := strings.Join(parts, "/")
	var fd int
	var err error
	if !b.opts.NoOpenat2 && haveOpenat2() {
		fd, err = openat2Beneath(dirfd, rel, flags)
	} else {
		fd, err = walkOpen(dirfd, parts, flags)
	}
	if err != nil {
		return -1, classify(dirfd, parts, "open", err)
	}
	return fd, nil
}

// walkOpen opens parts one component at a time with O_NOFOLLOW.
func walkOpen(dirfd int, parts []string, flags int) (int, error) {
	fd := dirfd
	for i, p := range parts {
		fl := oPath | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(parts)-1 {
			fl = flags
		}
		nfd, err := openatRetry(fd, p, fl, 0)
		if fd != dirfd {
			unix.Close(fd)
		}
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	return fd, nil
}

func openatRetry(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// classify turns an open error on parts into the driver's: a symbolic link
// on the path is ErrSymlink, naming the link; a missing component, or one
// that is a file where a directory is needed, is not found (no such key);
// every other error is kept (permission, I/O), never taken for "absent".
func classify(dirfd int, parts []string, op string, err error) error {
	key := strings.Join(parts, "/")
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
		if link := symlinkOnPath(dirfd, parts); link != "" {
			return &fileError{code: gcerrors.PermissionDenied, err: &fs.PathError{Op: op, Path: key, Err: fmt.Errorf("%s %w", link, ErrSymlink)}}
		}
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return &fs.PathError{Op: op, Path: key, Err: fs.ErrNotExist}
	}
	return &fs.PathError{Op: op, Path: key, Err: err}
}

// symlinkOnPath returns the first component of parts (as a path) that is a
// symbolic link, "" if none is (or the walk stops before one).
func symlinkOnPath(dirfd int, parts []string) string {
	fd := dirfd
	defer func() {
		if fd != dirfd {
			unix.Close(fd)
		}
	}()
	for i, p := range parts {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, p, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return ""
		}
		if uint32(st.Mode)&unix.S_IFMT == unix.S_IFLNK {
			return strings.Join(parts[:i+1], "/")
		}
		if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR || i == len(parts)-1 {
			return ""
		}
		nfd, err := openatRetry(fd, p, oPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return ""
		}
		if fd != dirfd {
			unix.Close(fd)
		}
		fd = nfd
	}
	return ""
}

// mkdirBeneath opens the directory parts beneath dirfd for reading,
// creating the missing components (mode 0777 before the umask, as
// fileblob did), following no symbolic link.
func mkdirBeneath(dirfd int, parts []string) (int, error) {
	fd := dirfd
	for i, p := range parts {
		fl := oPath | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(parts)-1 {
			fl = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		}
		nfd, err := openatRetry(fd, p, fl, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(fd, p, 0o777); err == nil || errors.Is(err, unix.EEXIST) {
				nfd, err = openatRetry(fd, p, fl, 0)
			}
		}
		if fd != dirfd {
			unix.Close(fd)
		}
		if err != nil {
			cerr := classify(dirfd, parts[:i+1], "mkdir", err)
			if errors.Is(cerr, fs.ErrNotExist) {
				// A file where a directory is needed: the key cannot be written.
				cerr = &fs.PathError{Op: "mkdir", Path: strings.Join(parts[:i+1], "/"), Err: unix.ENOTDIR}
			}
			return -1, cerr
		}
		fd = nfd
	}
	if fd == dirfd {
		return unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0) // close-on-exec, as every descriptor here
	}
	return fd, nil
}

// statMtime is a stat's modification time.
func statMtime(st *unix.Stat_t) time.Time { return time.Unix(st.Mtim.Unix()) }
