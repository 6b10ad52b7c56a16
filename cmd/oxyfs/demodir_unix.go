//go:build !windows

package main

import (
	"fmt"
	"os"
	"syscall"
)

// checkPrivateDir refuses dir unless it is a directory (a link is not
// followed) that this user owns and no one else may write.
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%v)", dir, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner to check", dir)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d)", dir, st.Uid, uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s may be written by others (mode %v)", dir, fi.Mode().Perm())
	}
	return nil
}

// checkMountpoint refuses mnt unless it is a directory (a link is not
// followed) that this user owns.
func checkMountpoint(mnt string) error {
	fi, err := os.Lstat(mnt)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%v)", mnt, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner to check", mnt)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d)", mnt, st.Uid, uid)
	}
	return nil
}
