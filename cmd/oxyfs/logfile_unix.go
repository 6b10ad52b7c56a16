//go:build !windows

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// openLogFile opens the --log-file for appending (issue 41, 6): not through
// a symbolic link (one planted there made a root serve create a file where
// its owner chose), only a regular file this user owns (a file another
// user created beforehand would let that user read the log), and private:
// created 0600, and one of ours readable by others narrowed to 0600. The
// folder it is in must be safe (safeDir: it and every folder above it this
// user's or root's and not writable by others unless sticky, links judged
// by where they lead and who made them): O_NOFOLLOW guards only the last
// component, and a link another user planted above it had root append to
// a file in a folder of that user's choosing (issue 41, F5). The file is
// opened in the folder safeDir resolved.
func openLogFile(path string) (*os.File, error) {
	dir, name := ".", path
	if i := strings.LastIndex(path, "/"); i >= 0 {
		dir, name = path[:i+1], path[i+1:]
	}
	if name == "" || name == "." || name == ".." {
		return nil, fmt.Errorf("log file %s: not a file name", path)
	}
	resolved, err := safeDir(dir)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(resolved, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := checkLogFile(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkLogFile(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%v)", path, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner to check", path)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): another user could read the log; remove it or choose another path", path, st.Uid, uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("make %s private: %w", path, err)
		}
	}
	return syscall.SetNonblock(int(f.Fd()), false)
}
