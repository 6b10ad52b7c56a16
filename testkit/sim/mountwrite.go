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
// A reader of the mount whose life overlaps a write — opened while it was
// open, or read after it began — may read any of that write's states:
//
//   - a descriptor held across operations (concheld.go concHold, bytes.go
//     heldReader) notes writeMark when it opens: the writes from there on
//     (those open then and those begun since) are the ones it overlaps,
//     however its open raced with their start (a check, then an open, is no
//     guard: a write can begin between them);
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

// writeStates returns every state of the writes of key from mark on: the
// bytes a reader that noted mark may read of them. c.mu is held.
func (c *concState) writeStates(key string, mark int) [][]byte {
	var out [][]byte
	ws := c.mountWrites[key]
	for _, w := range ws[min(mark, len(ws)):] {
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
