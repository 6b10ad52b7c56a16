package fs

import (
	"context"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
)

// Leaf ids (issue 38, "no node per name", for entry files; Options.LeafIDs,
// off by default). With view ids (viewids.go) an object directory has no
// go-fuse node, but its entry files had one each (viewleaves.go: ~770 B a
// file the kernel held). With leaf ids an entry file the kernel looks up
// is named by a node id computed from the entry and its version, answered
// by viewFS itself (leaffs.go), and nothing is kept per file the kernel
// holds:
//
//	1 0 1 kkk <key: 36 bits> <name: 8 bits> <version: 14 bits>
//
// the top bit set like every view id, and bit 61 set, which no view id
// of a directory has (their type, bits 61–59, is 1, 2 or 3: viewids.go),
// so the two are told apart by isLeafID; kkk is the entry's kind, the key
// index.ObjectKey(object, 36), the name 8 bits of an FNV-1a hash of the
// entry's name (its signer or value) and the version the low 14 bits of
// index.SigState.Version (0 for the other kinds, which never change). The
// reply's generation is the whole version, as a node's was (versions.go).
//
// A by-signer symlink's link id (linkids.go; with leaf ids only) is its
// signature's leaf id with no kind, leaf bit or version:
//
//	1 0 000 0 <key: 36 bits> <name: 8 bits> <0: 14 bits>
//
// bits 62–58 and the low 14 clear: view type 0, which no view id has, and
// bit 61 clear, so isLinkID accepts what neither isLeafID nor isViewID
// does (TestLeafIDsAreNotViewIDs).
//
// An id is turned back into its entry by a binary search of the view's set
// on the key (index.ObjectsByKey) and a listing of that object directory
// (index.ReadDirNames), whose one name of the hash it must be. A LOOKUP
// gives a leaf id only when that finds the entry it is for ("leads back");
// else — two objects share the key (expected pairs at 10M objects:
// 10^14 / 2^37 ≈ 730), two names of the directory share the hash, the set
// does not hold the object (an own write not folded in yet, a store that
// is not folded), a write of this mount is in progress on the name
// (pendingWrites.writing, or the thread's reservation) — the LOOKUP goes to
// the leaves' directory as before (viewleaves.go): go-fuse's node table is
// the table of the ids that do not lead back, kept while the kernel holds
// them (its lookups less FORGET's). An id whose version bits are not its
// signature's current version's is of an older version: stale, as a
// node of an older version was (ESTALE but for the answers entryNode
// gives a stale node).
//
// State per id is kept only while it matters (leafstate.go): a node with
// descriptors open on it, or one that took a version other than its id's
// (adopt, settle) or was read beside a write (mixed), until the kernel
// forgets it. Every other request is answered by a transient entryNode
// made for it.
//
// Two more tables, both of fixed size: which ids the kernel was given
// (seen, a 128 KiB bitmap indexed by a hash of the id without its version
// bits), so that a signature's change is told to the kernel (EntryNotify)
// only when it may hold a name of it; and the last lookups given
// (lookedUp, a ring of leafRingSize), for entryNode.retried.
type leafIDs struct {
	ix *index.Index // read-only after Mount

	seen [leafSeenBits / 64]atomic.Uint64 // atomic: bit leafSeenBit(p) set once a leaf id of the entry at p was given to the kernel
	// sigHH has bit b set once a leaf id of a signature under sig/<b> was
	// given to the kernel (dropAllLeaves drops only those <hh> names).
	// Atomic.
	sigHH [4]atomic.Uint64

	ringMu sync.Mutex           // protects ring and ringAt; a leaf lock
	ring   [leafRingSize]leafAt // guarded by ringMu: the last lookups given
	ringAt int                  // guarded by ringMu: the next slot of ring

	state leafState // the ids with state (leafstate.go)
}

// leafAt is a lookup of a leaf id given to the kernel, and when.
type leafAt struct {
	id uint64
	at int64 // UnixNano
}

// The leaf ids' fields.
const (
	leafBit       = uint64(1) << 61
	leafKindShift = 58
	leafKeyBits   = 36
	leafKeyShift  = 22
	leafHashShift = 14
	leafVerBits   = 14
	leafVerMask   = uint64(1)<<leafVerBits - 1

	// A link id's bits that are always clear (bit 58 and the version's),
	// and those it takes from its signature's leaf id.
	linkZeroBits    = uint64(1)<<leafKindShift | leafVerMask
	linkKeyHashBits = (uint64(1)<<leafKeyBits-1)<<leafKeyShift | uint64(0xff)<<leafHashShift

	leafSeenBits = 1 << 20 // 128 KiB
	leafRingSize = 1 << 14 // 256 KiB: the lookups of the last retryWindow, but for a burst past 16,384
)

// isLeafID reports whether a node id is a leaf id.
func isLeafID(id uint64) bool { return id&(viewBit|viewObjBit|leafBit) == viewBit|leafBit }

// leafNameHash is the 8 bits of an entry's name in its leaf id under
// seed (0–3): the seed in the top two, 6 bits of FNV-1a of the seed and
// the name below. A name takes the first seed under which no other file
// name of its directory has its bits (leafIDs.idOf): of 8 signers, a name
// shares its bits with another under one hash 10.4% of the time
// (1 − (63/64)^7), under all four 1.2e-4, where one 8-bit hash would leave
// 2.7% of the names to go-fuse nodes.
func leafNameHash(name string, seed uint64) uint64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte{byte(seed)})
	_, _ = h.Write([]byte(name))
	s := h.Sum32()
	return seed<<6 | uint64(s^s>>6^s>>12^s>>18^s>>24)&63
}

// leafSeeds is how many seeds a name's bits may take.
const leafSeeds = 4

