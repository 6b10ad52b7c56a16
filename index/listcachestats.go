package index

import "sync/atomic"

// ListCacheStats says where an index's entry lists came from since it was
// opened (Load and every Refresh): mapped from the list cache
// (`--cache-dir`, listcache.go) or read from the store, with the sizes the
// pack listing gave them (the bytes a hit did not GET), and the cache's
// directory, bound and use. Status.ListCache; the mount's log line after
// the open says the open's.
type ListCacheStats struct {
	// Dir is the cache's directory; "" when there is none.
	Dir string `json:"dir"`
	// Bound is what the directory may hold (--cache-size); Bytes is what
	// its lists held when last counted (at its opening, and after each
	// list written: ListCache.evict).
	Bound int64 `json:"bound"`
	Bytes int64 `json:"bytes"`
	// Hits are the entry lists mapped from the cache, HitBytes their
	// sizes in the store; Misses and MissBytes those read from the store
	// (every list, without a cache).
	Hits      int64 `json:"hits"`
	HitBytes  int64 `json:"hit_bytes"`
	Misses    int64 `json:"misses"`
	MissBytes int64 `json:"miss_bytes"`
	// Written are the lists written into the cache (in the background,
	// after their decode); Ignored the files found that were not their
	// list (corrupt, foreign, stale), removed and read from the store.
	Written int64 `json:"written"`
	Ignored int64 `json:"ignored"`
}

// listCounts are an index's counts of ListCacheStats; atomic.
type listCounts struct {
	hits, hitBytes, misses, missBytes, written, ignored atomic.Int64
}

// listCacheStats reports the counts, and the cache's state if there is one.
func (ix *Index) listCacheStats() ListCacheStats {
	c := &ix.listFrom
	s := ListCacheStats{Hits: c.hits.Load(), HitBytes: c.hitBytes.Load(), Misses: c.misses.Load(),
		MissBytes: c.missBytes.Load(), Written: c.written.Load(), Ignored: c.ignored.Load()}
	if lc := ix.lcache; lc != nil {
		s.Dir, s.Bound, s.Bytes = lc.dir, lc.maxBytes, lc.bytes.Load()
	}
	return s
}
