package fileblob

import (
	"net/url"

	"golang.org/x/sys/unix"
)

// The macOS side of the file:// driver's path resolution (path.go).
// macOS has no openat2(2): every key is opened by the walk of openat(2)
// with O_NOFOLLOW, one component at a time (walkOpen), which follows no
// symbolic link. It has no O_PATH either: an open that reads nothing opens
// read-only and non-blocking (a named pipe must not hang a HEAD), and
// without a controlling terminal.

// oPath opens a file or directory only to name it (fstat, openat, unlinkat).
const oPath = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY

// probeOpenat2 is false: macOS has no openat2(2).
func probeOpenat2() bool { return false }

// openat2Beneath is never called on macOS (probeOpenat2 is false).
func openat2Beneath(int, string, int) (int, error) { return -1, unix.ENOSYS }

// fileURLPath is the directory a file:// URL names: its path.
func fileURLPath(u *url.URL) string { return u.Path }
