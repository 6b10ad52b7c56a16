package main

import (
	"errors"
	"path/filepath"
)

// safeDir returns path made absolute: on Windows the folders' ACLs, not
// owners and mode bits, say who may change them, and the user's cache
// directory is private by its ACL.
func safeDir(path string) (string, error) {
	if path == "" {
		return "", errors.New("safe folder: empty path")
	}
	return filepath.Abs(path)
}
