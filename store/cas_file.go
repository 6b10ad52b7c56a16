package store

import (
	"fmt"
	"os"
	"sync"
	"syscall"
)

// dirLock is an exclusive flock(2) on the store's directory. flock locks
// belong to the open file description, so two handles in one process exclude
// each other as two processes do. It leaves no file behind.
type dirLock struct {
	dir string
	mu  sync.Mutex // one holder per handle at a time
	f   *os.File
}

func fileLock(dir string) locker { return &dirLock{dir: dir} }

func (l *dirLock) Lock() error {
	l.mu.Lock()
	f, err := os.Open(l.dir)
	if err != nil {
		l.mu.Unlock()
		return fmt.Errorf("open %s for locking: %w", l.dir, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		l.mu.Unlock()
		return fmt.Errorf("flock %s: %w", l.dir, err)
	}
	l.f = f
	return nil
}

func (l *dirLock) Unlock() {
	if l.f != nil {
		syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		l.f.Close()
		l.f = nil
	}
	l.mu.Unlock()
}
