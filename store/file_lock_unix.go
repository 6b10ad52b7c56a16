//go:build linux || darwin

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName names the lock in errors.
const lockName = "flock"

// openLockFile opens (creating) the lock file p for reading and writing,
// following no symbolic link, and checks that it is a regular file.
//
// flock(2) needs no write access: whoever can open the file at all can
// hold its lock. So the file is created 0600 and then opened, read and
// write, to those the store's directory lets write it, and to no one else
// (lockFileMode); a lock file this user owns that is readable by more is
// narrowed the same way.
func openLockFile(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", p)
	}
	if err == nil {
		err = narrowLockFile(f, fi, filepath.Dir(p))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// narrowLockFile gives the lock file f (fi) the mode lockFileMode says when
// this user owns it; another owner's file is left as it is.
func narrowLockFile(f *os.File, fi os.FileInfo, dir string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() {
		return nil
	}
	di, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if want := lockFileMode(di.Mode()); fi.Mode().Perm() != want {
		return f.Chmod(want)
	}
	return nil
}

// lockFileMode is the lock file's mode in a directory of mode dir: read and
// write for the owner, and for the group and others where the directory
// lets them write (create and replace the store's files), nothing else.
func lockFileMode(dir os.FileMode) os.FileMode {
	m := os.FileMode(0o600)
	if dir&0o020 != 0 {
		m |= 0o060
	}
	if dir&0o002 != 0 {
		m |= 0o006
	}
	return m
}

// openCompatLock opens the store's directory, which older oxyfs locked.
func openCompatLock(dir string) (*os.File, error) { return os.Open(dir) }

// tryLockFile takes flock(LOCK_EX) on f without blocking: false when another
// open file holds it.
func tryLockFile(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case err != syscall.EINTR:
			return false, err
		}
	}
}

func unlockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
