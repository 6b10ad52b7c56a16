package web

import (
	"bytes"
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

	"github.com/oxyfs/oxyfs/index"
)

// propfindReads reads, on the request's context, what a PROPFIND of depth
// "0" or "1" must answer before WebDAV writes a word: the target (and at
// depth 1 its directory's listing, from memory) and, when the target is a
// signature whose size the index does not know, that size (one GET, as the
// mount's getattr reads it). An error is answered with its own status
// (fail): WebDAV answers a target it cannot stat with 405, and leaves out of
// its listing, without a word, a child it cannot stat.
//
// The children of a depth 1 listing are never read (issue 41, item 8: one
// PROPFIND of /dav/by-signer/<signer>/ read every signature of the signer,
// 26 -> 129 GETs for 42): a signature whose size is not known yet is listed
// without getcontentlength (omitUnknownSizes), as the mount lists it with
// size 0 until a stat reads it; a PROPFIND of the file itself reads it.
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
	p, err := fsys.name("stat", name)
	if err != nil {
		return nil // WebDAV answers 404
	}
	n, err := fsys.node(ctx, "stat", p)
	switch {
	case err != nil:
		return err
	case n.Type == index.NodeFile && n.Size < 0:
		_, err = h.ix.SigSize(ctx, n.Entry)
		return err
	case n.Type == index.NodeDir && depth == "1":
		_, err = h.ix.ReadDir(ctx, indexPath(p))
		return err
	}
	return nil
}

// unknownSize is what a davInfo reports as Size for a signature whose size
// the index does not know: WebDAV writes it as getcontentlength -1, which
// omitUnknownSizes takes out of the answer.
const unknownSize = -1

// unknownLength is getcontentlength of unknownSize as x/net/webdav writes it.
var unknownLength = []byte("<D:getcontentlength>-1</D:getcontentlength>")

// omitUnknownSizes writes a PROPFIND's answer without the getcontentlength
// of sizes not known (unknownLength), as it streams: what could be the start
// of one is held back until the next write or Close.
type omitUnknownSizes struct {
	http.ResponseWriter
	held []byte
	err  error
}

func (o *omitUnknownSizes) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	buf := bytes.ReplaceAll(append(o.held, p...), unknownLength, nil)
	keep := 0
	for k := min(len(unknownLength)-1, len(buf)); k > 0; k-- {
		if bytes.HasSuffix(buf, unknownLength[:k]) {
			keep = k
			break
		}
	}
	o.held = append(o.held[:0], buf[len(buf)-keep:]...)
	if _, err := o.ResponseWriter.Write(buf[:len(buf)-keep]); err != nil {
		o.err = err
		return 0, err
	}
	return len(p), nil
}

// Close writes what was held back.
func (o *omitUnknownSizes) Close() {
	if len(o.held) > 0 && o.err == nil {
		o.ResponseWriter.Write(o.held)
	}
	o.held = nil
}

// davFS is a read-only webdav.FileSystem over the index's tree: every
// write (Mkdir, RemoveAll, Rename, OpenFile for writing, Write) is
// os.ErrPermission. Symlinks are followed: a by-signer link is the file it
// points to, in Stat and in a directory's Readdir alike. Stat and Readdir
// answer from the index's tree (index.Index.Stat, ReadDir: in memory on a
// folded store) and never read a signature: a size the index does not know
// is unknownSize. Errors keep the shapes x/net/webdav tests with
// os.IsNotExist and errors.Is.
//
// Every call reads on the context WebDAV gives it, the request's.
type davFS struct {
	ix      *index.Index
	modTime func(fs.FileInfo) time.Time // a file's getlastmodified (handler.modTime)
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
	n, err := d.node(ctx, "stat", p)
	if err != nil {
		return nil, davErr("stat", name, err)
	}
	return davInfo{nodeInfo(n), d.modTime}, nil
}

// node looks p up, following a by-signer link to the signature (keeping the
// link's name); it never reads a signature.
func (d davFS) node(ctx context.Context, op, p string) (index.Node, error) {
	if err := ctx.Err(); err != nil {
		return index.Node{}, &fs.PathError{Op: op, Path: p, Err: err}
	}
	ip := indexPath(p)
	n, err := d.ix.Stat(ctx, ip)
	if err != nil {
		return index.Node{}, err
	}
	if n.Type == index.NodeSymlink {
		t, err := d.ix.Stat(ctx, path.Join(path.Dir(ip), n.Target))
		if err != nil {
			return index.Node{}, err
		}
		t.Name = n.Name
		n = t
	}
	return n, nil
}

