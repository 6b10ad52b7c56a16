package store

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"

	"gocloud.dev/gcerrors"
)

// What the file:// driver is on every OS: its errors, its keys, its
// temporary files and its fault hook for tests. The driver itself is
// file_driver.go, file_list.go and file_path.go on Linux and macOS (file
// descriptors, openat), file_windows.go on Windows.

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

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// irregularName says what a mode that is not a regular file's is.
func irregularName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "not a regular file"
}
