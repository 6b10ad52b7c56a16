package store

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
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
	"golang.org/x/sys/unix"
)

// fileBucket is the gocloud driver of file:// stores (it replaces gocloud's
// fileblob, which skipped directories it could not read, followed symbolic
// links and could not write a 255-byte name). A key is exactly the file
// root/key: no escaping, no .attrs sidecar, so a repository's .oxy/objects
// stays valid for other implementations.
//
//   - No symbolic link is followed below root (file_path.go): reads, HEADs,
//     writes and deletes refuse a key any of whose components is one, and
//     a listing returns a link (or a pipe, socket, device) as an item whose
//     mode says what it is (ListItem.Irregular), never as a key that reads.
//   - A listing fails on any error reading a directory or stating a file:
//     a key that vanished under it is NotFound (the store lists again), every
//     other error ends the listing. Nothing is skipped but this driver's own
//     temporary files.
//   - A write goes to a temporary file (tempPrefix, in the key's directory),
//     synced, then renamed over the key and the directory synced. A
//     create-only write (IfNotExist) links the temporary file to the key,
//     which fails if the key exists: atomic, one winner.
type fileBucket struct {
	root string // absolute
}

// newFileBucket returns the driver of the file:// bucket rooted at the
// directory root.
func newFileBucket(root string) (*fileBucket, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", abs)
	}
	return &fileBucket{root: abs}, nil
}

// OpenFileBucket opens the file:// bucket rooted at the directory root with
// oxyfs's own driver (what Open uses for a file:// URL), for New.
func OpenFileBucket(root string) (*blob.Bucket, error) {
	drv, err := newFileBucket(root)
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(drv), nil
}

// fileRoot checks a file:// URL and returns the directory of its store
// (with its prefix=, the OS lock's directory), creating it if asked.
func fileRoot(u *url.URL, create bool) (string, error) {
	if u.Host != "" && u.Host != "localhost" {
		return "", errors.New("file URL must not name a host (use file:///abs/path)")
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "prefix", "create_dir", "no_tmp_dir":
		case "metadata":
			if q.Get(k) != "skip" {
				return "", fmt.Errorf("file URL: metadata=%s: a file:// store writes no metadata (only metadata=skip)", q.Get(k))
			}
		default:
			return "", fmt.Errorf("file URL: unknown parameter %q (want prefix)", k)
		}
	}
	root := u.Path
	if p := q.Get("prefix"); p != "" {
		root = strings.TrimSuffix(root, "/") + "/" + p
	}
	if create || q.Get("create_dir") != "" {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return "", err
		}
	}
	if fi, err := os.Stat(u.Path); err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", u.Path)
	}
	return root, nil
}

// openFileURL opens the bucket of a file:// URL that fileRoot accepted: the
// directory of its path, keys under its prefix=.
func openFileURL(u *url.URL) (*blob.Bucket, error) {
	drv, err := newFileBucket(u.Path)
	if err != nil {
		return nil, err
	}
	if p := u.Query().Get("prefix"); p != "" {
		return blob.NewBucket(driver.NewPrefixedBucket(drv, p)), nil
	}
	return blob.NewBucket(drv), nil
}

// openRoot opens the root directory (following links in its own path)
// with mode unix.O_PATH, or unix.O_RDONLY for a listing.
func (b *fileBucket) openRoot(mode int) (int, error) {
	fd, err := unix.Open(b.root, mode|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open store directory", Path: b.root, Err: err}
	}
	return fd, nil
}

func (b *fileBucket) ErrorCode(err error) gcerrors.ErrorCode { return fileErrorCode(err) }
func (b *fileBucket) As(any) bool                            { return false }
func (b *fileBucket) ErrorAs(error, any) bool                { return false }
func (b *fileBucket) Close() error                           { return nil }

func (b *fileBucket) Copy(context.Context, string, string, *driver.CopyOptions) error {
	return fileErr(gcerrors.Unimplemented, "file store: copy is not supported")
}

func (b *fileBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", fileErr(gcerrors.Unimplemented, "file store: signed URLs are not supported")
}

// statKey opens key with flags and checks it is a regular file.
func (b *fileBucket) statKey(key string, flags int) (int, *unix.Stat_t, error) {
	parts, err := keyParts(key)
	if err != nil {
		return -1, nil, err
	}
	root, err := b.openRoot(unix.O_PATH)
	if err != nil {
		return -1, nil, err
	}
	defer unix.Close(root)
	fd, err := openBeneath(root, parts, flags)
	if err != nil {
		return -1, nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, nil, &fs.PathError{Op: "stat", Path: key, Err: err}
	}
	if err := regular(key, st.Mode); err != nil {
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
		return &fileError{code: gcerrors.PermissionDenied, err: &fs.PathError{Op: "open", Path: key, Err: fmt.Errorf("%s %w", key, errSymlink)}}
	}
	return &fileError{code: gcerrors.PermissionDenied, err: &fs.PathError{Op: "open", Path: key, Err: errNotRegular}}
}

// Attributes implements driver.Bucket (a HEAD: opens no file for reading).
func (b *fileBucket) Attributes(_ context.Context, key string) (*driver.Attributes, error) {
	fd, st, err := b.statKey(key, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	unix.Close(fd)
	mt := time.Unix(st.Mtim.Unix())
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
		ModTime:     time.Unix(st.Mtim.Unix()),
		Size:        st.Size,
	}}, nil
}

