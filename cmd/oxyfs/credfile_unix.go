//go:build !windows

package main

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// readPrivateFile reads path, not through a symbolic link, if it is a
// regular file this user or root owns that neither group nor others may
// read or write.
func readPrivateFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", path)
	case !ok || int(st.Uid) != os.Geteuid() && st.Uid != 0:
		return nil, fmt.Errorf("%s belongs to another user", path)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("%s may be read by others (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	return io.ReadAll(io.LimitReader(f, 1<<20))
}
