//go:build linux || darwin

package fileblob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
	"golang.org/x/sys/unix"
)

// openRoot opens the root directory (following links in its own path)
// with mode oPath, or unix.O_RDONLY for a listing.
func (b *fileBucket) openRoot(mode int) (int, error) {
	fd, err := unix.Open(b.root, mode|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open store directory", Path: b.root, Err: err}
	}
	return fd, nil
}

// statKey opens key with flags and checks it is a regular file.
func (b *fileBucket) statKey(key string, flags int) (int, *unix.Stat_t, error) {
	parts, err := keyParts(key)
	if err != nil {
		return -1, nil, err
	}
	root, err := b.openRoot(oPath)
	if err != nil {
		return -1, nil, err
	}
	defer unix.Close(root)
	fd, err := b.openBeneath(root, parts, flags)
	if err != nil {
		return -1, nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, nil, &fs.PathError{Op: "stat", Path: key, Err: err}
	}
	if err := regular(key, uint32(st.Mode)); err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	return fd, &st, nil
}

// regular is nil for a regular file: a directory is no key (not found), a
// symbolic link or anything else is refused.
func regular(key string, mode uint32) error {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFDIR:
		return &fs.PathError{Op: "open", Path: key, Err: fs.ErrNotExist}
	case unix.S_IFLNK:
		return &fileError{code: gcerrors.PermissionDenied, err: &fs.PathError{Op: "open", Path: key, Err: fmt.Errorf("%s %w", key, ErrSymlink)}}
	}
	return &fileError{code: gcerrors.PermissionDenied, err: &fs.PathError{Op: "open", Path: key, Err: ErrNotRegular}}
}

// Attributes implements driver.Bucket (a HEAD: opens no file for reading).
func (b *fileBucket) Attributes(_ context.Context, key string) (*driver.Attributes, error) {
	fd, st, err := b.statKey(key, oPath)
	if err != nil {
		return nil, err
	}
	unix.Close(fd)
	mt := statMtime(st)
	return &driver.Attributes{
		ContentType: "application/octet-stream",
		ModTime:     mt,
		Size:        st.Size,
		ETag:        fmt.Sprintf("\"%x-%x\"", mt.UnixNano(), st.Size),
	}, nil
}

// NewRangeReader implements driver.Bucket. The file is opened non-blocking
// (a named pipe must not hang the open) and read only if regular.
func (b *fileBucket) NewRangeReader(_ context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	fd, st, err := b.statKey(key, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: key, Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(b.root, key))
	if opts.BeforeRead != nil {
		if err := opts.BeforeRead(asFile(f)); err != nil {
			f.Close()
			return nil, err
		}
	}
	var r io.Reader = f
	if offset > 0 || length >= 0 {
		if length < 0 {
			length = max(st.Size-offset, 0)
		}
		r = io.NewSectionReader(f, offset, length)
	}
	return &fileReader{f: f, r: r, attrs: driver.ReaderAttributes{
		ContentType: "application/octet-stream",
		ModTime:     statMtime(st),
		Size:        st.Size,
	}}, nil
}