// leafSeenBit is the bit of the entry at p in the seen bitmap (any of its
// ids has the same).
func leafSeenBit(p string) uint64 {
	return (index.PathIno(p) * 0x9e3779b97f4a7c15) >> (64 - 20)
}

// given records that the kernel was given id, of the entry at p (a
// LOOKUP's reply).
func (l *leafIDs) given(id uint64, p string) {
	setBit(l.seen[:], leafSeenBit(p))
	if e, err := index.ParseEntryPath(p); err == nil && e.Kind == format.KindSig && len(e.Object) >= 2 {
		if hh, err := strconv.ParseUint(e.Object[:2], 16, 8); err == nil {
			setBit(l.sigHH[:], hh)
		}
	}
	l.ringMu.Lock()
	l.ring[l.ringAt] = leafAt{id: id, at: time.Now().UnixNano()}
	l.ringAt = (l.ringAt + 1) % leafRingSize
	l.ringMu.Unlock()
}

// setBit sets bit b of the bitmap words.
func setBit(words []atomic.Uint64, b uint64) {
	w := &words[b/64]
	for old := w.Load(); old&(1<<(b%64)) == 0 && !w.CompareAndSwap(old, old|1<<(b%64)); old = w.Load() {
	}
}

// sigHHHeld reports whether the kernel may hold a leaf id of a signature
// under sig/<hh>.
func (l *leafIDs) sigHHHeld(hh byte) bool {
	return l.sigHH[hh/64].Load()&(1<<(hh%64)) != 0
}

// mayHold reports whether the kernel may hold a leaf id of the entry at p
// (false: it was never given one).
func (l *leafIDs) mayHold(p string) bool {
	b := leafSeenBit(p)
	return l.seen[b/64].Load()&(1<<(b%64)) != 0
}

// lookedUpAt is when id was last given to the kernel, if within the
// ring's lookups (UnixNano; 0: not found).
func (l *leafIDs) lookedUpAt(id uint64) int64 {
	l.ringMu.Lock()
	defer l.ringMu.Unlock()
	for i := 1; i <= leafRingSize; i++ {
		s := l.ring[(l.ringAt-i+leafRingSize)%leafRingSize]
		if s.at == 0 || time.Since(time.Unix(0, s.at)) > retryWindow {
			return 0
		}
		if s.id == id {
			return s.at
		}
	}
	return 0
}

// leafEntry is what a leaf id names as of the current view.
type leafEntry struct {
	path string
	e    format.Entry
	ver  uint64 // the id's version bits
}

// entry turns id back into its entry; ok is false when it names none
// (its key or its name's hash is not one of the view's set).
func (l *leafIDs) entry(ctx context.Context, id uint64) (leafEntry, bool) {
	if !isLeafID(id) {
		return leafEntry{}, false
	}
	kind := format.Kind(id >> leafKindShift & 7)
	if int(kind) >= format.NumKinds {
		return leafEntry{}, false
	}
	key := id >> leafKeyShift & (uint64(1)<<leafKeyBits - 1)
	var hexBuf [format.MaxObjectHex]byte
	obj, n, err := l.ix.ObjectsByKey(ctx, kind, key, leafKeyBits, hexBuf[:0])
	if err != nil || n != 1 || len(obj) < format.MinObjectHex {
		return leafEntry{}, false
	}
	dir, _ := objectDir(kind, obj)
	var found string
	h := id >> leafHashShift & 0xff
	err = l.names(ctx, dir, func(names []index.DirName) {
		for _, d := range names {
			if d.Type == index.NodeFile && leafNameHash(d.Name, h>>6) == h {
				if found != "" {
					found = "" // two names of the bits: neither has this id
					return
				}
				found = d.Name
			}
		}
	})
	if err != nil || found == "" {
		return leafEntry{}, false
	}
	p := index.JoinPath(dir, found)
	e, err := index.ParseEntryPath(p)
	if err != nil {
		return leafEntry{}, false
	}
	return leafEntry{path: p, e: e, ver: id & leafVerMask}, true
}

// names calls f with the names of the object directory dir (the view's,
// index.ReadDirNames).
func (l *leafIDs) names(ctx context.Context, dir string, f func([]index.DirName)) error {
	scratch := dirNamesPool.Get().(*[]index.DirName)
	defer func() {
		clear(*scratch) // hold no name past the call
		*scratch = (*scratch)[:0]
		dirNamesPool.Put(scratch)
	}()
	names, err := l.ix.ReadDirNames(ctx, dir, (*scratch)[:0])
	*scratch = names
	if err != nil {
		return err
	}
	f(names)
	return nil
}

// idOf is the leaf id of the entry at p (e) at version ver when it leads
// back to it (entry); ok is false otherwise: the entry gets a go-fuse node.
func (l *leafIDs) idOf(ctx context.Context, p string, e format.Entry, ver uint64) (uint64, bool) {
	dir, name := index.SplitPath(p)
	key, ok := index.ObjectKey(e.Object, leafKeyBits)
	if !ok {
		return 0, false
	}
	h := uint64(0)
	err := l.names(ctx, dir, func(names []index.DirName) {
		for seed := uint64(0); seed < leafSeeds; seed++ {
			want, n := leafNameHash(name, seed), 0
			for _, d := range names {
				if d.Type == index.NodeFile && leafNameHash(d.Name, seed) == want {
					n++
				}
			}
			if n == 1 {
				h = want | 1<<8
				return
			}
		}
	})
	if err != nil || h == 0 {
		return 0, false
	}
	id := viewBit | leafBit | uint64(e.Kind)<<leafKindShift | key<<leafKeyShift | (h&0xff)<<leafHashShift | ver&leafVerMask
	if got, ok := l.entry(ctx, id); !ok || got.path != p {
		return 0, false
	}
	return id, true
}