// asFile is the As of a read's or write's Before hook: **os.File, the file.
func asFile(f *os.File) func(any) bool {
	return func(i any) bool {
		p, ok := i.(**os.File)
		if ok {
			*p = f
		}
		return ok
	}
}

type fileReader struct {
	f     *os.File
	r     io.Reader
	attrs driver.ReaderAttributes
}

func (r *fileReader) Read(p []byte) (int, error)           { return r.r.Read(p) }
func (r *fileReader) Close() error                         { return r.f.Close() }
func (r *fileReader) Attributes() *driver.ReaderAttributes { return &r.attrs }
func (r *fileReader) As(any) bool                          { return false }

// NewTypedWriter implements driver.Bucket: a temporary file in the key's
// directory (created as needed, through no symbolic link), renamed over the
// key on Close.
func (b *fileBucket) NewTypedWriter(ctx context.Context, key, _ string, opts *driver.WriterOptions) (driver.Writer, error) {
	parts, err := keyParts(key)
	if err != nil {
		return nil, err
	}
	name := parts[len(parts)-1]
	if isTempName(name) {
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
		tmp = tempPrefix + hex.EncodeToString(rnd[:])
		fd, err = openatRetry(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o666)
		if err != unix.EEXIST {
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

type fileWriter struct {
	ctx        context.Context
	key, name  string
	tmp        string
	dir        int // the key's directory, open for reading (fsync)
	f          *os.File
	ifNotExist bool
}

func (w *fileWriter) Write(p []byte) (int, error) { return w.f.Write(p) }

// abort removes the temporary file.
func (w *fileWriter) abort() {
	w.f.Close()
	unix.Unlinkat(w.dir, w.tmp, 0)
	unix.Close(w.dir)
}

// Close publishes the write: sync the data, rename (or, create-only, link)
// the temporary file to the key's name, sync the directory.
func (w *fileWriter) Close() error {
	if err := w.ctx.Err(); err != nil {
		w.abort()
		return err
	}
	if err := w.f.Sync(); err != nil {
		w.abort()
		return &fs.PathError{Op: "sync", Path: w.key, Err: err}
	}
	err := w.f.Close()
	if err == nil {
		if w.ifNotExist {
			err = unix.Linkat(w.dir, w.tmp, w.dir, w.name, 0)
			unix.Unlinkat(w.dir, w.tmp, 0)
		} else {
			err = unix.Renameat(w.dir, w.tmp, w.dir, w.name)
		}
	}
	defer unix.Close(w.dir)
	switch {
	case err == unix.EEXIST && w.ifNotExist:
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
	root, err := b.openRoot(unix.O_PATH)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	dir := root
	if len(parts) > 1 {
		if dir, err = openBeneath(root, parts[:len(parts)-1], unix.O_PATH|unix.O_DIRECTORY); err != nil {
			return err
		}
		defer unix.Close(dir)
	}
	name := parts[len(parts)-1]
	if isTempName(name) {
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

// errPageFull ends a listing walk once the page is full.
var errPageFull = errors.New("page full")

// fileEntryMode is what a listed item's As gives for *fs.FileMode: the
// mode of the file (a symbolic link's own, never its target's).
func fileEntryMode(m fs.FileMode) func(any) bool {
	return func(i any) bool {
		p, ok := i.(*fs.FileMode)
		if ok {
			*p = m
		}
		return ok
	}
}

// ListPaged implements driver.Bucket (file_list.go).
func (b *fileBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if opts.Delimiter != "" && opts.Delimiter != "/" {
		return nil, fileErr(gcerrors.Unimplemented, "file store: list delimiter %q (only \"/\")", opts.Delimiter)
	}
	if opts.BeforeList != nil {
		if err := opts.BeforeList(func(any) bool { return false }); err != nil {
			return nil, err
		}
	}
	l := &fileLister{ctx: ctx, root: b.root, prefix: opts.Prefix, delim: opts.Delimiter != "", token: string(opts.PageToken), size: opts.PageSize}
	if l.size <= 0 {
		l.size = 1000
	}
	root, err := b.openRoot(unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	// Start at the deepest directory the prefix names.
	start := ""
	if i := strings.LastIndexByte(l.prefix, '/'); i >= 0 {
		start = l.prefix[:i+1]
	}
	dir := root
	if start != "" {
		parts, err := keyParts(strings.TrimSuffix(start, "/"))
		if err != nil {
			return &driver.ListPage{}, nil // no file can have such a key
		}
		dir, err = openBeneath(root, parts, unix.O_RDONLY|unix.O_DIRECTORY)
		if errors.Is(err, fs.ErrNotExist) {
			return &driver.ListPage{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %q: %w", l.prefix, err)
		}
		defer unix.Close(dir)
	}
	err = l.walk(dir, start)
	if err != nil && err != errPageFull {
		return nil, fmt.Errorf("list %q: %w", l.prefix, err)
	}
	page := &driver.ListPage{Objects: l.out}
	if l.more {
		page.NextPageToken = []byte(l.out[len(l.out)-1].Key)
	}
	return page, nil
}
