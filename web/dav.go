package web

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/net/webdav"
)

// propfindReads reads, on the request's context, what a PROPFIND of depth
// "0" or "1" reports: the target's size and, for a directory at depth 1,
// its children's (fetched once, then known to the index). An error is then
// answered with its own status (fail) before WebDAV writes a word: WebDAV
// answers a target it cannot stat with 405, and leaves out of its listing,
// without a word, a child it cannot stat.
func (h *handler) propfindReads(r *http.Request, dh *webdav.Handler, depth string) error {
	name := strings.TrimPrefix(r.URL.Path, dh.Prefix)
	if len(name) == len(r.URL.Path) && dh.Prefix != "" {
		return nil // WebDAV answers 404
	}
	fsys, ok := dh.FileSystem.(davFS)
	if !ok {
		return nil
	}
	ctx := r.Context()
	fi, err := fsys.Stat(ctx, name)
	if err != nil || !fi.IsDir() || depth != "1" {
		return err
	}
	f, err := fsys.OpenFile(ctx, name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Readdir(0)
	return err
}

// davFS is a read-only webdav.FileSystem over an io/fs view (index.FS):
// every write (Mkdir, RemoveAll, Rename, OpenFile for writing, Write) is
// os.ErrPermission. Symlinks are followed: a by-signer link is the file it
// points to, in Stat and in a directory's Readdir alike. Errors keep the
// shapes x/net/webdav tests with os.IsNotExist and errors.Is.
//
// Every call reads on the context WebDAV gives it, the request's
// (index.FSContext): a client that leaves stops a PROPFIND's reads of
// sizes, one GET each, at the next one.
type davFS struct {
	fsys    func(ctx context.Context) fs.FS // the view reading on ctx
	modTime func(fs.FileInfo) time.Time     // a file's getlastmodified (handler.modTime)
}

var _ webdav.FileSystem = davFS{}

// name turns a WebDAV path ("/sig/ab") into an io/fs one ("sig/ab").
func (d davFS) name(op, name string) (string, error) {
	p := strings.TrimPrefix(path.Clean("/"+name), "/")
	if p == "" {
		p = "."
	}
	if !fs.ValidPath(p) {
		return "", &os.PathError{Op: op, Path: name, Err: os.ErrNotExist}
	}
	return p, nil
}

// davErr maps an io/fs error to what os.IsNotExist and os.IsPermission see.
// Any other error (a read that failed) is a readFailure, not an
// *os.PathError, which WebDAV would take for a file "just bad" and leave out
// of a PROPFIND without a word: it stops the answer instead.
func davErr(op, name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return &os.PathError{Op: op, Path: name, Err: os.ErrNotExist}
	case errors.Is(err, fs.ErrPermission):
		return &os.PathError{Op: op, Path: name, Err: os.ErrPermission}
	}
	return readFailure{err}
}

// readFailure is a read of the io/fs view that failed (davErr).
type readFailure struct{ err error }

func (e readFailure) Error() string { return e.err.Error() }
func (e readFailure) Unwrap() error { return e.err }

func denied(op, name string) error { return &os.PathError{Op: op, Path: name, Err: os.ErrPermission} }

func (d davFS) Mkdir(_ context.Context, name string, _ os.FileMode) error {
	return denied("mkdir", name)
}
func (d davFS) RemoveAll(_ context.Context, name string) error    { return denied("remove", name) }
func (d davFS) Rename(_ context.Context, oldName, _ string) error { return denied("rename", oldName) }

func (d davFS) Stat(ctx context.Context, name string) (os.FileInfo, error) {
	p, err := d.name("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := fs.Stat(d.fsys(ctx), p)
	if err != nil {
		return nil, davErr("stat", name, err)
	}
	return davInfo{fi, d.modTime}, nil
}

// writeFlags are the open flags that would change the file.
const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREATE | os.O_TRUNC

func (d davFS) OpenFile(ctx context.Context, name string, flag int, _ os.FileMode) (webdav.File, error) {
	if flag&writeFlags != 0 {
		return nil, denied("open", name)
	}
	p, err := d.name("open", name)
	if err != nil {
		return nil, err
	}
	fsys := d.fsys(ctx)
	f, err := fsys.Open(p)
	if err != nil {
		return nil, davErr("open", name, err)
	}
	return &davFile{ctx: ctx, d: d, fsys: fsys, name: name, p: p, f: f}, nil
}

// davFile is an open file or directory of a davFS; it reads on the
// context it was opened with.
type davFile struct {
	ctx  context.Context
	d    davFS
	fsys fs.FS  // d.fsys(ctx)
	name string // as WebDAV named it
	p    string // io/fs path
	f    fs.File
}

func (f *davFile) Close() error               { return f.f.Close() }
func (f *davFile) Write([]byte) (int, error)  { return 0, denied("write", f.name) }
func (f *davFile) Read(b []byte) (int, error) { return f.f.Read(b) }
func (f *davFile) Stat() (os.FileInfo, error) { return f.d.Stat(f.ctx, f.name) }

func (f *davFile) Seek(off int64, whence int) (int64, error) {
	s, ok := f.f.(io.Seeker)
	if !ok {
		return 0, &os.PathError{Op: "seek", Path: f.name, Err: errors.ErrUnsupported}
	}
	return s.Seek(off, whence)
}

// Readdir lists a directory; symlinks appear as what they point to.
func (f *davFile) Readdir(count int) ([]os.FileInfo, error) {
	rd, ok := f.f.(fs.ReadDirFile)
	if !ok {
		return nil, &os.PathError{Op: "readdir", Path: f.name, Err: errors.New("not a directory")}
	}
	des, err := rd.ReadDir(count)
	if err != nil && !errors.Is(err, io.EOF) {
		err = davErr("readdir", f.name, err)
	}
	out := make([]os.FileInfo, 0, len(des))
	for _, de := range des {
		var fi fs.FileInfo
		var ierr error
		if de.Type()&fs.ModeSymlink != 0 {
			fi, ierr = fs.Stat(f.fsys, path.Join(f.p, de.Name()))
		} else {
			fi, ierr = de.Info()
		}
		if ierr != nil {
			return out, davErr("readdir", f.name, ierr)
		}
		out = append(out, davInfo{fi, f.d.modTime})
	}
	return out, err
}

// davInfo is a FileInfo that tells WebDAV a file's content type without
// its reading the first 512 bytes of every file a PROPFIND lists, and its
// last change (getlastmodified): the index's view has no time per entry.
type davInfo struct {
	fs.FileInfo
	modTime func(fs.FileInfo) time.Time // nil: the view's (zero)
}

// ModTime is the file's last change as the handler reports it
// (handler.modTime).
func (i davInfo) ModTime() time.Time {
	if i.modTime == nil {
		return i.FileInfo.ModTime()
	}
	return i.modTime(i.FileInfo)
}

var _ webdav.ContentTyper = davInfo{}

func (i davInfo) ContentType(context.Context) (string, error) {
	if i.IsDir() {
		return "", webdav.ErrNotImplemented
	}
	return "application/octet-stream", nil
}
