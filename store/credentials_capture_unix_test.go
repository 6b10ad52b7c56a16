//go:build linux || darwin

package store

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// captureOutput runs fn with the process's stdout and stderr — the file
// descriptors, so whatever an SDK writes however it writes it — sent to
// files, and returns what was written to both.
func captureOutput(t *testing.T, fn func()) string {
	t.Helper()
	type redirect struct {
		fd, saved int
		f         *os.File
	}
	var rs []redirect
	for _, fd := range []int{1, 2} {
		f, err := os.CreateTemp(t.TempDir(), "out")
		if err != nil {
			t.Fatal(err)
		}
		saved, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Dup2(int(f.Fd()), fd); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, redirect{fd, saved, f})
	}
	fn()
	var out strings.Builder
	for _, r := range rs {
		if err := unix.Dup2(r.saved, r.fd); err != nil {
			t.Fatal(err)
		}
		syscall.Close(r.saved)
		data, err := os.ReadFile(r.f.Name())
		if err != nil {
			t.Fatal(err)
		}
		r.f.Close()
		out.Write(data)
	}
	return out.String()
}
