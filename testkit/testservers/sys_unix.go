//go:build linux || darwin

package testservers

import (
	"os"
	"syscall"
)

// killGroup sends SIGKILL to the process group pid.
func killGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }

// tryLock takes an exclusive lock of f without waiting (EWOULDBLOCK if
// another holds it).
func tryLock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }
