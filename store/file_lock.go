package store

import (
	"fmt"
	"os"
	"sync"
)

// dirLock is an exclusive lock of a file:// store's directory, the lock of
// its compare-and-swap (lockedWrites). Each OS gives the file it locks and
// the lock itself: flock(2) on the directory on Linux and macOS
// (file_lock_unix.go), LockFileEx on a lock file on Windows
// (file_lock_windows.go). Both locks belong to the open file (description,
// handle), so two handles in one process exclude each other as two
// processes do.
type dirLock struct {
	dir string     // read-only
	mu  sync.Mutex // one holder per handle at a time: held from Lock to Unlock, then the OS lock is taken
	f   *os.File   // the locked file while held; guarded by mu
}

func fileLock(dir string) locker { return &dirLock{dir: dir} }

func (l *dirLock) Lock() error {
	l.mu.Lock()
	f, err := openLockFile(l.dir)
	if err != nil {
		l.mu.Unlock()
		return fmt.Errorf("open %s for locking: %w", l.dir, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		l.mu.Unlock()
		return fmt.Errorf("%s %s: %w", lockName, l.dir, err)
	}
	l.f = f
	return nil
}

func (l *dirLock) Unlock() {
	if l.f != nil {
		unlockFile(l.f)
		l.f.Close()
		l.f = nil
	}
	l.mu.Unlock()
}
