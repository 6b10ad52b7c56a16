package fileblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// fileBucket is the gocloud driver of file:// stores (it replaces gocloud's
// fileblob, which skipped directories it could not read, followed symbolic
// links and could not write a 255-byte name). A key is exactly the file
// root/key: no escaping, no .attrs sidecar, so a repository's .oxy/objects
// stays valid for other implementations.
//
//   - No symbolic link is followed below root (path.go; on Windows no
//     reparse point, driver_windows.go): reads, HEADs,
//     writes and deletes refuse a key any of whose components is one, and
//     a listing returns a link (or a pipe, socket, device) as an item whose
//     mode says what it is (ListItem.Irregular), never as a key that reads.
//   - A listing fails on any error reading a directory or stating a file:
//     a key that vanished under it is NotFound (the store lists again), every
//     other error ends the listing. Nothing is skipped but this driver's own
//     temporary files.
//   - A write goes to a temporary file (TempPrefix, in the key's directory),
//     synced, then renamed over the key and the directory synced. A
//     create-only write (IfNotExist) links the temporary file to the key,
//     which fails if the key exists: atomic, one winner.
type fileBucket struct {
	root string  // absolute; read-only after OpenBucket
	opts Options // read-only after OpenBucket
}

// newFileBucket returns the driver of the file:// bucket rooted at the
// directory root.
func newFileBucket(root string, opts *Options) (*fileBucket, error) {
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
	b := &fileBucket{root: abs}
	if opts != nil {
		b.opts = *opts
	}
	return b, nil
}

// OpenBucket opens the bucket rooted at the directory root (what OpenURL
// opens for a file:// URL; store.New takes it). opts may be nil.
func OpenBucket(root string, opts *Options) (*blob.Bucket, error) {
	drv, err := newFileBucket(root, opts)
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(drv), nil
}

// Root checks a file:// URL and returns the directory of its store (with
// its prefix=: the directory store locks), creating it if asked (create, or
// the URL's create_dir=).
func Root(u *url.URL, create bool) (string, error) {
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
	dir := fileURLPath(u)
	root := dir
	if p := q.Get("prefix"); p != "" {
		root = strings.TrimSuffix(root, "/") + "/" + p
	}
	if create || q.Get("create_dir") != "" {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return "", err
		}
	}
	if fi, err := os.Stat(dir); err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return root, nil
}

// OpenURL opens the bucket of a file:// URL that Root accepted: the
// directory of its path, keys under its prefix=. opts may be nil.
func OpenURL(u *url.URL, opts *Options) (*blob.Bucket, error) {
	drv, err := newFileBucket(fileURLPath(u), opts)
	if err != nil {
		return nil, err
	}
	if p := u.Query().Get("prefix"); p != "" {
		return blob.NewBucket(driver.NewPrefixedBucket(drv, p)), nil
	}
	return blob.NewBucket(drv), nil
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

// fileLister is one page of a file:// listing: a walk of the directories
// under the prefix, in key order, that fails on the first error.
//
// Key order: a directory's keys all start with its name and "/", so its
// entries are visited sorted by name, a directory's name taken with its
// "/" ("a-b" < "a/" < "a0"), which is the keys' bytewise order. A page
// walks from the prefix's directory again and skips every directory whose
// keys all sort before the page token, so a page costs the directories on
// its way, not every key before it.
type fileLister struct {
	ctx    context.Context
	root   string                      // for messages and the directory names given to os
	fault  func(op, path string) error // Options.Fault; nil: none
	prefix string
	delim  bool // delimiter "/": each directory is one common prefix
	token  string
	size   int
	out    []*driver.ListObject
	more   bool
}

// fileDirent is one directory entry.
type fileDirent struct {
	name string
	dir  bool
	sort string // name, or name + "/" for a directory
}

func (l *fileLister) add(o *driver.ListObject) error {
	if len(l.out) == l.size {
		l.more = true
		return errPageFull
	}
	l.out = append(l.out, o)
	return nil
}
