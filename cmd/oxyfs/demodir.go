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
// folder it refuses and says what to set. The cache directory and every
// folder above it must be safe (safeDir: this user's or root's, not
// writable by others unless sticky), checked before anything is created:
// in a home another user owns, that user could swap the folders while
// root generates the store (issue 41, F2). The oxyfs and demo-store
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
	// The deepest folder that is there must be safe before any is made
	// under it, and the cache directory once made.
	have := cache
	for {
		if _, err := os.Lstat(have); err == nil || filepath.Dir(have) == have {
			break
		}
		have = filepath.Dir(have)
	}
	if _, err := safeDir(have); err != nil {
		return "", fmt.Errorf("demo store: %w; set XDG_CACHE_HOME to a folder of yours", err)
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return "", fmt.Errorf("demo store: %w", err)
	}
	dir, err := safeDir(cache)
	if err != nil {
		return "", fmt.Errorf("demo store: %w; set XDG_CACHE_HOME to a folder of yours", err)
	}
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

// demoMountpoint makes the demo's mountpoint, oxyfs-demo in the working
// directory, and returns its absolute path (issue 41, F1). mount(2)
// follows links, so one another user planted there would have the demo
// mounted where they chose: the working directory must be safe (safeDir),
// oxyfs-demo is created with Mkdir (not through a link), and one already
// there must be a directory, not a link, that this user owns.
func demoMountpoint() (string, error) {
	const name = "oxyfs-demo"
	wd, err := safeDir(".")
	if err != nil {
		return "", fmt.Errorf("demo mountpoint: %w; run the demo from a folder of yours", err)
	}
	mnt := filepath.Join(wd, name)
	if err := os.Mkdir(mnt, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("demo mountpoint: %w", err)
	}
	if err := checkMountpoint(mnt); err != nil {
		return "", fmt.Errorf("demo mountpoint: %w; remove it, or run the demo from another folder", err)
	}
	return mnt, nil
}
