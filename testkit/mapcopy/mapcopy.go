// Package mapcopy copies a memory mapping of a file on a FUSE mount that
// this very process serves, without touching the mapping itself.
//
// A page fault on such a mapping is served by the process's own FUSE
// server. A goroutine in a page fault cannot be stopped for the garbage
// collector, which then waits for it, while the server's goroutines wait
// for the collector: the process hangs (a test binary did so in CI, one
// thread in folio_wait_bit_common). Copied through write(2), the fault is
// taken by the kernel inside a system call, and the runtime goes on.
//
// Memory: the copy (len(m) bytes) and whatever the scratch file holds.
// Concurrency: one scratch file per caller at a time.
package mapcopy

import (
	"fmt"
	"os"
)

// Out copies m through scratch (emptied first) and returns the copy.
func Out(scratch *os.File, m []byte) ([]byte, error) {
	if err := scratch.Truncate(0); err != nil {
		return nil, fmt.Errorf("copy a mapping: empty %s: %w", scratch.Name(), err)
	}
	if _, err := scratch.WriteAt(m, 0); err != nil {
		return nil, fmt.Errorf("copy a mapping: write %s: %w", scratch.Name(), err)
	}
	out := make([]byte, len(m))
	if _, err := scratch.ReadAt(out, 0); err != nil {
		return nil, fmt.Errorf("copy a mapping: read %s: %w", scratch.Name(), err)
	}
	return out, nil
}
