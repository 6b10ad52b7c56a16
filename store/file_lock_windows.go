package store

import (
	"github.com/oxyfs/oxyfs/store/fileblob"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// lockName names the lock in errors.
const lockName = "LockFileEx"

// lockFileName is the file LockFileEx locks in the store's directory
// (Windows locks no directory). It has the form of a write's temporary
// file (isTempName), so no listing shows it and no key names it. It stays
// after the lock is released.
const lockFileName = fileblob.TempPrefix + "0000000000000000"

// openLockFile opens (creating) the lock file, following no reparse point:
// a lock file that is a link is refused.
func openLockFile(dir string) (*os.File, error) {
	p := filepath.Join(dir, lockFileName)
	if err := fileblob.RefuseReparse(p); err != nil {
		return nil, err
	}
	return os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o666)
}

func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}

func unlockFile(f *os.File) {
	var ol windows.Overlapped
	windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
