package store

// The file:// driver: oxyfs's own gocloud driver (fileBucket, in
// file_driver.go, file_list.go and file_path.go) and, here, what the store
// does differently on it. As types used:
//
//	*fs.FileMode  blob.ListObject  the mode of a listed file (Irregular)
//
// Compare-and-swap is a read-compare-write under an exclusive flock(2) on
// the store's directory (lockedWrites, dirLock): correct across processes,
// no file left behind. The change token is the SHA-256 of the bytes.

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"gocloud.dev/blob"
)

type fileDriver struct {
	defaults
	lockedWrites
	layout Layout // LayoutAuto's: what the root shows (fileLayout) when opened from a URL, else directory
}

var _ backendDriver = (*fileDriver)(nil)

func (*fileDriver) name() string { return "file" }

func (d *fileDriver) autoLayout() Layout { return d.layout }

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
		it.Irregular = irregularName(m)
	}
	return it
}

// fileLayout is the layout a file:// store's root shows: bucket when it
// holds the journal or an entry list (regular files, links not followed),
// directory otherwise.
func fileLayout(root string) Layout {
	if fi, err := os.Lstat(filepath.Join(root, JournalKey)); err == nil && fi.Mode().IsRegular() {
		return LayoutBucket
	}
	lists, _ := filepath.Glob(filepath.Join(root, PackPrefix+"*"+EntryListSuffix+"*"))
	for _, l := range lists {
		if _, _, ok := ParseEntryListName(filepath.Base(l)); ok {
			return LayoutBucket
		}
	}
	return LayoutDirectory
}

// dirLock is an exclusive flock(2) on the store's directory. flock locks
// belong to the open file description, so two handles in one process exclude
// each other as two processes do. It leaves no file behind.
type dirLock struct {
	dir string
	mu  sync.Mutex // one holder per handle at a time
	f   *os.File
}

func fileLock(dir string) locker { return &dirLock{dir: dir} }

func (l *dirLock) Lock() error {
	l.mu.Lock()
	f, err := os.Open(l.dir)
	if err != nil {
		l.mu.Unlock()
		return fmt.Errorf("open %s for locking: %w", l.dir, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		l.mu.Unlock()
		return fmt.Errorf("flock %s: %w", l.dir, err)
	}
	l.f = f
	return nil
}

func (l *dirLock) Unlock() {
	if l.f != nil {
		syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		l.f.Close()
		l.f = nil
	}
	l.mu.Unlock()
}

var fileBackend = backend{
	name: "file", scheme: "file",
	open: func(_ context.Context, u *url.URL, opts Options) (*blob.Bucket, backendDriver, error) {
		root, err := fileRoot(u, opts.Create)
		if err != nil {
			return nil, nil, err
		}
		d := &fileDriver{lockedWrites: lockedWrites{lock: fileLock(root)}, layout: LayoutDirectory}
		if opts.Layout == LayoutAuto {
			d.layout = fileLayout(root)
		}
		b, err := openFileURL(u)
		return b, d, err
	},
	wrap: func(_ *blob.Bucket, root string) backendDriver {
		return &fileDriver{lockedWrites: lockedWrites{lock: fileLock(root)}, layout: LayoutDirectory}
	},
}
