package index

import (
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// maxSigChanges bounds the signatures whose last change is remembered one
// by one; past it the table starts over and every signature counts as
// changed at that moment.
const maxSigChanges = 1 << 12

// sigChanges remembers when this index last saw a signature's bytes change,
// or lost the means to tell, and numbers the changes: a signature's version
// (SigVersion) is the number of its last change. The mount reads a
// signature through the page cache only when no size the kernel may still
// hold can be older than that (fs: Options.AttrTimeout), and makes each
// version of a signature a node of its own (its inode generation). It
// lives in sigCache and is guarded by its mu.
//
// A change is: a refresh that shows a signature replaced (a new journal
// line for its key: journalView.replaced), or that cannot vouch for it (a
// line after one of the view before gone: journalView.gone; a folded view
// that no longer holds it: Index.dropAbsent), this process's own write of
// it, a read whose bytes differ from the ones last read (size or digest:
// replaced without a journal line), and — for every signature at once — a
// directory-layout refresh (no journal says what changed), a refresh
// whose last look is older than its window (Index.lookTrusted), the
// remembered sizes starting over, and this table starting over.
type sigChanges struct {
	at  map[string]sigChange // by key
	all sigChange            // every signature changed then
	seq uint64               // the number of the last change
}

// sigChange is one change: when, its number, and whether it was this
// index's own write (put; ownlines.go).
type sigChange struct {
	at  time.Time
	seq uint64
	own bool
}

// changedLocked notes that key's bytes changed now; c.mu is held.
func (c *sigCache) changedLocked(key string) { c.noteChangeLocked(key, false) }

// ownChangedLocked notes this index's own write of key; c.mu is held.
func (c *sigCache) ownChangedLocked(key string) { c.noteChangeLocked(key, true) }

// lastOwn reports whether key's last change was this index's own write.
func (c *sigCache) lastOwn(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.changes.at[key]
	return ok && k.own && k.seq > c.changes.all.seq
}

func (c *sigCache) noteChangeLocked(key string, own bool) {
	if c.changes.at == nil {
		c.changes.at = make(map[string]sigChange)
	}
	if len(c.changes.at) >= maxSigChanges {
		c.allChangedLocked()
	}
	c.changes.seq++
	c.changes.at[key] = sigChange{at: c.now(), seq: c.changes.seq, own: own}
	c.watch.noteLocked(key)
}

// allChangedLocked notes that any signature may have changed now; c.mu is
// held.
func (c *sigCache) allChangedLocked() {
	c.changes.seq++
	c.changes.all = sigChange{at: c.now(), seq: c.changes.seq}
	clear(c.changes.at)
	c.watch.noteLocked("")
}

// lastLocked is key's last change (all's when key has none of its own
// since); c.mu is held.
func (c *sigCache) lastLocked(key string) sigChange {
	if k, ok := c.changes.at[key]; ok && k.seq > c.changes.all.seq {
		return k
	}
	return c.changes.all
}

// versionLocked is key's version; c.mu is held.
func (c *sigCache) versionLocked(key string) uint64 { return c.lastLocked(key).seq }

// changedAt is the last time key changed, or the zero time.
func (c *sigCache) changedAt(key string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastLocked(key).at
}

// SigChangedAt is the last time this index saw the bytes of signature e
// change, or could no longer tell whether they had (see sigChanges): the
// zero time if never since it opened. Entries of other kinds never change.
// A size reported for e before that time may be wrong now; one reported
// after it is the size of the bytes ReadSig returns, until a refresh or a
// write moves it again.
func (ix *Index) SigChangedAt(e format.Entry) time.Time {
	if e.Kind != format.KindSig {
		return time.Time{}
	}
	c := ix.sigs
	c.mu.Lock()
	none, all := len(c.changes.at) == 0, c.changes.all.at
	c.mu.Unlock()
	if none { // the usual case: no key to format on every open
		return all
	}
	return c.changedAt(e.Key())
}

// SigVersion is the version of signature e's bytes as this index knows
// them: it moves whenever SigChangedAt does, and only then, so two reads
// with the same version returned the same bytes. It is not the store's:
// each Index numbers its own. Entries of other kinds are always 0.
func (ix *Index) SigVersion(e format.Entry) uint64 {
	if e.Kind != format.KindSig {
		return 0
	}
	c := ix.sigs
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.changes.at) == 0 {
		return c.changes.all.seq
	}
	return c.versionLocked(e.Key())
}

// SigState is what this index knows of one signature at one moment, with
// no request, taken under one lock (sigCache.mu): its version, when that
// version began, and, when its bytes were read or written since, their
// size, their key's time and their identity. A mount asks it once per
// kernel request (fs: Open asks it, Lookup and Getattr ask StatSig, which
// gives it with the name's node; once more after a read the request made),
// where it asked SigVersion, SigIdentity, SigChangedAt and
// the size one by one, each under the lock again: the fields of one
// SigState agree — Size is the size of Version's bytes, ChangedAt when
// Version began.
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

// state is SigState of a signature entry, under one holding of c.mu. The
// key is formatted on the stack first (appendEntryKey): asked on every
// LOOKUP and GETATTR of a signature, it allocates nothing.
func (c *sigCache) state(e format.Entry) SigState {
	var buf [256]byte
	key := appendEntryKey(buf[:0], e)
	c.mu.Lock()
	defer c.mu.Unlock()
	last := c.changes.all
	if k, ok := c.changes.at[string(key)]; ok && k.seq > last.seq {
		last = k
	}
	st := SigState{Version: last.seq, ChangedAt: last.at, Size: -1}
	if m, ok := c.sizes[string(key)]; ok {
		st.ID, st.IDKnown, st.Recheck = SigID{Size: m.size, Sum: m.sum}, true, m.recheck
		if !m.recheck {
			st.Size, st.ModTime = m.size, timeOf(m.mod)
		}
	}
	return st
}

// appendEntryKey appends e's store key (format.Entry.Key) to dst.
func appendEntryKey(dst []byte, e format.Entry) []byte {
	dst = append(append(dst, e.Kind.String()...), '/')
	if len(e.Object) >= 2 {
		dst = append(append(append(dst, e.Object[:2]...), '/'), e.Object[2:]...)
	} else {
		dst = append(dst, e.Object...)
	}
	return append(append(dst, '/'), e.Value...)
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
