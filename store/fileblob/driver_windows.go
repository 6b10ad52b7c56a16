package fileblob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
	"golang.org/x/sys/windows"
)

// The file:// driver on Windows. Windows has no openat(2): a key's path is
// checked one component at a time with os.Lstat, and no component may be a
// reparse point (a symbolic link, a junction, a mount point or any other
// kind: FILE_ATTRIBUTE_REPARSE_POINT), the Windows form of "no symbolic
// link is followed". The file is then opened with
// FILE_FLAG_OPEN_REPARSE_POINT (a link put there after the check is opened
// itself, never its target) and must be the file the check saw
// (os.SameFile). A directory swapped for a junction between the check and
// the open is not caught as openat(2) catches it on Linux and macOS: what
// is checked is the state at the check.
//
// A key component holding \ or : cannot name a file here (: would name an
// alternate data stream). Writes sync the file; Windows syncs no directory.

// fileURLPath is the directory a file:// URL names: file:///C:/store is
// C:\store (the path's leading / before a drive letter dropped), and
// file:///store is \store on the current drive.
func fileURLPath(u *url.URL) string {
	p := u.Path
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' && ('A' <= p[1] && p[1] <= 'Z' || 'a' <= p[1] && p[1] <= 'z') {
		p = p[1:]
	}
	return filepath.FromSlash(p)
}

// winKeyParts is keyParts, refusing components Windows would read as more
// than one name.
func winKeyParts(key string) ([]string, error) {
	parts, err := keyParts(key)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		if strings.ContainsAny(p, `\:`) {
			return nil, fileErr(gcerrors.InvalidArgument, "key %q cannot name a file on Windows (\\ or : in a component)", key)
		}
	}
	return parts, nil
}

// isReparse reports whether fi (from os.Lstat) is a reparse point.
func isReparse(fi fs.FileInfo) bool {
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		return true
	}
	d, ok := fi.Sys().(*syscall.Win32FileAttributeData)
	return ok && d.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0
}

// RefuseReparse fails if the file p exists and is a reparse point.
func RefuseReparse(p string) error {
	fi, err := os.Lstat(p)
	if err == nil && isReparse(fi) {
		return &fs.PathError{Op: "open", Path: p, Err: ErrSymlink}
	}
	return nil
}

// resolve checks each component of parts beneath the root (none a reparse
// point, all but the last a directory) and returns the path and the last
// component's Lstat.
func (b *fileBucket) resolve(op string, parts []string) (string, fs.FileInfo, error) {
	key := strings.Join(parts, "/")
	p := b.root
	var fi fs.FileInfo
	for i, c := range parts {
		p = filepath.Join(p, c)
		var err error
		if fi, err = os.Lstat(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", nil, &fs.PathError{Op: op, Path: key, Err: fs.ErrNotExist}
			}
			return "", nil, &fs.PathError{Op: op, Path: key, Err: unwrapPathErr(err)}
		}
		if isReparse(fi) {
			link := strings.Join(parts[:i+1], "/")
			return "", nil, &fileError{code: gcerrors.PermissionDenied, err: &fs.PathError{Op: op, Path: key, Err: fmt.Errorf("%s %w", link, ErrSymlink)}}
		}
		if i < len(parts)-1 && !fi.IsDir() {
			return "", nil, &fs.PathError{Op: op, Path: key, Err: fs.ErrNotExist}
		}
	}
	return p, fi, nil
}

// statKey checks key names a regular file and returns its path and Lstat.
func (b *fileBucket) statKey(key string) (string, fs.FileInfo, error) {
	parts, err := winKeyParts(key)
	if err != nil {
		return "", nil, err
	}
	p, fi, err := b.resolve("open", parts)
	if err != nil {
		return "", nil, err
	}
	switch {
	case fi.IsDir():
		return "", nil, &fs.PathError{Op: "open", Path: key, Err: fs.ErrNotExist}
	case !fi.Mode().IsRegular():
		return "", nil, &fileError{code: gcerrors.PermissionDenied, err: &fs.PathError{Op: "open", Path: key, Err: ErrNotRegular}}
	}
	return p, fi, nil
}

// Attributes implements driver.Bucket (a HEAD: opens no file).
func (b *fileBucket) Attributes(_ context.Context, key string) (*driver.Attributes, error) {
	_, fi, err := b.statKey(key)
	if err != nil {
		return nil, err
	}
	mt := fi.ModTime()
	return &driver.Attributes{
		ContentType: "application/octet-stream",
		ModTime:     mt,
		Size:        fi.Size(),
		ETag:        fmt.Sprintf("\"%x-%x\"", mt.UnixNano(), fi.Size()),
	}, nil
}