func indexPath(p string) string {
	if p == "." {
		return ""
	}
	return p
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
	n, err := d.node(ctx, "open", p)
	if err != nil {
		return nil, davErr("open", name, err)
	}
	return &davFile{ctx: ctx, d: d, name: name, p: p, n: n}, nil
}

// davFile is an open file or directory of a davFS; it reads on the
// context it was opened with. WebDAV here only stats and lists (GET and
// HEAD are the handler's own): a signature's bytes are read, through the
// index's io/fs view, only if something reads them.
type davFile struct {
	ctx  context.Context
	d    davFS
	name string // as WebDAV named it
	p    string // io/fs path
	n    index.Node
	f    fs.File // opened at the first Read or Seek
}

func (f *davFile) Close() error {
	if f.f != nil {
		return f.f.Close()
	}
	return nil
}
func (f *davFile) Write([]byte) (int, error)  { return 0, denied("write", f.name) }
func (f *davFile) Stat() (os.FileInfo, error) { return davInfo{nodeInfo(f.n), f.d.modTime}, nil }

func (f *davFile) open() error {
	if f.f != nil {
		return nil
	}
	if f.n.Type == index.NodeDir {
		return &os.PathError{Op: "read", Path: f.name, Err: errors.New("is a directory")}
	}
	file, err := f.d.ix.FSContext(f.ctx).Open(f.p)
	if err != nil {
		return davErr("open", f.name, err)
	}
	f.f = file
	return nil
}

func (f *davFile) Read(b []byte) (int, error) {
	if err := f.open(); err != nil {
		return 0, err
	}
	n, err := f.f.Read(b)
	if err != nil && !errors.Is(err, io.EOF) {
		err = davErr("read", f.name, err)
	}
	return n, err
}

func (f *davFile) Seek(off int64, whence int) (int64, error) {
	if err := f.open(); err != nil {
		return 0, err
	}
	s, ok := f.f.(io.Seeker)
	if !ok {
		return 0, &os.PathError{Op: "seek", Path: f.name, Err: errors.ErrUnsupported}
	}
	return s.Seek(off, whence)
}

// Readdir lists a directory from memory; symlinks appear as what they
// point to, and no signature is read (a size not known is unknownSize).
// WebDAV asks for every entry (count 0).
func (f *davFile) Readdir(count int) ([]os.FileInfo, error) {
	if f.n.Type != index.NodeDir {
		return nil, &os.PathError{Op: "readdir", Path: f.name, Err: errors.New("not a directory")}
	}
	nodes, err := f.d.ix.ReadDir(f.ctx, indexPath(f.p))
	if err != nil {
		return nil, davErr("readdir", f.name, err)
	}
	if count > 0 && len(nodes) > count {
		nodes = nodes[:count]
	}
	out := make([]os.FileInfo, 0, len(nodes))
	for _, n := range nodes {
		if n.Type == index.NodeSymlink {
			t, err := f.d.node(f.ctx, "readdir", path.Join(f.p, n.Name))
			if err != nil {
				return out, davErr("readdir", f.name, err)
			}
			n = t
		}
		out = append(out, davInfo{nodeInfo(n), f.d.modTime})
	}
	return out, nil
}

// nodeInfo is a node's fs.FileInfo: a signature's size as the index knows
// it, unknownSize if it does not (never read here).
func nodeInfo(n index.Node) fs.FileInfo { return nodeFileInfo{n} }

type nodeFileInfo struct{ n index.Node }

func (i nodeFileInfo) Name() string       { return i.n.Name }
func (i nodeFileInfo) ModTime() time.Time { return time.Time{} }
func (i nodeFileInfo) IsDir() bool        { return i.n.Type == index.NodeDir }
func (i nodeFileInfo) Sys() any           { return i.n }
func (i nodeFileInfo) Size() int64 {
	switch {
	case i.n.Type == index.NodeDir:
		return 0
	case i.n.Size < 0:
		return unknownSize
	}
	return i.n.Size
}
func (i nodeFileInfo) Mode() fs.FileMode {
	if i.n.Type == index.NodeDir {
		return fs.ModeDir | 0o555
	}
	return 0o444
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
