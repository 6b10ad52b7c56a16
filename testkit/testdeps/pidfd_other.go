//go:build !linux

package testdeps

import (
	"errors"
	"os"
)

// pidfdGetfd is Linux's (pidfd_getfd(2)); elsewhere the line goes to the
// binary's stderr.
func pidfdGetfd(pid, fd int) (*os.File, error) {
	return nil, errors.New("pidfd_getfd is Linux's")
}
