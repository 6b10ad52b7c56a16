package store

import (
	"log/slog"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/internal/lib/hugepage"
)

// spoolBuf is one buffer a streamed body is read into (spool.fill): the
// pieces handed to the consumer are parts of it. It is released once
// nothing holds it: each piece not consumed yet holds it, and fill holds
// it while it reads into it (refs, under the spool's mu). A buffer of
// spoolSlab bytes is, where the platform allows (hugepage.Map), a
// mapping of its own backed by one huge page and unmapped on release;
// otherwise (and for a body's last, smaller buffer) it is of the Go heap
// and release drops it to the collector.
//
// Why: fill reads a body as fast as the server sends it, and an entry
// list's decode reads it far slower, so the whole body (337 MB at 10M
// entries) is read into new memory, and on this project's 2-core VM the
// kernel's copy into a new page costs that page's fault, 10–20 µs: most
// of the CPU fill spent. A buffer populated as one huge page in one call
// costs about 0.3 µs per 4 KiB of it.
type spoolBuf struct {
	b      []byte
	refs   int  // holders: pieces not consumed, and fill while it reads into it
	mapped bool // b is a mapping of its own (hugepage.Map): unmapped at release
}

// newSpoolBuf is a buffer of n bytes, mapped (huge) if n is spoolSlab and
// the platform allows it.
func newSpoolBuf(n int) *spoolBuf {
	spoolBufsHeld.Add(1)
	if n == spoolSlab {
		if b, ok := hugepage.Map(n); ok {
			return &spoolBuf{b: b, refs: 1, mapped: true}
		}
	}
	return &spoolBuf{b: make([]byte, n), refs: 1}
}

// spoolBufsHeld counts the buffers made and not released yet (tests).
var spoolBufsHeld atomic.Int64

// release drops one hold (the caller holds the spool's mu); the last one
// frees the buffer, which must no longer be read.
func (s *spoolBuf) release() {
	if s.refs--; s.refs > 0 {
		return
	}
	if s.mapped {
		if err := hugepage.Unmap(s.b); err != nil {
			slog.Error("release a streamed body's buffer: " + err.Error()) // a bug: left mapped
		}
	}
	s.b = nil
	spoolBufsHeld.Add(-1)
}
