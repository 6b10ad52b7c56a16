package testservers

import "syscall"

// What the test servers need of the OS: here Linux's. The servers run on
// Linux (CI); sys_darwin.go and sys_windows.go only let the package, and the
// tests that import it, build and vet there.

// setxattrProbe sets a user extended attribute on path (versitygw's posix
// backend keeps its metadata in them).
func setxattrProbe(path string) error {
	return syscall.Setxattr(path, "user.oxyfs.probe", []byte("1"), 0)
}

// serverProcAttr: its own process group (kill() signals the whole group),
// killed when the test process dies.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:   true, // kill() signals the whole group
		Pdeathsig: syscall.SIGKILL,
	}
}
