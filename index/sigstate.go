package index

import (
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// SigState is what this index knows of one signature at one moment, with
// no request, taken under one lock (sigCache.mu): its version, when that
// version began, and, when its bytes were read or written since, their
// size, their key's time and their identity. A mount asks it once per
// kernel request (fs: Lookup, Getattr), where it asked SigVersion,
// SigIdentity and the size one by one, each under the lock again: the
// fields of one SigState agree — Size is the size of Version's bytes.
type SigState struct {
	// Version is SigVersion: the number of the signature's last change.
	Version uint64
	// ChangedAt is SigChangedAt: when this index last saw the bytes
	// change, or could no longer tell (the zero time: not since it
	// opened).
	ChangedAt time.Time
	// Size is the size of Version's bytes, or -1 when not known: not read
	// or written since the version last moved, or a read to be compared
	// with the next one (Recheck). A legacy list's signature has none
	// here (Stat gives its size from the list).
	Size int64
	// ModTime is the key's own Last-Modified with those bytes (SigStat;
	// the zero time when not known: the store's last change stands for
	// it).
	ModTime time.Time
	// ID is the identity of Version's bytes when IDKnown (SigIdentity):
	// known under Recheck too, which keeps the last read's to compare.
	ID      SigID
	IDKnown bool
	// Recheck is SigRecheck: the next read is to be compared with the
	// last.
	Recheck bool
}

// SigState returns signature e's state (see SigState), with no request.
// Entries of other kinds are version 0 and size 0: they never change.
func (ix *Index) SigState(e format.Entry) SigState {
	if e.Kind != format.KindSig {
		return SigState{}
	}
	return ix.sigs.state(e)
}

// state is SigState of a signature entry. The key is formatted only when
// the cache knows a size or a change of a key of its own (the usual
// case after an open: neither); each answer is read under one holding of
// c.mu.
func (c *sigCache) state(e format.Entry) SigState {
	c.mu.Lock()
	if len(c.changes.at) == 0 && len(c.sizes) == 0 {
		st := SigState{Version: c.changes.all.seq, ChangedAt: c.changes.all.at, Size: -1}
		c.mu.Unlock()
		return st
	}
	c.mu.Unlock()
	key := e.Key()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stateLocked(key)
}

// stateLocked is key's SigState; c.mu is held.
func (c *sigCache) stateLocked(key string) SigState {
	last := c.lastLocked(key)
	st := SigState{Version: last.seq, ChangedAt: last.at, Size: -1}
	if m, ok := c.sizes[key]; ok {
		st.ID, st.IDKnown, st.Recheck = SigID{Size: m.size, Sum: m.sum}, true, m.recheck
		if !m.recheck {
			st.Size, st.ModTime = m.size, timeOf(m.mod)
		}
	}
	return st
}

// SigIdentity returns signature e's version and, when this index knows
// them without a request (its bytes were read or written since the version
// last moved), the identity of that version's bytes. Two versions with the
// same identity hold the same bytes: the mount keeps a node of the older
// one (fs: versions.go), instead of answering ESTALE for a version that
// moved to the same bytes (a refresh that saw an own write's line).
func (ix *Index) SigIdentity(e format.Entry) (ver uint64, id SigID, ok bool) {
	st := ix.SigState(e)
	return st.Version, st.ID, st.IDKnown
}
