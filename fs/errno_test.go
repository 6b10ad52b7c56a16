package fs

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// TestErrnoFollowsTheClass: the mount's errno of an error is its class's
// (index.Classify, which serve's statuses follow too), and the causes of
// EFBIG, EAGAIN and EIO are logged, once each. An error wrapping EAGAIN was
// EIO before the classification (only index.ErrBusy was EAGAIN).
func TestErrnoFollowsTheClass(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("read signature %q: %w", "sig/ab/cd/alice", err) }
	for _, c := range []struct {
		err  error
		want syscall.Errno
		logs bool
	}{
		{nil, 0, false},
		{wrap(store.ErrNotFound), syscall.ENOENT, false},
		{wrap(index.ErrNotDir), syscall.ENOTDIR, false},
		{wrap(format.ErrBadKey), syscall.EINVAL, false},
		{wrap(store.ErrReadOnly), syscall.EROFS, false},
		{wrap(store.ErrTooLarge), syscall.EFBIG, true},
		{wrap(index.ErrBusy), syscall.EAGAIN, true},
		{wrap(syscall.EAGAIN), syscall.EAGAIN, true},
		{wrap(context.DeadlineExceeded), syscall.EIO, true},
		{wrap(format.ErrCorrupt), syscall.EIO, true},
		{wrap(errors.New("connection refused")), syscall.EIO, true},
	} {
		var logged int
		m := &Server{logf: func(string, ...any) { logged++ }}
		if got := m.errno("read", "sig/ab/cd/alice", c.err); got != c.want || (logged == 1) != c.logs || logged > 1 {
			t.Errorf("errno(%v) = %v, logged %d; want %v (class %v), logged: %v", c.err, got, logged, c.want, index.Classify(c.err), c.logs)
		}
	}
}
