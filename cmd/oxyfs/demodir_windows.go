package main

import (
	"fmt"
	"os"
)

// checkPrivateDir refuses dir unless it is a directory, not a reparse
// point (Windows: the user's cache directory is private by its ACL).
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%v)", dir, fi.Mode().Type())
	}
	return nil
}

// checkMountpoint refuses mnt unless it is a directory, not a reparse
// point.
func checkMountpoint(mnt string) error {
	return checkPrivateDir(mnt)
}
