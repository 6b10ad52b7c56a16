package index

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"time"
)

// FS returns a read-only io/fs view of the tree, for scripts and tests
// (testing/fstest). Open, Stat and ReadFile follow by-signer symlinks;
// Lstat and ReadLink do not. A signature's FileInfo.Size is its real size,
// read once (one GET) if the cache does not know it. It reads on
// context.Background: FSContext(ctx) is the same view reading on ctx.
func (ix *Index) FS() fs.FS { return ioFS{ix, context.Background()} }

// FSContext is FS whose every lookup and read (of a file opened from it,
// and of FileInfo.Size, too) follows ctx: once ctx is done they fail with
// its error and send nothing more. A server makes one per request on the
// request's context, so a client that leaves stops the reads it asked for.
func (ix *Index) FSContext(ctx context.Context) fs.FS { return ioFS{ix, ctx} }

type ioFS struct {
	ix  *Index
	ctx context.Context // every read's
}

var (
	_ fs.ReadDirFS  = ioFS{}
	_ fs.StatFS     = ioFS{}
	_ fs.ReadFileFS = ioFS{}
	_ fs.ReadLinkFS = ioFS{}
)

// fsErr turns an index error into an *fs.PathError naming the fs path.
func fsErr(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// live fails once the view's context is done, before a lookup or read
// would start a request for a caller who is gone.
func (f ioFS) live(op, name string) error {
	if err := f.ctx.Err(); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

func indexPath(name string) string {
	if name == "." {
		return ""
	}
	return name
}

// node stats name, following a by-signer symlink when follow is set (the
// result keeps the link's name).
func (f ioFS) node(op, name string, follow bool) (Node, error) {
	if !fs.ValidPath(name) {
		return Node{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if err := f.live(op, name); err != nil {
		return Node{}, err
	}
	ctx := f.ctx
	p := indexPath(name)
	n, err := f.ix.Stat(ctx, p)
	if err != nil {
		return Node{}, fsErr(op, name, err)
	}
	if follow && n.Type == NodeSymlink {
		t, err := f.ix.Stat(ctx, path.Join(path.Dir(p), n.Target))
		if err != nil {
			return Node{}, fsErr(op, name, err)
		}
		t.Name = n.Name
		n = t
	}
	if name == "." {
		n.Name = "."
	}
	return n, nil
}

// info describes a node; a signature whose size is not known yet is read.
func (f ioFS) info(op, name string, n Node) (fs.FileInfo, error) {
	size := n.Size
	switch n.Type {
	case NodeDir:
		size = 0
	case NodeSymlink:
		size = int64(len(n.Target))
	case NodeFile:
		if size < 0 {
			if err := f.live(op, name); err != nil {
				return nil, err
			}
			var err error
			if size, n.ModTime, err = f.ix.SigStat(f.ctx, n.Entry); err != nil {
				return nil, fsErr(op, name, err)
			}
		}
	}
	return fileInfo{n: n, size: size, store: f.ix.ModTime()}, nil
}

func (f ioFS) Open(name string) (fs.File, error) {
	n, err := f.node("open", name, true)
	if err != nil {
		return nil, err
	}
	if n.Type == NodeDir {
		return &dirFile{f: f, name: name, n: n}, nil
	}
	return &entryFile{f: f, name: name, n: n}, nil
}

func (f ioFS) Stat(name string) (fs.FileInfo, error) {
	n, err := f.node("stat", name, true)
	if err != nil {
		return nil, err
	}
	return f.info("stat", name, n)
}

func (f ioFS) Lstat(name string) (fs.FileInfo, error) {
	n, err := f.node("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return f.info("lstat", name, n)
}

func (f ioFS) ReadLink(name string) (string, error) {
	n, err := f.node("readlink", name, false)
	if err != nil {
		return "", err
	}
	if n.Type != NodeSymlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return n.Target, nil
}

func (f ioFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	if err := f.live("readdir", name); err != nil {
		return nil, err
	}
	nodes, err := f.ix.ReadDir(f.ctx, indexPath(name))
	if err != nil {
		return nil, fsErr("readdir", name, err)
	}
	out := make([]fs.DirEntry, len(nodes))
	for i, n := range nodes {
		out[i] = dirEntry{f: f, name: path.Join(name, n.Name), n: n}
	}
	return out, nil
}

func (f ioFS) ReadFile(name string) ([]byte, error) {
	n, err := f.node("readfile", name, true)
	if err != nil {
		return nil, err
	}
	if n.Type == NodeDir {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: errIsDir}
	}
	data, err := f.ix.ReadSig(f.ctx, n.Entry)
	if err != nil {
		return nil, fsErr("readfile", name, err)
	}
	return data, nil
}

var errIsDir = errors.New("is a directory")

// fileInfo is a node's fs.FileInfo. Its ModTime is a signature's key's own
// Last-Modified (Node.ModTime, read with its size), else the store's last
// change (store: Index.ModTime), as the mount shows them.
type fileInfo struct {
	n     Node
	size  int64
	store time.Time
}

func (i fileInfo) Name() string { return i.n.Name }
func (i fileInfo) Size() int64  { return i.size }
func (i fileInfo) ModTime() time.Time {
	if !i.n.ModTime.IsZero() {
		return i.n.ModTime
	}
	return i.store
}
func (i fileInfo) IsDir() bool { return i.n.Type == NodeDir }
func (i fileInfo) Sys() any    { return i.n }
func (i fileInfo) Mode() fs.FileMode {
	switch i.n.Type {
	case NodeDir:
		return fs.ModeDir | 0o555
	case NodeSymlink:
		return fs.ModeSymlink | 0o777
	}
	return 0o444
}

type dirEntry struct {
	f    ioFS
	name string // the fs path
	n    Node
}

func (d dirEntry) Name() string               { return d.n.Name }
func (d dirEntry) IsDir() bool                { return d.n.Type == NodeDir }
func (d dirEntry) Type() fs.FileMode          { return fileInfo{n: d.n}.Mode().Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return d.f.info("stat", d.name, d.n) }
func (d dirEntry) String() string             { return fs.FormatDirEntry(d) }

// dirFile is an open directory; its entries are read at the first ReadDir.
type dirFile struct {
	f       ioFS
	name    string
	n       Node
	entries []fs.DirEntry
	read    bool
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.f.info("stat", d.name, d.n) }
func (d *dirFile) Close() error               { return nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errIsDir}
}

func (d *dirFile) ReadDir(count int) ([]fs.DirEntry, error) {
	if !d.read {
		es, err := d.f.ReadDir(d.name)
		if err != nil {
			return nil, err
		}
		d.entries, d.read = es, true
	}
	if count <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	count = min(count, len(d.entries))
	out := d.entries[:count:count]
	d.entries = d.entries[count:]
	return out, nil
}

// entryFile is an open entry; a signature's bytes are taken at the first
// read (OpenSig: shared with every reader of the version, within the
// readers' budget) and given back at Close.
type entryFile struct {
	f    ioFS
	name string
	n    Node
	r    *bytes.Reader
	h    *SigHandle
}

func (e *entryFile) Stat() (fs.FileInfo, error) { return e.f.info("stat", e.name, e.n) }

func (e *entryFile) Close() error {
	if e.h != nil {
		e.h.Release()
		e.h, e.r = nil, nil
	}
	return nil
}

func (e *entryFile) load() error {
	if e.r != nil {
		return nil
	}
	if err := e.f.live("read", e.name); err != nil {
		return err
	}
	h, err := e.f.ix.OpenSig(e.f.ctx, e.n.Entry)
	if err != nil {
		return fsErr("read", e.name, err)
	}
	e.h, e.r = h, bytes.NewReader(h.Bytes())
	return nil
}

func (e *entryFile) Read(p []byte) (int, error) {
	if err := e.load(); err != nil {
		return 0, err
	}
	return e.r.Read(p)
}

func (e *entryFile) ReadAt(p []byte, off int64) (int, error) {
	if err := e.load(); err != nil {
		return 0, err
	}
	return e.r.ReadAt(p, off)
}

func (e *entryFile) Seek(off int64, whence int) (int64, error) {
	if err := e.load(); err != nil {
		return 0, err
	}
	return e.r.Seek(off, whence)
}
