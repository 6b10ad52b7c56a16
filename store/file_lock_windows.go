package store

import (
	"errors"
	"os"

	"github.com/oxyfs/oxyfs/store/fileblob"
	"golang.org/x/sys/windows"
)

// lockName names the lock in errors.
const lockName = "LockFileEx"

// openLockFile opens (creating) the lock file p, following no reparse
// point: a lock file that is a link is refused.
func openLockFile(p string) (*os.File, error) {
	if err := fileblob.RefuseReparse(p); err != nil {
		return nil, err
	}
	return os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o666)
}

// openCompatLock: older oxyfs on Windows locked the same lock file, so
// there is no second lock to take.
func openCompatLock(string) (*os.File, error) { return nil, nil }

// tryLockFile takes LockFileEx without blocking: false when another handle
// holds it.
func tryLockFile(f *os.File) (bool, error) {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return err == nil, err
}

func unlockFile(f *os.File) {
	var ol windows.Overlapped
	windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
