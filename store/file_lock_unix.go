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
// following no symbolic link, and checks that it is a regular file with
// one link.
//
// flock(2) needs no write access: whoever can open the file at all can
// hold its lock. So a lock file this process creates (O_EXCL: it knows it
// did) is given the mode lockFileMode says, read and write to those the
// store's directory lets write it and to no one else. A lock file that was
// there already is another's inode as far as this process knows: one with
// more than one link (a hard link to a file elsewhere, which a local user
// may make where fs.protected_hardlinks is off, or on macOS) is refused,
// and one this user owns is only ever narrowed to that mode, never
// widened: root must not make a root-owned file named by the lock path
// writable by others.
func openLockFile(p string) (*os.File, error) {
	const flags = os.O_RDWR | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	created := true
	f, err := os.OpenFile(p, flags|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		created = false
		f, err = os.OpenFile(p, flags, 0)
	}
	if err != nil {
		return nil, err
	}
	if err := checkLockFile(f, p, created); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkLockFile checks the lock file f (at p) and sets its mode: created
// says this process has just created it.
func checkLockFile(f *os.File, p string, created bool) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", p)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no file status", p)
	}
	if st.Nlink != 1 {
		return fmt.Errorf("%s has %d links (a hard link to another file?): remove it", p, st.Nlink)
	}
	if int(st.Uid) != os.Geteuid() {
		return nil // another owner's file is left as it is
	}
	di, err := os.Stat(filepath.Dir(p))
	if err != nil {
		return err
	}
	if m := lockFileModeFor(fi.Mode().Perm(), lockFileMode(di.Mode()), created); m != fi.Mode().Perm() {
		return f.Chmod(m)
	}
	return nil
}

// lockFileModeFor is the mode a lock file of mode perm this user owns is
// given, want being lockFileMode's: want for a file this process created,
// perm narrowed to want (never widened) for one that was there.
func lockFileModeFor(perm, want os.FileMode, created bool) os.FileMode {
	if created {
		return want
	}
	return perm & want
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
