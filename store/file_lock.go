package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/oxyfs/oxyfs/store/fileblob"
)

// dirLock is the exclusive lock of a file:// store's compare-and-swap
// (lockedWrites): an OS lock (flock(2) on Linux and macOS, LockFileEx on
// Windows) on the lock file lockFileName in the store's directory. Both
// locks belong to the open file (description, handle), so two handles in
// one process exclude each other as two processes do.
//
// The lock file is opened for writing (O_RDWR, created with the mode a
// write's file gets), so only a user who may write the store can take the
// lock: flock(2) on a file or directory opened read-only is allowed, and a
// lock on the store's directory (what oxyfs took before) let any local
// user who could open the directory stop every write. The wait honours the
// request's context: a try without blocking, then again after a growing
// pause (lockPause), until the lock is free or the context ends.
//
// Older oxyfs (issue 41) locked the directory itself, blocking. So that a
// store written by an older and a newer oxyfs at once stays excluded, a
// writer holding the lock file also tries the directory lock (unix,
// compatDirLock) for up to compatWait; a directory lock held longer is
// someone else's (a local user's, or an older writer stuck) and this
// handle stops trying it (compatOff), writing under the lock file alone.
type dirLock struct {
	dir       string        // read-only
	sem       chan struct{} // capacity 1: one holder per handle, from Lock to Unlock
	f         *os.File      // the locked lock file while held; guarded by sem
	compat    *os.File      // the locked directory while held, or nil; guarded by sem
	compatOff atomic.Bool   // the directory lock stayed held past compatWait once: not tried again
}

// lockFileName is the file the lock is taken on in the store's directory.
// It has the form of a write's temporary file (fileblob.IsTempName), so no
// listing shows it and no key names it. It stays after the lock is
// released.
const lockFileName = fileblob.TempPrefix + "0000000000000000"

// compatWait is how long a writer waits for an older oxyfs's directory
// lock: such a writer holds it for one GET and one PUT.
const compatWait = time.Second

// lockPause is the first and the longest pause between two tries.
const (
	lockPauseMin = time.Millisecond
	lockPauseMax = 50 * time.Millisecond
)

func fileLock(dir string) locker { return &dirLock{dir: dir, sem: make(chan struct{}, 1)} }

// Lock takes the lock without a context (locker): it waits as long as it
// takes. Writes take it with LockContext.
func (l *dirLock) Lock() error { return l.LockContext(context.Background()) }

// LockContext takes the lock, or returns the context's error once it ends.
func (l *dirLock) LockContext(ctx context.Context) error {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("wait for the lock of %s: %w", l.dir, context.Cause(ctx))
	}
	p := filepath.Join(l.dir, lockFileName)
	f, err := openLockFile(p)
	if err != nil {
		<-l.sem
		return fmt.Errorf("open lock file %s (a writer must be able to write the store): %w", p, err)
	}
	if err := waitLock(ctx, f, 0); err != nil {
		f.Close()
		<-l.sem
		return fmt.Errorf("%s %s: %w", lockName, p, err)
	}
	l.f = f
	if !l.compatOff.Load() {
		l.compat = l.takeCompat(ctx)
	}
	return nil
}

// takeCompat takes the directory lock older writers take, waiting up to
// compatWait (or the context), and returns it, or nil when there is none
// to take or it stayed held.
func (l *dirLock) takeCompat(ctx context.Context) *os.File {
	d, err := openCompatLock(l.dir)
	if err != nil || d == nil {
		return nil
	}
	if err := waitLock(ctx, d, compatWait); err != nil {
		d.Close()
		if ctx.Err() == nil {
			l.compatOff.Store(true)
		}
		return nil
	}
	return d
}

// waitLock tries the lock of f until it is taken, the context ends, or
// (limit > 0) limit has passed.
func waitLock(ctx context.Context, f *os.File, limit time.Duration) error {
	var end time.Time
	if limit > 0 {
		end = time.Now().Add(limit)
	}
	pause := lockPauseMin
	for {
		ok, err := tryLockFile(f)
		if err != nil || ok {
			return err
		}
		if limit > 0 && time.Now().After(end) {
			return errLockHeld
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
		pause = min(2*pause, lockPauseMax)
	}
}

var errLockHeld = fmt.Errorf("held by another process")

func (l *dirLock) Unlock() {
	if l.compat != nil {
		unlockFile(l.compat)
		l.compat.Close()
		l.compat = nil
	}
	if l.f != nil {
		unlockFile(l.f)
		l.f.Close()
		l.f = nil
	}
	<-l.sem
}
