//go:build unix

package index

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is this process's CPU time so far, user and system: a
// benchmark's CPU per entry, which its wall time on a shared machine
// (or on more goroutines than cores) does not say.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// minorFaults is this process's minor page faults so far (first touches
// of new memory): what the kernel's share of an open's CPU follows.
func minorFaults(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Minflt
}
