package store

// The file:// driver: oxyfs's own gocloud driver (store/fileblob) and,
// here, what the store does differently on it. As types used:
//
//	*fs.FileMode  blob.ListObject  the mode of a listed file (Irregular)
//
// Compare-and-swap is a read-compare-write under an exclusive lock of the
// store's directory (lockedWrites, dirLock): flock(2) on the directory on
// Linux and macOS (file_lock_unix.go), LockFileEx on a lock file on Windows
// (file_lock_windows.go); correct across processes either way. The change
// token is the SHA-256 of the bytes.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/oxyfs/oxyfs/store/format"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/oxyfs/oxyfs/store/fileblob"
	"gocloud.dev/blob"
)

type fileDriver struct {
	defaults
	lockedWrites
	layout Layout // LayoutAuto's: what the root shows (fileLayout) when opened from a URL, else directory; read-only after open
	root   string // the store's directory ("" when wrapped without one); read-only after open
}

var _ backendDriver = (*fileDriver)(nil)

func (*fileDriver) name() string { return "file" }

func (d *fileDriver) autoLayout() Layout { return d.layout }

// clockSource: the filesystem stamps mtimes; this kernel's clock until a
// probe reads the filesystem's (a network filesystem's server may keep
// another).
func (*fileDriver) clockSource() clockSource { return clockKernel }

// probeClock reads the filesystem's clock: the mtime of a temporary file
// (a name no listing shows and no key can take) created in the root and
// removed at once.
func (d *fileDriver) probeClock(context.Context) (time.Time, error) {
	if d.root == "" {
		return time.Time{}, errNoProbe
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	name := filepath.Join(d.root, fileblob.TempPrefix+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return time.Time{}, fmt.Errorf("probe the filesystem's clock: %w", err)
	}
	fi, err := f.Stat()
	f.Close()
	os.Remove(name)
	if err != nil {
		return time.Time{}, fmt.Errorf("probe the filesystem's clock: %w", err)
	}
	return fi.ModTime(), nil
}

// listRetries: the file driver stats each file after reading its
// directory, so a key deleted during the listing fails the page with
// NotFound: the page is listed again (a few times) rather than a listing
// failed for a key that is gone anyway. Every other error of a file
// listing fails it.
func (*fileDriver) listRetries() int { return fileListRetries }

// fileListRetries bounds the re-listings of a page on file://.
const fileListRetries = 4

// listItem marks a key that names no regular file (ListItem.Irregular).
func (*fileDriver) listItem(o *blob.ListObject) ListItem {
	it := plainItem(o)
	var m fs.FileMode
	if !o.IsDir && o.As(&m) && !m.IsRegular() {
		it.Irregular = fileblob.IrregularName(m)
	}
	return it
}

// fileLayout is the layout a file:// store's root shows: bucket when it
// holds the journal or an entry list (regular files, links not followed),
// directory otherwise.
func fileLayout(root string) Layout {
	if fi, err := os.Lstat(filepath.Join(root, format.JournalKey)); err == nil && fi.Mode().IsRegular() {
		return LayoutBucket
	}
	lists, _ := filepath.Glob(filepath.Join(root, format.PackPrefix+"*"+format.EntryListSuffix+"*"))
	for _, l := range lists {
		if _, _, ok := format.ParseEntryListName(filepath.Base(l)); ok {
			return LayoutBucket
		}
	}
	return LayoutDirectory
}

var fileBackend = backend{
	name: "file", scheme: "file",
	open: func(_ context.Context, u *url.URL, opts Options) (*blob.Bucket, backendDriver, error) {
		root, err := fileblob.Root(u, opts.Create)
		if err != nil {
			return nil, nil, err
		}
		d := &fileDriver{lockedWrites: lockedWrites{lock: fileLock(root)}, layout: LayoutDirectory, root: root}
		if opts.Layout == LayoutAuto {
			d.layout = fileLayout(root)
		}
		b, err := fileblob.OpenURL(u, nil)
		return b, d, err
	},
	wrap: func(_ *blob.Bucket, root string) backendDriver {
		return &fileDriver{lockedWrites: lockedWrites{lock: fileLock(root)}, layout: LayoutDirectory, root: root}
	},
}
