//go:build !windows

package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links safeDir follows (Linux's MAXSYMLINKS).
const maxLinks = 40

// safeDir checks that no other user can change what path names, in the
// spirit of OpenSSH's secure_filename (issue 41, F2, F5): path is walked
// component by component from / (relative to the working directory) with
// Lstat, and it and every directory above it must be owned by this user or
// root and not writable by others unless sticky (like /tmp, where others
// cannot rename or remove what is not theirs), nor by a group unless sticky
// or its group is trusted (trustedGroup: this process's group, or any
// group of a folder root owns). A symbolic link is
// judged twice: the directory holding it has been checked already (the
// walk is at it) and the link itself must be this user's or root's (one
// another user made in /tmp points where they chose); the walk then goes
// on through what it names. ".." goes up from the directory reached, as
// the kernel does. It returns the resolved path: opening a name in it
// (without following a link in the last component) reaches what was
// checked, for as long as no check here is undone by this user or root.
func safeDir(path string) (string, error) {
	if path == "" {
		return "", errors.New("safe folder: empty path")
	}
	rest := path
	if !strings.HasPrefix(rest, "/") {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("safe folder %s: %w", path, err)
		}
		rest = wd + "/" + rest
	}
	cur := "/"
	if err := checkSafeDir(cur, path); err != nil {
		return "", err
	}
	links := 0
	for rest != "" {
		var name string
		name, rest, _ = strings.Cut(strings.TrimLeft(rest, "/"), "/")
		switch name {
		case "", ".":
			continue
		case "..":
			cur = parentDir(cur)
			continue
		}
		next := joinDir(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", fmt.Errorf("safe folder %s: %w", path, err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if err := checkOwner(next, fi, path); err != nil {
				return "", err
			}
			if links++; links > maxLinks {
				return "", fmt.Errorf("safe folder %s: more than %d symbolic links", path, maxLinks)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", fmt.Errorf("safe folder %s: %w", path, err)
			}
			if strings.HasPrefix(target, "/") {
				cur = "/"
			}
			rest = target + "/" + rest
			continue
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("safe folder %s: %s is not a directory (%v)", path, next, fi.Mode().Type())
		}
		if err := checkSafeDir(next, path); err != nil {
			return "", err
		}
		cur = next
	}
	return cur, nil
}

func joinDir(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

func parentDir(dir string) string {
	i := strings.LastIndex(dir, "/")
	if i <= 0 {
		return "/"
	}
	return dir[:i]
}

// checkSafeDir refuses dir (reached on the way to path) unless it is this
// user's or root's and others may not write it, or it is sticky.
func checkSafeDir(dir, path string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("safe folder %s: %w", path, err)
	}
	if err := checkOwner(dir, fi, path); err != nil {
		return err
	}
	if fi.Mode()&os.ModeSticky == 0 && (fi.Mode().Perm()&0o002 != 0 || fi.Mode().Perm()&0o020 != 0 && !trustedGroup(fi)) {
		return fmt.Errorf("%s is not safe: %s (mode %v) may be written by others, who could replace what it holds; use a folder only you (or root) may write", path, dir, fi.Mode())
	}
	return nil
}

// trustedGroup reports whether a group-writable directory's group may be
// trusted: root's group, or this process's own (a user private group: a
// folder made 0775 under umask 002 on Fedora or Ubuntu). Any other group
// is other users: Ubuntu's /var/log (root:syslog 0775) is refused for
// --log-file; a root-owned folder under it (/var/log/oxyfs) is not.
func trustedGroup(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return st.Gid == 0 || int(st.Gid) == os.Getegid()
}

func checkOwner(name string, fi os.FileInfo, path string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("safe folder %s: %s: no owner to check", path, name)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid && st.Uid != 0 {
		return fmt.Errorf("%s is not safe: %s (mode %v) belongs to uid %d, neither this user (uid %d) nor root, who could replace what it holds", path, name, fi.Mode(), st.Uid, uid)
	}
	return nil
}
