//go:build !unix

package index

import (
	"errors"
	"io/fs"
)

// listCacheSupported: without a shared read-only mapping of files (and a
// file owner to check), there is no list cache; OpenListCache says so and
// a mount runs without it, answering the same.
const listCacheSupported = false

func ownedByMe(fs.FileInfo) error { return errors.New("no owner to check") }

// listMap is a cache file mapped read-only (never, here).
type listMap struct{ data []byte }

func mapListFile(string, listFileKey) (*decodedList, error) {
	return nil, errors.New("list cache: not supported on this system")
}
