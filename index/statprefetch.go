package index

import (
	"sync/atomic"

	"github.com/oxyfs/oxyfs/store/format"
)

// Listings that tell read-ahead where the stats go (issue 38, "stats
// without a GET each").
//
// A signature's size is its bytes' length, which no entry list carries, so
// `ls -l`, `ls -lR`, `du` and `find -size` cost one GET per signature they
// stat. Read-ahead (readahead.go) is triggered by the stats that need a
// GET (SigStat), but not by those whose size is known already (a LOOKUP
// answered by Stat): a walk that outruns its window finds a signature
// whose size is not known, waits a round trip for it, and starts over at a
// window of readAheadFirst — once every few hundred signatures at 20 ms.
//
// A lister that stats what it lists reads a directory and then stats its
// names, directory after directory in key order. SigsListed is told of
// each listing of a directory of signatures (sig/<hh>/<rest>/; the mount
// calls it when the kernel reads one): when a signature was stated since
// the previous such listing (stats follow listings: ls -l, du, find
// -size), it schedules the directory's signatures at once, before the
// kernel asks for their attributes, and read-ahead's window from there on
// (readAhead.trigger: a listing that follows the window grows it, so a
// walk's next directories are fetched ahead of it). Otherwise (a first
// listing, or a walk that stats no signature: find -type f, ls -R, a tree
// copy that lists first) the listing sends nothing, and the first stat of
// a signature of that directory schedules it then: a cold `ls -l` of one
// directory waits for one round trip, with the directory's GETs in flight
// together, and a walk that stats nothing still sends no request.
//
// Everything scheduled goes through read-ahead's queue and workers: at its
// adaptive depth (readahead.go: congestionWindow), within its window (never past a quarter of
// what the signature cache holds) and the readers' budget (sigGet), one
// GET per key whoever asks, into the signature cache, whose changes drop
// what a refresh made stale. Read-ahead off (Options.ReadAhead < 0) turns
// this off too. Status.ReadAhead.Listings counts the directories scheduled.
//
// All fields are atomics: Stat takes no lock for it.
type listPrefetch struct {
	// seen: a signature was stated (Stat) since the last listing of a
	// directory of signatures. Atomic.
	seen atomic.Bool
	// pending is the object whose directory was listed last while not
	// armed (nil: none): the first stat of one of its signatures
	// schedules it. Atomic.
	pending atomic.Pointer[string]
	// listings counts the directories scheduled. Atomic.
	listings atomic.Int64
}

// SigsListed tells read-ahead that dir, a directory of the tree, was
// listed (a READDIR(PLUS) of the mount). For a directory of signatures
// (sig/<hh>/<rest>) it schedules their GETs when stats follow listings
// (listPrefetch); any other directory, or read-ahead off, does nothing. It
// sends no request itself and does not wait for any.
func (ix *Index) SigsListed(dir string) {
	ra := &ix.ra
	if ra.n <= 0 {
		return
	}
	t, ok := ParsePath(dir)
	if !ok || t.Level != LevelObject || t.Kind != format.KindSig {
		return
	}
	lp := &ra.lp
	if !lp.seen.Swap(false) {
		obj := t.Object
		lp.pending.Store(&obj)
		return
	}
	lp.pending.Store(nil)
	ra.listed(ix.v.Load(), t.Object)
}

// sigStated is Stat's note of a signature it described: stats follow
// listings; the first of the directory listed last schedules it.
func (ra *readAhead) sigStated(v *view, e format.Entry) {
	if ra.n <= 0 {
		return
	}
	lp := &ra.lp
	if !lp.seen.Load() {
		lp.seen.Store(true)
	}
	if p := lp.pending.Load(); p != nil && *p == e.Object && lp.pending.CompareAndSwap(p, nil) {
		ra.listed(v, e.Object)
	}
}

// listed schedules the signatures of object obj, then read-ahead's window
// after them.
func (ra *readAhead) listed(v *view, obj string) {
	if v == nil {
		return
	}
	// The window from the object's first signature: an entry with no
	// value sorts before every one of the object's.
	ra.trigger(v, format.Entry{Kind: format.KindSig, Object: obj})
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if ra.closed {
		return
	}
	ra.lp.listings.Add(1)
	// And every signature of the object, however many signers it has:
	// what the lister stats next. The queue keeps at most n.
	k := &v.base.kinds[format.KindSig]
	var ob [format.MaxObjectBytes]byte
	if id, ok := format.DecodeObjectID(obj, &ob); ok {
		if i, found := k.findObj(id); found {
			var buf []byte
			for j := k.first[i]; j < k.first[i+1]; j++ {
				buf = appendSigKey(buf[:0], k.obj(i), &v.base.vt, k.vals[j])
				ra.addLocked(string(buf))
			}
		}
	}
	ra.spawnLocked()
}
