//go:build unix

package main

import (
	"context"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readerGoneCheck is how often readerGone looks at the pipe (a poll(2)
// with this timeout: no request, no wake-up that costs anything).
const readerGoneCheck = 500 // milliseconds

// readerGone returns a channel closed once w is a pipe or socket whose
// reader has gone (poll(2) says POLLERR or POLLHUP for its write end), so
// a command that prints only now and then (watch on a quiet store) ends
// when `| head -1` has its line, as `tail -f` does, rather than at its
// next line. It looks until ctx is done; for anything else (a terminal, a
// file, a buffer) the channel is nil: never closed.
func readerGone(ctx context.Context, w io.Writer) <-chan struct{} {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil
	}
	gone := make(chan struct{})
	fd := int(f.Fd())
	go func() {
		for ctx.Err() == nil {
			fds := []unix.PollFd{{Fd: int32(fd)}}
			n, err := unix.Poll(fds, readerGoneCheck)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return // cannot tell: the next write's EPIPE says it
			}
			if n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
				close(gone)
				return
			}
		}
	}()
	return gone
}
