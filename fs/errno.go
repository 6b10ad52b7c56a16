package fs

import (
	"errors"
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
	if e == syscall.EFBIG || e == syscall.EAGAIN || e == syscall.EIO {
		m.logf("oxyfs: %s /%s: %v (%s)", op, p, err, errnoName[e])
	}
	return e
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

// errnoName names the errnos whose cause the mount logs.
var errnoName = map[syscall.Errno]string{syscall.EFBIG: "EFBIG", syscall.EAGAIN: "EAGAIN", syscall.EIO: "EIO"}

// refused is the errno of a write the mount never does: EROFS on a read-only
// mount, else EPERM.
func (m *Server) refused() syscall.Errno {
	if m.ro {
		return syscall.EROFS
	}
	return syscall.EPERM
}
