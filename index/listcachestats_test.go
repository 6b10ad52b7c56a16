package index

import (
	"os"
	"testing"
)

// TestListCacheStatsCountWhereListsCameFrom (issue 38): Status says how
// many entry lists an open read from the store and how many it mapped from
// the list cache, with their sizes, and the cache's directory, bound and
// what its files hold; an open without a cache counts its lists as read
// from the store and names no directory.
func TestListCacheStatsCountWhereListsCameFrom(t *testing.T) {
	st := cacheGenStore(t, 3000)
	dir := t.TempDir()
	const bound = 64 << 20
	plain, _ := openCached(t, st, "", 0)
	first, _ := openCached(t, st, dir, bound)
	second, _ := openCached(t, st, dir, bound)

	live := first.Status().LiveLists
	if len(live) == 0 {
		t.Fatal("the store has no live list")
	}
	var listBytes int64
	for _, l := range live {
		listBytes += l.Size
	}
	files := cacheFiles(t, dir)
	var fileBytes int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		fileBytes += fi.Size()
	}
	n := int64(len(live))
	for _, c := range []struct {
		name string
		ix   *Index
		want ListCacheStats
	}{
		{"no cache", plain, ListCacheStats{Misses: n, MissBytes: listBytes}},
		{"first open", first, ListCacheStats{Dir: dir, Bound: bound, Bytes: fileBytes, Misses: n, MissBytes: listBytes, Written: n}},
		{"second open", second, ListCacheStats{Dir: dir, Bound: bound, Bytes: fileBytes, Hits: n, HitBytes: listBytes}},
	} {
		if got := c.ix.Status().ListCache; got != c.want {
			t.Errorf("%s: list_cache %+v, want %+v", c.name, got, c.want)
		}
	}
	if fileBytes == 0 || len(files) != len(live) {
		t.Errorf("the cache holds %d files of %d bytes; want one per live list (%d)", len(files), fileBytes, len(live))
	}
}
