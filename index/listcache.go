package index

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// ListCache is a directory of decoded entry lists on this host's disk
// (`--cache-dir`), so an open of a list this host decoded before costs no
// GET and no decode: the file is mapped read-only and its arrays are the
// set's (listfile.go), shared by every mount of the store on the host
// through the page cache.
//
// A list is named by the SHA-256 of its text (format.EntryListName), so
// its decoded copy, checked against its name and the size the pack
// listing gave (and the store's URL), stays true until the list is
// retired, when the open that sees it retired removes the file. A file
// that fails any check (listfile.go: checksum, header, bounds) is removed,
// reported once, and the list is read from the store and cached again:
// never believed. The cache is an optimisation only: an open with it
// builds the same set as one without (the decode is the same; only where
// the arrays lie differs).
//
// Layout: <dir>/<store>/<list name>, <store> the first 32 hex characters
// of the SHA-256 of the store's URL. Directories are made 0700 and files
// 0600; a directory that is not this user's, or that others may write,
// is refused. Files are written to a temporary name and renamed. The
// whole directory is bounded by maxBytes: after each write the files
// used longest ago (by modification time, which a hit sets) are removed
// until the rest fit.
//
// Concurrency: safe for concurrent use; mounts of one host may share a
// directory (a rename replaces a file whole; a mapping outlives the
// file's removal). Writes run in the background (Wait waits for them).
type ListCache struct {
	dir      string // read-only after OpenListCache
	maxBytes int64  // read-only after OpenListCache
	writes   sync.WaitGroup
	evictMu  sync.Mutex   // serializes evict
	bytes    atomic.Int64 // what its lists held at the last evict (ListCacheStats.Bytes)
}

// DefaultListCacheBytes bounds a list cache when the caller gives no
// bound: 1 GiB, about 27 million entries at 38 bytes each.
const DefaultListCacheBytes = 1 << 30

// DefaultListCacheDir is the list cache's directory unless told otherwise:
// oxyfs/lists under the user's cache directory (os.UserCacheDir:
// $XDG_CACHE_HOME or ~/.cache on Linux), beside the demo store.
func DefaultListCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("list cache: %w", err)
	}
	return filepath.Join(d, "oxyfs", "lists"), nil
}

// OpenListCache makes dir (0700) if it is missing and checks that it is
// this user's and that no one else may write it. maxBytes ≤ 0 is
// DefaultListCacheBytes.
func OpenListCache(dir string, maxBytes int64) (*ListCache, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultListCacheBytes
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("list cache %s: %w", dir, err)
	}
	if !listCacheSupported {
		return nil, fmt.Errorf("list cache %s: not supported on this system (no shared read-only mapping of files)", dir)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("list cache %s: %w", dir, err)
	}
	if err := checkCacheDir(abs); err != nil {
		return nil, err
	}
	c := &ListCache{dir: abs, maxBytes: maxBytes}
	c.evict() // counts what it holds, and trims it to a smaller bound
	return c, nil
}

// Dir is the cache's directory.
func (c *ListCache) Dir() string { return c.dir }

// Wait waits for the writes started so far.
func (c *ListCache) Wait() { c.writes.Wait() }

// checkCacheDir refuses a directory (not a symbolic link) that is not this
// user's or that its group or others may write.
func checkCacheDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("list cache %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("list cache %s: not a directory (%v)", dir, fi.Mode())
	}
	if err := ownedByMe(fi); err != nil {
		return fmt.Errorf("list cache %s: %w", dir, err)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("list cache %s: mode %v: others may write it, and so plant what an open would read; use a folder only you may write", dir, fi.Mode())
	}
	return nil
}

// storeDir is the directory of a store's lists: made 0700 and checked.
func (c *ListCache) storeDir(storeID string) (string, error) {
	dir := filepath.Join(c.dir, storeID)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("list cache %s: %w", dir, err)
	}
	return dir, checkCacheDir(dir)
}

// cacheStoreID is a store's name in the cache: a hash of its URL.
func cacheStoreID(url string) string {
	sum := sha256.Sum256([]byte(url))
	return hex.EncodeToString(sum[:16])
}

