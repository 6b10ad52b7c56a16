package fileblob

import (
	"net/url"

	"golang.org/x/sys/unix"
)

// The Linux side of the file:// driver's path resolution (path.go):
// openat2(2) where the kernel has it, O_PATH for opens that read nothing.

// oPath opens a file or directory only to name it (fstat, openat, unlinkat).
const oPath = unix.O_PATH

// probeOpenat2 reports whether openat2(2) with RESOLVE_NO_SYMLINKS works.
func probeOpenat2() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// openat2Beneath opens rel beneath dirfd with flags, resolving no symbolic
// link and nothing outside dirfd.
func openat2Beneath(dirfd int, rel string, flags int) (fd int, err error) {
	how := &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for try := 0; ; try++ {
		fd, err = unix.Openat2(dirfd, rel, how)
		// EAGAIN: a concurrent rename raced the resolution.
		if err != unix.EINTR && (err != unix.EAGAIN || try >= 8) {
			return fd, err
		}
	}
}

// fileURLPath is the directory a file:// URL names: its path.
func fileURLPath(u *url.URL) string { return u.Path }
