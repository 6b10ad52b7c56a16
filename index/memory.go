package index

import (
	"math"
	"os"
	"runtime/debug"
)

// Memory of a process serving one index (oxyfs mount, oxyfs serve); see
// doc.go "# Memory" for what each part costs.

// sigCacheShare is the part of a Go memory limit (GOMEMLIMIT,
// debug.SetMemoryLimit) the signature cache takes by default, and the
// table of signature sizes at most: an eighth each.
const sigCacheShare = 8

// minSigCacheBytes is the least default bound under a memory limit.
const minSigCacheBytes = 1 << 20

// defaultSigCacheBytes is the signature cache's bound when Options leave it
// 0: DefaultSigCacheBytes, or an eighth of the process's Go memory limit
// when that is less (never under 1 MiB).
func defaultSigCacheBytes() int64 { return sigCacheBytesFor(memoryLimit()) }

// memoryLimit is the process's Go memory limit (math.MaxInt64: none).
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// sigCacheBytesFor is defaultSigCacheBytes under the memory limit limit.
func sigCacheBytesFor(limit int64) int64 {
	if limit <= 0 || limit == math.MaxInt64 {
		return DefaultSigCacheBytes
	}
	return max(min(DefaultSigCacheBytes, limit/sigCacheShare), minSigCacheBytes)
}

// knownSizesFor is how many signature sizes the cache remembers under the
// memory limit limit: maxKnownSizes, or as many as an eighth of the limit
// holds (sizeItemBytes each) when that is fewer.
func knownSizesFor(limit int64) int {
	if limit <= 0 || limit == math.MaxInt64 {
		return maxKnownSizes
	}
	return int(max(min(maxKnownSizes, limit/sigCacheShare/sizeItemBytes), 1024))
}

// gcHeadroomBytes is the heap the garbage collector lets grow past the live
// heap of a big set before it runs (SettleMemory).
const gcHeadroomBytes = 64 << 20

// minGCPercent is the lowest GOGC SettleMemory sets.
const minGCPercent = 25

// gcPercentFor is the GOGC that lets the heap grow gcHeadroomBytes past a
// set of setBytes before a collection, between minGCPercent and the
// default 100.
func gcPercentFor(setBytes int64) int {
	if setBytes <= 0 {
		return 100
	}
	return int(max(minGCPercent, min(100, 100*gcHeadroomBytes/setBytes)))
}

// SettleMemory readies the process's memory for serving ix once an open or a
// refresh built its set; oxyfs mount and oxyfs serve call it after Load
// and after each Refresh that changed the view. It is process-wide:
//
//   - GOGC. The set is immutable and pointer-free: the collector marks
//     each of its arrays once and never scans them, so the default GOGC of
//     100, which lets the heap grow by the live heap before a collection,
//     would keep a second set's worth of garbage resident for no saving in
//     collector work. SettleMemory sets GOGC to let the heap grow by
//     gcHeadroomBytes past the set (gcPercentFor: 100 up to a 64 MiB set,
//     25 at the least), unless the GOGC environment variable chose one.
//   - The open's transient. It returns to the operating system the memory
//     the build used and dropped (the compressed lists, the builder's map
//     of distinct values, the arrays as they grew, the merges' copies, the
//     previous set on a refresh): without it that memory stays resident
//     until the runtime's scavenger returns it, and a mount's RSS right
//     after its open is the open's peak. This runs a garbage collection.
func SettleMemory(ix *Index) {
	if os.Getenv("GOGC") == "" {
		var set int64
		if v := ix.v.Load(); v != nil {
			set = v.base.memoryBytes() + v.journal.bytes()
		}
		debug.SetGCPercent(gcPercentFor(set))
	}
	debug.FreeOSMemory()
}
