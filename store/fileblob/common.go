package fileblob

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"gocloud.dev/gcerrors"
)

// What the file:// driver is on every OS: its errors, its keys, its
// temporary files and its fault hook for tests (Options.Fault). The driver itself is
// driver.go, list.go and path.go on Linux and macOS (file
// descriptors, openat), driver_windows.go on Windows.

// ErrSymlink marks a key one of whose components is a symbolic link (or
// the key itself is): a file:// store never follows one, so a link planted
// in the store cannot hand out a file outside it.
var ErrSymlink = errors.New("is a symbolic link (a file:// store follows none)")

// ErrNotRegular marks a key that names a named pipe, socket or device.
var ErrNotRegular = errors.New("is not a regular file")

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

// TempPrefix starts the name of a write's temporary file: a short name in
// the key's own directory (so the rename is atomic and a 255-byte name
// still fits), never listed, and refused as a key's last component.
const TempPrefix = ".oxytmp-"

// IsTempName reports whether name is a write's temporary file:
// TempPrefix then 16 lowercase hex digits.
func IsTempName(name string) bool {
	if len(name) != len(TempPrefix)+16 || !strings.HasPrefix(name, TempPrefix) {
		return false
	}
	for _, c := range []byte(name[len(TempPrefix):]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// injected is Options.Fault of the listing's bucket, if any.
func (l *fileLister) injected(op, path string) error {
	if l.fault != nil {
		return l.fault(op, path)
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

// IrregularName says what a mode that is not a regular file's is.
func IrregularName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return fmt.Sprintf("directory deeper than %d levels", MaxDepth)
	}
	return "not a regular file"
}
