//go:build unix

package index

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"syscall"
)

// listCacheSupported: files are mapped shared and read-only (syscall.Mmap),
// so mounts on one host share the pages.
const listCacheSupported = true

func ownedByMe(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("no owner to check")
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("owned by uid %d, not this user (uid %d)", st.Uid, uid)
	}
	return nil
}

// listMap is a cache file mapped read-only; it is unmapped once nothing
// holds it (a set holds it in pins while its arrays are in it).
type listMap struct{ data []byte }

func newListMap(data []byte) *listMap {
	m := &listMap{data: data}
	runtime.AddCleanup(m, func(b []byte) { _ = syscall.Munmap(b) }, data)
	return m
}

// mapListFile maps a cache file and parses it.
func mapListFile(path string, key listFileKey) (*decodedList, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 || fi.Size() > 1<<40 {
		return nil, fmt.Errorf("%w %s: not a regular file, or empty", errListFile, path)
	}
	if err := ownedByMe(fi); err != nil {
		return nil, fmt.Errorf("%w %s: %w", errListFile, path, err)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	d, err := parseListFile(data, key)
	if err != nil {
		_ = syscall.Munmap(data)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d.pin = newListMap(data)
	return d, nil
}