// NewTypedWriter implements driver.Bucket: a temporary file in the key's
// directory (created as needed, through no symbolic link), renamed over the
// key on Close.
func (b *fileBucket) NewTypedWriter(ctx context.Context, key, _ string, opts *driver.WriterOptions) (driver.Writer, error) {
	parts, err := keyParts(key)
	if err != nil {
		return nil, err
	}
	name := parts[len(parts)-1]
	if IsTempName(name) {
		return nil, fileErr(gcerrors.InvalidArgument, "key %q: %q is the name of a temporary file", key, name)
	}
	root, err := b.openRoot(unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	dir, err := mkdirBeneath(root, parts[:len(parts)-1])
	if err != nil {
		return nil, err
	}
	var tmp string
	var fd int
	for {
		var rnd [8]byte
		rand.Read(rnd[:])
		tmp = TempPrefix + hex.EncodeToString(rnd[:])
		fd, err = openatRetry(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o666)
		if !errors.Is(err, unix.EEXIST) {
			break
		}
	}
	if err != nil {
		unix.Close(dir)
		return nil, &fs.PathError{Op: "create temporary file for", Path: key, Err: err}
	}
	w := &fileWriter{ctx: ctx, key: key, name: name, tmp: tmp, dir: dir, f: os.NewFile(uintptr(fd), tmp), ifNotExist: opts.IfNotExist}
	if opts.BeforeWrite != nil {
		if err := opts.BeforeWrite(asFile(w.f)); err != nil {
			w.abort()
			return nil, err
		}
	}
	return w, nil
}

// fileWriter is one write: used by one goroutine (gocloud's Writer), so
// its fields need no lock.
type fileWriter struct {
	ctx        context.Context
	key, name  string
	tmp        string
	dir        int // the key's directory, open for reading (fsync)
	f          *os.File
	ifNotExist bool
	failed     error // the first failed Write (or Upload's reader): Close abandons the write
	closed     bool  // f was closed (by Close, before publish or abort)
}

// abort removes the temporary file.
func (w *fileWriter) abort() {
	if !w.closed {
		w.f.Close()
	}
	unix.Unlinkat(w.dir, w.tmp, 0)
	unix.Close(w.dir)
}

// publish links (create-only) or renames the closed temporary file, all of
// whose bytes were written and synced, to the key's name and syncs the
// directory. A failed link or rename removes the temporary file and leaves
// the key as it was.
func (w *fileWriter) publish() error {
	var err error
	if w.ifNotExist {
		err = unix.Linkat(w.dir, w.tmp, w.dir, w.name, 0)
		unix.Unlinkat(w.dir, w.tmp, 0)
	} else {
		err = unix.Renameat(w.dir, w.tmp, w.dir, w.name)
	}
	defer unix.Close(w.dir)
	switch {
	case errors.Is(err, unix.EEXIST) && w.ifNotExist:
		return fileErr(gcerrors.FailedPrecondition, "create %q: key already exists", w.key)
	case err != nil:
		unix.Unlinkat(w.dir, w.tmp, 0)
		return &fs.PathError{Op: "write", Path: w.key, Err: err}
	}
	if err := unix.Fsync(w.dir); err != nil {
		return &fs.PathError{Op: "sync directory of", Path: w.key, Err: err}
	}
	return nil
}

// Delete implements driver.Bucket: unlinks the key's own name (a symbolic
// link itself, never its target), reached through no symbolic link.
func (b *fileBucket) Delete(_ context.Context, key string, opts *driver.DeleteOptions) error {
	if opts.BeforeDelete != nil {
		if err := opts.BeforeDelete(func(any) bool { return false }); err != nil {
			return err
		}
	}
	parts, err := keyParts(key)
	if err != nil {
		return err
	}
	root, err := b.openRoot(oPath)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	dir := root
	if len(parts) > 1 {
		if dir, err = b.openBeneath(root, parts[:len(parts)-1], oPath|unix.O_DIRECTORY); err != nil {
			return err
		}
		defer unix.Close(dir)
	}
	name := parts[len(parts)-1]
	if IsTempName(name) {
		return &fs.PathError{Op: "delete", Path: key, Err: fs.ErrNotExist}
	}
	switch err := unix.Unlinkat(dir, name, 0); err {
	case nil:
		return nil
	case unix.ENOENT, unix.EISDIR:
		return &fs.PathError{Op: "delete", Path: key, Err: fs.ErrNotExist}
	default:
		return &fs.PathError{Op: "delete", Path: key, Err: err}
	}
}

// listStart opens the directory a listing starts from (list.go): the
// root, or the deepest directory start names beneath it; nil when there is
// none (no key can be listed). done closes what it opened.
func (b *fileBucket) listStart(l *fileLister, start string) (d listDir, done func(), err error) {
	root, err := b.openRoot(unix.O_RDONLY)
	if err != nil {
		return nil, nil, err
	}
	if start == "" {
		return unixDir{l: l, fd: root}, func() { unix.Close(root) }, nil
	}
	defer unix.Close(root)
	parts, err := keyParts(strings.TrimSuffix(start, "/"))
	if err != nil {
		return nil, nil, nil // no file can have such a key
	}
	dir, err := b.openBeneath(root, parts, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list %q: %w", l.prefix, err)
	}
	return unixDir{l: l, fd: dir}, func() { unix.Close(dir) }, nil
}
