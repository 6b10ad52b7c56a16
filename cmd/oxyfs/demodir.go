package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
)

// demoStoreDir is the demo store's folder, private to this user (issue 41,
// 7): <cache>/oxyfs/demo-store, where cache is the user's cache directory
// (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache), else, with HOME unset,
// the home directory the password database gives, plus .cache. It never
// falls back to a shared folder such as /tmp, where another user could
// plant a link or a store of their own for root to mount: with no private
// folder it refuses and says what to set. The oxyfs and demo-store
// folders are created 0700, and an existing one must be a directory (not a
// link) this user owns that no one else may write (checkPrivateDir).
func demoStoreDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		u, uerr := user.Current()
		if uerr != nil || u.HomeDir == "" || !filepath.IsAbs(u.HomeDir) {
			return "", fmt.Errorf("no private folder for the demo store (%w; and no home directory for this user): set HOME or XDG_CACHE_HOME, or give a store URL", err)
		}
		cache = filepath.Join(u.HomeDir, ".cache")
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return "", fmt.Errorf("demo store: %w", err)
	}
	dir := cache
	for _, name := range []string{"oxyfs", "demo-store"} {
		dir = filepath.Join(dir, name)
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("demo store: %w", err)
		}
		if err := checkPrivateDir(dir); err != nil {
			return "", fmt.Errorf("demo store: %w; remove it, or set XDG_CACHE_HOME to a folder of yours", err)
		}
	}
	return dir, nil
}
