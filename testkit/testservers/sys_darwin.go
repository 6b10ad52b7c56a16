package testservers

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setxattrProbe sets a user extended attribute on path (sys_linux.go).
func setxattrProbe(path string) error {
	return unix.Setxattr(path, "user.oxyfs.probe", []byte("1"), 0)
}

// serverProcAttr: its own process group (kill() signals the whole group);
// macOS has no parent-death signal.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