// openNoReparse opens p for reading, a reparse point itself rather than
// its target, sharing delete (a write may rename over a file being read).
func openNoReparse(p string) (*os.File, error) {
	name, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return nil, err
	}
	h, err := windows.CreateFile(name, windows.GENERIC_READ,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(h), p), nil
}

// NewRangeReader implements driver.Bucket.
func (b *fileBucket) NewRangeReader(_ context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	p, fi, err := b.statKey(key)
	if err != nil {
		return nil, err
	}
	f, err := openNoReparse(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fs.ErrNotExist
		}
		return nil, &fs.PathError{Op: "open", Path: key, Err: err}
	}
	ofi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "stat", Path: key, Err: unwrapPathErr(err)}
	}
	if !os.SameFile(fi, ofi) || !ofi.Mode().IsRegular() {
		f.Close()
		return nil, &fileError{code: gcerrors.PermissionDenied, err: &fs.PathError{Op: "open", Path: key, Err: errors.New("replaced while it was opened")}}
	}
	if opts.BeforeRead != nil {
		if err := opts.BeforeRead(asFile(f)); err != nil {
			f.Close()
			return nil, err
		}
	}
	var r io.Reader = f
	if offset > 0 || length >= 0 {
		if length < 0 {
			length = max(ofi.Size()-offset, 0)
		}
		r = io.NewSectionReader(f, offset, length)
	}
	return &fileReader{f: f, r: r, attrs: driver.ReaderAttributes{
		ContentType: "application/octet-stream",
		ModTime:     ofi.ModTime(),
		Size:        ofi.Size(),
	}}, nil
}

// mkdirs creates the directories parts beneath the root as needed (mode
// 0777 before the umask), none a reparse point, and returns the last one's
// path.
func (b *fileBucket) mkdirs(parts []string) (string, error) {
	p := b.root
	for i, c := range parts {
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if err = os.Mkdir(p, 0o777); err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = os.Lstat(p)
			}
		}
		key := strings.Join(parts[:i+1], "/")
		switch {
		case err != nil:
			return "", &fs.PathError{Op: "mkdir", Path: key, Err: unwrapPathErr(err)}
		case isReparse(fi):
			return "", &fileError{code: gcerrors.PermissionDenied, err: &fs.PathError{Op: "mkdir", Path: key, Err: fmt.Errorf("%s %w", key, ErrSymlink)}}
		case !fi.IsDir():
			return "", &fs.PathError{Op: "mkdir", Path: key, Err: syscall.ENOTDIR}
		}
	}
	return p, nil
}

// NewTypedWriter implements driver.Bucket: a temporary file in the key's
// directory, renamed over the key (or, create-only, linked to it) on Close.
func (b *fileBucket) NewTypedWriter(ctx context.Context, key, _ string, opts *driver.WriterOptions) (driver.Writer, error) {
	parts, err := winKeyParts(key)
	if err != nil {
		return nil, err
	}
	name := parts[len(parts)-1]
	if IsTempName(name) {
		return nil, fileErr(gcerrors.InvalidArgument, "key %q: %q is the name of a temporary file", key, name)
	}
	dir, err := b.mkdirs(parts[:len(parts)-1])
	if err != nil {
		return nil, err
	}
	var tmp string
	var f *os.File
	for {
		var rnd [8]byte
		rand.Read(rnd[:])
		tmp = filepath.Join(dir, TempPrefix+hex.EncodeToString(rnd[:]))
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "create temporary file for", Path: key, Err: unwrapPathErr(err)}
	}
	w := &fileWriter{ctx: ctx, key: key, path: filepath.Join(dir, name), tmp: tmp, f: f, ifNotExist: opts.IfNotExist}
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
	key        string
	path, tmp  string // the key's file and the temporary file
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
	os.Remove(w.tmp)
}

// publish links (create-only) or renames the closed temporary file, all of
// whose bytes were written and synced, to the key's file. A failed link or
// rename removes the temporary file and leaves the key as it was.
func (w *fileWriter) publish() error {
	var err error
	if w.ifNotExist {
		err = os.Link(w.tmp, w.path)
	} else {
		err = os.Rename(w.tmp, w.path)
	}
	switch {
	case err != nil && w.ifNotExist && errors.Is(err, fs.ErrExist):
		os.Remove(w.tmp)
		return fileErr(gcerrors.FailedPrecondition, "create %q: key already exists", w.key)
	case err != nil:
		os.Remove(w.tmp)
		return &fs.PathError{Op: "write", Path: w.key, Err: unwrapPathErr(err)}
	}
	if w.ifNotExist {
		os.Remove(w.tmp)
	}
	return nil
}