// isStoreID reports whether name is a cacheStoreID.
func isStoreID(name string) bool {
	_, err := hex.DecodeString(name)
	return len(name) == 32 && err == nil && strings.ToLower(name) == name
}

// listPath is where a list's file is: its name is checked to be a list's
// (so it names no other path).
func (c *ListCache) listPath(storeID, name string) (string, bool) {
	if _, _, ok := format.ParseEntryListName(name); !ok {
		return "", false
	}
	return filepath.Join(c.dir, storeID, name), true
}

// load returns the list key names, mapped from its file; nil, nil when
// there is none. A file that is there but is not the list (errListFile)
// is removed and the error returned, for the caller to report.
func (c *ListCache) load(key listFileKey) (*decodedList, error) {
	path, ok := c.listPath(key.store, key.name)
	if !ok {
		return nil, nil
	}
	d, err := mapListFile(path, key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	now := time.Now()
	_ = os.Chtimes(path, now, now) // used: the last to be evicted
	return d, nil
}

// put writes d's file in the background, unless it would not fit the
// bound; then it evicts. Errors are reported to warn; a file written is
// counted in written (if not nil).
func (c *ListCache) put(key listFileKey, d *decodedList, warn func(string), written *atomic.Int64) {
	path, ok := c.listPath(key.store, key.name)
	if !ok {
		return
	}
	c.writes.Add(1)
	go func() {
		defer c.writes.Done()
		wrote, err := c.write(path, key, d)
		if err != nil {
			warn(fmt.Sprintf("list cache: %v (the list is read from the store at the next open)", err))
			return
		}
		if wrote && written != nil {
			written.Add(1)
		}
		c.evict()
	}()
}

// write writes d's file at path; false, nil when it would not fit the
// bound.
func (c *ListCache) write(path string, key listFileKey, d *decodedList) (bool, error) {
	dir, err := c.storeDir(key.store)
	if err != nil {
		return false, err
	}
	f, err := os.CreateTemp(dir, ".tmp-*") // 0600
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	sum, err := writeListFile(bw, key, d)
	if err == nil {
		err = bw.Flush()
	}
	var size int64
	if err == nil {
		var sb [4]byte
		binary.NativeEndian.PutUint32(sb[:], sum)
		_, err = f.WriteAt(sb[:], 16)
	}
	if err == nil {
		size, err = f.Seek(0, io.SeekEnd)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
	case size > c.maxBytes:
		_ = os.Remove(f.Name()) // it would evict itself
		return false, nil
	default:
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}

// retire removes the files of lists a store retired.
func (c *ListCache) retire(storeID string, names []string) {
	for _, name := range names {
		if path, ok := c.listPath(storeID, name); ok {
			_ = os.Remove(path)
		}
	}
}

// evict removes the files used longest ago until the rest fit maxBytes,
// and temporary files an interrupted write left over an hour ago, and
// counts what the rest hold (bytes).
func (c *ListCache) evict() {
	c.evictMu.Lock()
	defer c.evictMu.Unlock()
	type file struct {
		path string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	stores, _ := os.ReadDir(c.dir)
	for _, s := range stores {
		if !s.IsDir() || !isStoreID(s.Name()) {
			continue // not the cache's: left alone
		}
		dir := filepath.Join(c.dir, s.Name())
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if strings.HasPrefix(e.Name(), ".tmp-") {
				if time.Since(fi.ModTime()) > time.Hour {
					_ = os.Remove(path)
				}
				continue
			}
			if _, _, ok := format.ParseEntryListName(e.Name()); !ok {
				continue // not the cache's: left alone
			}
			files = append(files, file{path, fi.Size(), fi.ModTime()})
			total += fi.Size()
		}
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Or(a.used.Compare(b.used), strings.Compare(a.path, b.path)) })
	defer func() { c.bytes.Store(total) }()
	for _, f := range files {
		if total <= c.maxBytes {
			return
		}
		if os.Remove(f.path) == nil {
			total -= f.size
		}
	}
}
