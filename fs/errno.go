package fs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"

	"github.com/oxyfs/oxyfs/index"
)

// errno maps an index or store error to the errno a caller sees, by its
// class (index.Classify, which serve's statuses follow too), logging the
// cause of every EFBIG, EAGAIN and EIO (the caller logs each failure once:
// it is not retried). An error of no class of its own (ClassUnavailable)
// that wraps ENOSPC or EDQUOT — a file:// store's filesystem is full, or
// its quota spent — is that errno (storeFull), not EIO: the application
// sees that the disk is full.
func (m *Server) errno(op, p string, err error) syscall.Errno {
	e := errnoOf(err)
	if e == syscall.EFBIG || e == syscall.EAGAIN || e == syscall.EIO {
		m.failed(op, p, "", err, e)
	}
	return e
}

// errnoOf is the errno of err, as errno says, without a word.
func errnoOf(err error) syscall.Errno {
	class := index.Classify(err)
	if class == index.ClassNone {
		return 0
	}
	e, ok := classErrno[class]
	if !ok {
		e = syscall.EIO
	}
	if class == index.ClassUnavailable {
		if full := storeFull(err); full != 0 {
			e = full
		}
	}
	return e
}

// failed logs that operation op on /p failed with errno e because of err:
// "write /sig/ab/cd/alice: put …: no space left on device (ENOSPC)", at
// ERROR for EIO (the store or the mount failed) and WARN for any other
// errno (the caller was refused, or the store is full), with the entry's
// key (when there is one) and the errno as attributes (Options.Log).
func (m *Server) failed(op, p, key string, err error, e syscall.Errno) {
	level := slog.LevelWarn
	if e == syscall.EIO {
		level = slog.LevelError
	}
	msg := fmt.Sprintf("%s /%s: %v (%s)", op, p, err, errnoString(e))
	if key == "" {
		m.event(level, msg, slog.String("errno", errnoString(e)))
		return
	}
	m.event(level, msg, slog.String("entry", key), slog.String("errno", errnoString(e)))
}

// event logs one event at level: to Options.Log with attrs, or, without
// one, to Logf as its message alone (which says what attrs do).
func (m *Server) event(level slog.Level, msg string, attrs ...slog.Attr) {
	if m.log != nil {
		m.log.LogAttrs(context.Background(), level, msg, attrs...)
		return
	}
	m.logf("oxyfs: %s", msg)
}

// classErrno is the errno of each class of error (index.Classify) but
// ClassNone; a class not listed is EIO.
var classErrno = map[index.Class]syscall.Errno{
	index.ClassNotFound: syscall.ENOENT,
	index.ClassInvalid:  syscall.EINVAL,
	index.ClassReadOnly: syscall.EROFS,
	index.ClassNotDir:   syscall.ENOTDIR,
	index.ClassTooLarge: syscall.EFBIG,
	index.ClassBusy:     syscall.EAGAIN,
	// The request's context was done: the kernel interrupted it, or an
	// unmount cut its store reads short (reqctx.go). EINTR tells the
	// caller its call was interrupted, nothing failed (not logged).
	index.ClassCanceled: syscall.EINTR,
}

// storeFull is ENOSPC or EDQUOT if err wraps it (the store's filesystem
// is full, or the quota spent), else 0.
func storeFull(err error) syscall.Errno {
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		if errors.Is(err, e) {
			return e
		}
	}
	return 0
}

// errnoString names e as C does ("ENOSPC"), or, for an errno of no name
// here, as its message.
func errnoString(e syscall.Errno) string {
	if s, ok := errnoName[e]; ok {
		return s
	}
	return e.Error()
}

// errnoName names the errnos a failed write or request may get.
var errnoName = map[syscall.Errno]string{
	syscall.EFBIG: "EFBIG", syscall.EAGAIN: "EAGAIN", syscall.EIO: "EIO",
	syscall.ENOSPC: "ENOSPC", syscall.EDQUOT: "EDQUOT", syscall.EROFS: "EROFS",
	syscall.EPERM: "EPERM", syscall.EINVAL: "EINVAL", syscall.EEXIST: "EEXIST",
	syscall.ENOENT: "ENOENT", syscall.ENOTDIR: "ENOTDIR", syscall.ESTALE: "ESTALE",
	syscall.EINTR: "EINTR",
}

// refused is the errno of a write the mount never does: EROFS on a read-only
// mount, else EPERM.
func (m *Server) refused() syscall.Errno {
	if m.ro {
		return syscall.EROFS
	}
	return syscall.EPERM
}