// Delete implements driver.Bucket: removes the key's own name (a reparse
// point itself, never its target), reached through no reparse point.
func (b *fileBucket) Delete(_ context.Context, key string, opts *driver.DeleteOptions) error {
	if opts.BeforeDelete != nil {
		if err := opts.BeforeDelete(func(any) bool { return false }); err != nil {
			return err
		}
	}
	parts, err := winKeyParts(key)
	if err != nil {
		return err
	}
	name := parts[len(parts)-1]
	if IsTempName(name) {
		return &fs.PathError{Op: "delete", Path: key, Err: fs.ErrNotExist}
	}
	dir := b.root
	if len(parts) > 1 {
		p, fi, err := b.resolve("delete", parts[:len(parts)-1])
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return &fs.PathError{Op: "delete", Path: key, Err: fs.ErrNotExist}
		}
		dir = p
	}
	p := filepath.Join(dir, name)
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &fs.PathError{Op: "delete", Path: key, Err: fs.ErrNotExist}
	case err != nil:
		return &fs.PathError{Op: "delete", Path: key, Err: unwrapPathErr(err)}
	case fi.IsDir() && !isReparse(fi):
		return &fs.PathError{Op: "delete", Path: key, Err: fs.ErrNotExist}
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &fs.PathError{Op: "delete", Path: key, Err: fs.ErrNotExist}
		}
		return &fs.PathError{Op: "delete", Path: key, Err: unwrapPathErr(err)}
	}
	return nil
}

// listStart finds the directory a listing starts from (walk.go): the
// root, or the deepest directory start names beneath it; nil when there is
// none (no key can be listed).
func (b *fileBucket) listStart(l *fileLister, start string) (d listDir, done func(), err error) {
	if start == "" {
		return winDir{l: l, dir: b.root}, func() {}, nil
	}
	parts, err := winKeyParts(strings.TrimSuffix(start, "/"))
	if err != nil {
		return nil, nil, nil // no file can have such a key
	}
	p, fi, err := b.resolve("open", parts)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir() {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list %q: %w", l.prefix, err)
	}
	return winDir{l: l, dir: p}, func() {}, nil
}

// winDir is a directory of a listing walk on Windows: its path.
type winDir struct {
	l   *fileLister
	dir string
}

func (d winDir) entries(dirKey string) ([]fileDirent, error) { return d.l.readDirPath(d.dir, dirKey) }

func (d winDir) sub(name, _ string) (listDir, func(), error) {
	return winDir{l: d.l, dir: filepath.Join(d.dir, name)}, func() {}, nil
}

func (d winDir) object(name, key string) (*driver.ListObject, error) {
	fi, err := os.Lstat(filepath.Join(d.dir, name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fs.ErrNotExist // vanished under the listing: list again
		}
		return nil, &fs.PathError{Op: "stat", Path: key, Err: unwrapPathErr(err)}
	}
	mode := fi.Mode()
	if fi.IsDir() && !isReparse(fi) {
		return nil, &fs.PathError{Op: "stat", Path: key, Err: fs.ErrNotExist} // replaced by a directory meanwhile: list again
	}
	if isReparse(fi) && mode&fs.ModeSymlink == 0 {
		mode |= fs.ModeIrregular
	}
	obj := &driver.ListObject{Key: key, ModTime: fi.ModTime(), AsFunc: fileEntryMode(mode)}
	if mode.IsRegular() {
		obj.Size = fi.Size()
	}
	return obj, nil
}

// readDirPath reads every entry of dir (keys prefix dirKey) but this
// driver's temporary files, sorted in key order; a reparse point is never
// a directory. Any error fails it.
func (l *fileLister) readDirPath(dir, dirKey string) ([]fileDirent, error) {
	if err := l.injected("readdir", dirKey); err != nil {
		return nil, &fs.PathError{Op: "read directory", Path: dirKey, Err: err}
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && dirKey != "" {
			err = fs.ErrNotExist // removed meanwhile: list again
		}
		return nil, &fs.PathError{Op: "read directory", Path: dirKey, Err: unwrapPathErr(err)}
	}
	ents := make([]fileDirent, 0, len(des))
	for _, de := range des {
		e := fileDirent{name: de.Name(), dir: de.Type()&fs.ModeType == fs.ModeDir, sort: de.Name()}
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
