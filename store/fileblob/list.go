//go:build linux || darwin

package fileblob

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gocloud.dev/blob/driver"
	"golang.org/x/sys/unix"
)

// unixDir is a directory of a listing walk on unix: its descriptor.
type unixDir struct {
	l  *fileLister
	fd int
}

func (d unixDir) entries(dirKey string) ([]fileDirent, error) { return d.l.readDir(d.fd, dirKey) }

func (d unixDir) sub(name, p string) (listDir, func(), error) {
	fd, err := d.l.openDir(d.fd, name, p)
	if err != nil {
		return nil, nil, err
	}
	return unixDir{l: d.l, fd: fd}, func() { unix.Close(fd) }, nil
}

func (d unixDir) object(name, key string) (*driver.ListObject, error) {
	var st unix.Stat_t
	if err := fstatatRetry(d.fd, name, &st); err != nil {
		return nil, listErr("stat", key, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return nil, listErr("stat", key, unix.ENOENT) // replaced by a directory meanwhile: list again
	}
	mode := fileMode(uint32(st.Mode))
	obj := &driver.ListObject{Key: key, ModTime: statMtime(&st), AsFunc: fileEntryMode(mode)}
	if mode.IsRegular() {
		obj.Size = st.Size
	}
	return obj, nil
}

// openDir opens the directory name in dirfd for reading, not following a
// symbolic link.
func (l *fileLister) openDir(dirfd int, name, p string) (int, error) {
	fd, err := openatRetry(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		err = unix.ENOENT // replaced meanwhile: list again
	}
	if err != nil {
		return -1, listErr("open", strings.TrimSuffix(p, "/"), err)
	}
	return fd, nil
}

// readDir reads every entry of dirfd (keys prefix dirKey) but this
// driver's temporary files, sorted in key order. Any error fails it.
func (l *fileLister) readDir(dirfd int, dirKey string) ([]fileDirent, error) {
	if err := l.injected("readdir", dirKey); err != nil {
		return nil, &fs.PathError{Op: "read directory", Path: dirKey, Err: err}
	}
	dup, err := unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0) // close-on-exec: never inherited by a child (a fusermount helper)
	if err != nil {
		return nil, &fs.PathError{Op: "read directory", Path: dirKey, Err: err}
	}
	f := os.NewFile(uintptr(dup), filepath.Join(l.root, dirKey))
	des, err := f.ReadDir(-1)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, &fs.PathError{Op: "read directory", Path: dirKey, Err: unwrapPathErr(err)}
	}
	ents := make([]fileDirent, 0, len(des))
	for _, de := range des {
		e := fileDirent{name: de.Name(), dir: de.IsDir(), sort: de.Name()}
		if e.dir {
			e.sort += "/"
		} else if IsTempName(e.name) {
			continue
		}
		ents = append(ents, e)
	}
	slices.SortFunc(ents, func(a, b fileDirent) int { return strings.Compare(a.sort, b.sort) })
	return ents, nil
}

func fstatatRetry(dirfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

// listErr is a listing's error: a name that vanished under the listing is
// not found (the store lists again); any other error fails the listing.
func listErr(op, key string, err error) error {
	if errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: op, Path: key, Err: fs.ErrNotExist}
	}
	return &fs.PathError{Op: op, Path: key, Err: err}
}

// fileMode converts a stat mode.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	return mode
}
