package store

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"

	"gocloud.dev/gcerrors"
	"golang.org/x/sys/unix"
)

// Path resolution of the file:// driver (file_driver.go). A key names
// exactly the file root/key, and no symbolic link is followed on any of its
// components: openat2(2) with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the
// kernel has it (Linux 5.6), else a walk of openat(2) with O_NOFOLLOW, one
// component at a time. Only the root directory itself is opened by path
// (its own path may hold symbolic links; the store is what lies beneath).

// errSymlink marks a key one of whose components is a symbolic link (or
// the key itself is): a file:// store never follows one, so a link planted
// in the store cannot hand out a file outside it.
var errSymlink = errors.New("is a symbolic link (a file:// store follows none)")

// errNotRegular marks a key that names a named pipe, socket or device.
var errNotRegular = errors.New("is not a regular file")

// fileError carries the gcerrors code of a driver error.
type fileError struct {
	code gcerrors.ErrorCode
	err  error
}

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

func fileErr(code gcerrors.ErrorCode, format string, args ...any) error {
	return &fileError{code: code, err: fmt.Errorf(format, args...)}
}

// fileErrorCode is the driver's ErrorCode.
func fileErrorCode(err error) gcerrors.ErrorCode {
	var fe *fileError
	switch {
	case errors.As(err, &fe):
		return fe.code
	case errors.Is(err, fs.ErrNotExist):
		return gcerrors.NotFound
	}
	return gcerrors.Unknown
}

// keyParts splits a key into its path components: none empty, none "." or
// "..", no NUL. A key that is not such a path cannot name a file.
func keyParts(key string) ([]string, error) {
	if key == "" || strings.IndexByte(key, 0) >= 0 {
		return nil, fileErr(gcerrors.InvalidArgument, "key %q cannot name a file", key)
	}
	parts := strings.Split(key, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fileErr(gcerrors.InvalidArgument, "key %q cannot name a file (empty, . or .. component)", key)
		}
	}
	return parts, nil
}

// openat2 use: 0 not probed yet, 1 available, 2 not (ENOSYS, or refused by
// a seccomp filter). Tests turn it off to run the openat walk.
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
		fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
		if err != nil {
			openat2State.Store(2)
		} else {
			unix.Close(fd)
			openat2State.Store(1)
		}
	}
	return openat2State.Load() == 1
}

// openBeneath opens the components parts beneath the directory dirfd with
// flags, following no symbolic link. Errors are classified (classify).
func openBeneath(dirfd int, parts []string, flags int) (int, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	rel := strings.Join(parts, "/")
	var fd int
	var err error
	if haveOpenat2() {
		how := &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		for try := 0; ; try++ {
			fd, err = unix.Openat2(dirfd, rel, how)
			// EAGAIN: a concurrent rename raced the resolution.
			if err != unix.EINTR && (err != unix.EAGAIN || try >= 8) {
				break
			}
		}
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
		fl := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
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
// on the path is errSymlink, naming the link; a missing component, or one
// that is a file where a directory is needed, is not found (no such key);
// every other error is kept (permission, I/O), never taken for "absent".
func classify(dirfd int, parts []string, op string, err error) error {
	key := strings.Join(parts, "/")
	if err == unix.ELOOP || err == unix.ENOTDIR || err == unix.EXDEV {
		if link := symlinkOnPath(dirfd, parts); link != "" {
			return &fileError{code: gcerrors.PermissionDenied, err: &fs.PathError{Op: op, Path: key, Err: fmt.Errorf("%s %w", link, errSymlink)}}
		}
	}
	switch err {
	case unix.ENOENT, unix.ENOTDIR:
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
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return strings.Join(parts[:i+1], "/")
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || i == len(parts)-1 {
			return ""
		}
		nfd, err := openatRetry(fd, p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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
		fl := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(parts)-1 {
			fl = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		}
		nfd, err := openatRetry(fd, p, fl, 0)
		if err == unix.ENOENT {
			if err = unix.Mkdirat(fd, p, 0o777); err == nil || err == unix.EEXIST {
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
		return unix.Dup(dirfd)
	}
	return fd, nil
}

// Temporary files of writes in progress: a short name in the key's own
// directory (so the rename is atomic and a 255-byte name still fits), never
// listed, and refused as a key's last component.
const tempPrefix = ".oxytmp-"

// isTempName reports whether name is a write's temporary file:
// tempPrefix then 16 lowercase hex digits.
func isTempName(name string) bool {
	if len(name) != len(tempPrefix)+16 || !strings.HasPrefix(name, tempPrefix) {
		return false
	}
	for _, c := range []byte(name[len(tempPrefix):]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// FileFault, when set by InjectFileFault, runs before the file:// driver
// reads a directory (op "readdir", path: the directory's key prefix) or
// stats a listed file (op "stat", path: the key) in a listing; an error it
// returns is what the system call returned.
var fileFault atomic.Pointer[func(op, path string) error]

// InjectFileFault is for tests: it makes every file:// listing call f
// before it reads a directory or stats a file, and fail with what f returns
// (nil: go on). It is how a test run as root, which no permission bit
// stops, makes a directory unreadable. f nil injects nothing. It returns
// the function that puts back the hook f replaced.
func InjectFileFault(f func(op, path string) error) (restore func()) {
	prev := fileFault.Swap(&f)
	return func() { fileFault.Store(prev) }
}

func injected(op, path string) error {
	if f := fileFault.Load(); f != nil && *f != nil {
		return (*f)(op, path)
	}
	return nil
}
