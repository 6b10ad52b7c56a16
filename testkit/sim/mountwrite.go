package sim

import "slices"

// Writes through the mount, as readers of the mount see them (doc.go
// "Readers beside the operations"). A write open through the mount
// (mount-write-refused: O_CREAT|O_TRUNC, a write that fits, one refused,
// another that fits, a close that must fail; its descriptor kept open a
// while now and then) is visible to every reader of that file on the mount
// while it is open, as on any filesystem: the kernel truncates the file for
// every open descriptor at the O_TRUNC open (its size and its pages), and a
// read then finds the write's bytes so far. Once the refused write is
// dropped, new opens read the store's bytes again.
//
// So the model keeps, per key, every write through the mount with the
// bytes it held (states, in order: "" after the truncation, then after each
// write that fitted), and whether it is done (its last descriptor closed).
// What a reader of the mount may read of them:
//
//   - a descriptor held across operations (concheld.go concHold, bytes.go
//     heldReader) keeps the version it opened (fs/doc.go "Reads beside
//     this mount's own write": readers opened before a write keep their
//     version whole), unless it opened beside a write: it notes writeMark
//     before its open and writeEnd after it, and may read the states of
//     the writes between — those open when it began to open and those
//     begun before its open returned (a check, then an open, is no guard:
//     a write can begin between them) — never of a write begun after;
//   - a read of the concurrent reader (read(2), pread, a shared mapping)
//     that overlapped a write is not checked on the mount: it may mix the
//     bytes of two states;
//   - a new open while a write is open (the checks' reads after a refresh,
//     beside a write still kept open) may read the open writes' states.

// mountWrite is one write open through the mount.
type mountWrite struct {
	states [][]byte // the bytes the file held over the write, in order
	done   bool     // its last descriptor closed
}

// beginMountWrite notes a write of key through the mount, about to open it
// (states: what it will hold). conc.mu must not be held.
func (s *sim) beginMountWrite(key string, states [][]byte) *mountWrite {
	w := &mountWrite{states: states}
	c := &s.conc
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writing[key]++
	c.mountWrites[key] = append(c.mountWrites[key], w)
	return w
}

// doneWriting notes a write through the mount closed (its last descriptor).
func (s *sim) doneWriting(key string, w *mountWrite) {
	c := &s.conc
	c.mu.Lock()
	defer c.mu.Unlock()
	w.done = true
	if c.writing[key]--; c.writing[key] <= 0 {
		delete(c.writing, key)
	}
}

// writeMark is where the writes of key a reader opening now overlaps begin:
// the first one still open, else the next to come. c.mu is held.
func (c *concState) writeMark(key string) int {
	ws := c.mountWrites[key]
	if i := slices.IndexFunc(ws, func(w *mountWrite) bool { return !w.done }); i >= 0 {
		return i
	}
	return len(ws)
}

// writeEnd is where the writes of key begun so far end: a descriptor that
// notes it once its open returned overlapped none from there on. c.mu is
// held.
func (c *concState) writeEnd(key string) int { return len(c.mountWrites[key]) }

// writeStates returns every state of the writes of key from mark on: the
// bytes a read that noted mark at its start may have met. c.mu is held.
func (c *concState) writeStates(key string, mark int) [][]byte {
	return c.writeStatesIn(key, mark, len(c.mountWrites[key]))
}

// writeStatesIn returns every state of the writes of key in [lo, hi): the
// bytes a descriptor that noted writeMark before its open and writeEnd
// after it may read (see above). c.mu is held.
func (c *concState) writeStatesIn(key string, lo, hi int) [][]byte {
	var out [][]byte
	ws := c.mountWrites[key]
	hi = min(hi, len(ws))
	for _, w := range ws[min(lo, hi):hi] {
		out = append(out, w.states...)
	}
	return out
}

// openWriteStates returns the states of the writes of key open now: what a
// new open of key on the mount may read besides the store's bytes.
func (s *sim) openWriteStates(key string) [][]byte {
	c := &s.conc
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]byte
	for _, w := range c.mountWrites[key] {
		if !w.done {
			out = append(out, w.states...)
		}
	}
	return out
}

// refusedWriteStates are the bytes a refused write of data holds: nothing
// after its O_TRUNC open, then data, then data twice (the write refused
// between changes nothing).
func refusedWriteStates(data []byte) [][]byte {
	return [][]byte{{}, slices.Clone(data), append(slices.Clone(data), data...)}
}
