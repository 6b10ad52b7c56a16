package testservers

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// The test servers run on Linux (sys_linux.go); this lets the package, and
// the tests that import it, build and vet on Windows.

func setxattrProbe(string) error {
	return errors.New("Windows has no user extended attributes (versitygw's posix backend needs them)")
}

func serverProcAttr() *syscall.SysProcAttr { return nil }

// killGroup: Windows has no process groups to signal; the caller kills the
// process itself.
func killGroup(int) error { return errors.ErrUnsupported }

// tryLock takes an exclusive lock of f without waiting (EWOULDBLOCK if
// another holds it).
func tryLock(f *os.File) error {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return syscall.EWOULDBLOCK
	}
	return err
}
