package store

import (
	"errors"

	"gocloud.dev/gcerrors"
)

// Sentinel errors. Every backend error is mapped to one of these (or left as
// is) in this one file, so callers match with errors.Is, never on strings.
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a conditional write lost: the record changed since it was
	// read, or a create-only write found the key already there.
	ErrConflict = errors.New("conflict: changed concurrently")
	// ErrNoCAS: the backend cannot compare-and-swap, so records are not written.
	ErrNoCAS = errors.New("backend cannot compare-and-swap")
	// ErrReadOnly: the store was opened read-only.
	ErrReadOnly = errors.New("store is read-only")
	// ErrTooManyTries: a record update lost MaxCASTries races in a row.
	ErrTooManyTries = errors.New("compare-and-swap kept losing")
	// ErrNotModified: a conditional read found the record unchanged.
	ErrNotModified = errors.New("not modified")
)

// mapErr wraps a backend error with the sentinel its code maps to.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return &codedError{sentinel: ErrNotFound, err: err}
	case gcerrors.FailedPrecondition:
		return &codedError{sentinel: ErrConflict, err: err}
	}
	return err
}

// codedError keeps the backend's error text and matches its sentinel.
type codedError struct {
	sentinel error
	err      error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() []error {
	return []error{e.sentinel, e.err}
}
