package index

import (
	"time"

	"github.com/oxyfs/oxyfs/store"
)

// maxSigChanges bounds the signatures whose last change is remembered one
// by one; past it the table starts over and every signature counts as
// changed at that moment.
const maxSigChanges = 1 << 12

// sigChanges remembers when this index last saw a signature's bytes change,
// or lost the means to tell: the mount reads a signature through the page
// cache only when no size the kernel may still hold can be older than that
// (fs: Options.AttrTimeout). It lives in sigCache and is guarded by its mu.
//
// A change is: a refresh that shows a signature replaced (a new journal
// line for its key), this process's own write of it, a read whose size
// differs from the one remembered (bytes replaced without a journal line),
// and — for every signature at once — a directory-layout refresh (no
// journal says what changed), the remembered sizes starting over, and this
// table starting over.
type sigChanges struct {
	at  map[string]time.Time // by key
	all time.Time            // every signature changed at this time
}

// changedLocked notes that key's bytes changed now; c.mu is held.
func (c *sigCache) changedLocked(key string) {
	if c.changes.at == nil {
		c.changes.at = make(map[string]time.Time)
	}
	if len(c.changes.at) >= maxSigChanges {
		c.allChangedLocked()
	}
	c.changes.at[key] = c.now()
}

// allChangedLocked notes that any signature may have changed now; c.mu is
// held.
func (c *sigCache) allChangedLocked() {
	c.changes.all = c.now()
	clear(c.changes.at)
}

// changedAt is the last time key changed, or the zero time.
func (c *sigCache) changedAt(key string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.changes.all
	if k, ok := c.changes.at[key]; ok && k.After(t) {
		t = k
	}
	return t
}

// SigChangedAt is the last time this index saw the bytes of signature e
// change, or could no longer tell whether they had (see sigChanges): the
// zero time if never since it opened. Entries of other kinds never change.
// A size reported for e before that time may be wrong now; one reported
// after it is the size of the bytes ReadSig returns, until a refresh or a
// write moves it again.
func (ix *Index) SigChangedAt(e store.Entry) time.Time {
	if e.Kind != store.KindSig {
		return time.Time{}
	}
	c := ix.sigs
	c.mu.Lock()
	none, all := len(c.changes.at) == 0, c.changes.all
	c.mu.Unlock()
	if none { // the usual case: no key to format on every open
		return all
	}
	return c.changedAt(e.Key())
}
