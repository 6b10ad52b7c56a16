package index

import (
	"context"
	"errors"
	"io/fs"
	"syscall"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// Class is what kind of failure an error of the index or the store is: the
// one classification a front end answers in its own terms (the mount an
// errno, serve an HTTP status), so that both say the same thing of the same
// error. Classify decides it; the front ends only map a Class.
type Class int

// The classes, from Classify. An error that matches several is the first of
// this order: a signature over its cap is TooLarge even when wrapped as the
// store's failure.
const (
	ClassNone        Class = iota // no error
	ClassNotFound                 // fs.ErrNotExist, store.ErrNotFound: nothing by that name
	ClassNotDir                   // ErrNotDir: a directory's read of a file
	ClassInvalid                  // format.ErrBadKey: a key or name the rules refuse
	ClassReadOnly                 // store.ErrReadOnly, store.ErrConditionsIgnored: a write to a store opened read-only, or whose server ignores write conditions
	ClassTooLarge                 // store.ErrTooLarge: over its size cap, refused before its body
	ClassBusy                     // ErrBusy, syscall.EAGAIN: refused for now (the readers' budget); may succeed later
	ClassTimeout                  // context.DeadlineExceeded: a deadline passed (the store's request timeout or the caller's)
	ClassCanceled                 // context.Canceled: the caller stopped asking
	ClassCorrupt                  // format.ErrCorrupt, store.ErrBadListing: the store answered what cannot be read
	ClassUnavailable              // anything else: the store did not answer as it should (store.ErrUnavailable, a failed request)
)

var classNames = [...]string{
	ClassNone:        "none",
	ClassNotFound:    "not found",
	ClassNotDir:      "not a directory",
	ClassInvalid:     "invalid",
	ClassReadOnly:    "read-only",
	ClassTooLarge:    "too large",
	ClassBusy:        "busy",
	ClassTimeout:     "timeout",
	ClassCanceled:    "canceled",
	ClassCorrupt:     "corrupt",
	ClassUnavailable: "unavailable",
}

// String names the class ("too large").
func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown class"
}

// classOf is Classify's table, in its order: the first class whose error
// err wraps is err's.
var classOf = []struct {
	class Class
	errs  []error
}{
	{ClassNotFound, []error{fs.ErrNotExist, store.ErrNotFound}},
	{ClassNotDir, []error{ErrNotDir}},
	{ClassInvalid, []error{format.ErrBadKey}},
	{ClassReadOnly, []error{store.ErrReadOnly, store.ErrConditionsIgnored}},
	{ClassTooLarge, []error{store.ErrTooLarge}},
	{ClassBusy, []error{ErrBusy, syscall.EAGAIN}},
	{ClassTimeout, []error{context.DeadlineExceeded}},
	{ClassCanceled, []error{context.Canceled}},
	{ClassCorrupt, []error{format.ErrCorrupt, store.ErrBadListing}},
}

// Classify is err's class (errors.Is through every wrapping): ClassNone for
// nil, ClassUnavailable for an error of no other class.
func Classify(err error) Class {
	if err == nil {
		return ClassNone
	}
	for _, c := range classOf {
		for _, e := range c.errs {
			if errors.Is(err, e) {
				return c.class
			}
		}
	}
	return ClassUnavailable
}
