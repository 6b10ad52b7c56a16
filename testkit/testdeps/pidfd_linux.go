package testdeps

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// pidfdGetfd returns a duplicate of process pid's file descriptor fd
// (pidfd_open(2), pidfd_getfd(2): Linux 5.6, and the right to ptrace pid,
// which a process of the same user has unless Yama forbids it).
func pidfdGetfd(pid, fd int) (*os.File, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(pidfd)
	dup, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_getfd %d of %d: %w", fd, pid, err)
	}
	return os.NewFile(uintptr(dup), fmt.Sprintf("fd %d of %d", fd, pid)), nil
}
