//go:build linux || darwin

package store

import (
	"os"
	"syscall"
)

// lockName names the lock in errors.
const lockName = "flock"

// openLockFile opens the store's directory itself: flock(2) leaves no file
// behind.
func openLockFile(dir string) (*os.File, error) { return os.Open(dir) }

func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
