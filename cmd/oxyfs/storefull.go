package main

import (
	"errors"
	"syscall"
)

// storeFullMessage is what a command says first when err says the store's
// filesystem is full (ENOSPC) or its quota spent (EDQUOT), so that the
// operator reads the cause before the chain of operations and the key that
// follow: "no space left on the store's filesystem"; "" for any other
// error. The command exits 1 as for any failure.
func storeFullMessage(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return "no space left on the store's filesystem"
	case errors.Is(err, syscall.EDQUOT):
		return "disk quota exceeded on the store's filesystem"
	}
	return ""
}
