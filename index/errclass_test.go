package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// TestClassify: each error the index and the store return, wrapped as they
// wrap it, has its class; an error matching two classes has the first of
// Classify's order.
func TestClassify(t *testing.T) {
	key := "sig/ab/cdef/alice"
	wrap := func(err error) error { return fmt.Errorf("read signature %q: %w", key, err) }
	for _, c := range []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, ClassNone},
		{"path", &fs.PathError{Op: "stat", Path: "sig/zz", Err: fs.ErrNotExist}, ClassNotFound},
		{"key", wrap(store.ErrNotFound), ClassNotFound},
		{"not a dir", wrap(ErrNotDir), ClassNotDir},
		{"bad key", wrap(format.ErrBadKey), ClassInvalid},
		{"read-only", wrap(store.ErrReadOnly), ClassReadOnly},
		{"conditions ignored", wrap(store.ErrConditionsIgnored), ClassReadOnly},
		{"too large", wrap(fmt.Errorf("70000000 bytes, over the cap: %w", store.ErrTooLarge)), ClassTooLarge},
		{"too large and corrupt", wrap(fmt.Errorf("%w: %w", format.ErrCorrupt, store.ErrTooLarge)), ClassTooLarge},
		{"too large, unavailable", wrap(errors.Join(store.ErrUnavailable, store.ErrTooLarge)), ClassTooLarge},
		{"busy", wrap(ErrBusy), ClassBusy},
		{"EAGAIN", wrap(syscall.EAGAIN), ClassBusy},
		{"deadline", wrap(context.DeadlineExceeded), ClassTimeout},
		{"store timeout", wrap(errors.Join(store.ErrUnavailable, context.DeadlineExceeded)), ClassTimeout},
		{"canceled", wrap(context.Canceled), ClassCanceled},
		{"corrupt", wrap(format.ErrCorrupt), ClassCorrupt},
		{"bad listing", wrap(store.ErrBadListing), ClassCorrupt},
		{"unavailable", wrap(store.ErrUnavailable), ClassUnavailable},
		{"anything else", wrap(errors.New("connection refused")), ClassUnavailable},
	} {
		if got := Classify(c.err); got != c.want {
			t.Errorf("%s: Classify(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestClassNames: every class has its own name.
func TestClassNames(t *testing.T) {
	seen := map[string]Class{}
	for c := ClassNone; c <= ClassUnavailable; c++ {
		n := c.String()
		if n == "" || n == "unknown class" {
			t.Errorf("class %d has no name", int(c))
		}
		if o, ok := seen[n]; ok {
			t.Errorf("classes %d and %d are both %q", int(o), int(c), n)
		}
		seen[n] = c
	}
	if n := Class(-1).String(); n != "unknown class" {
		t.Errorf("Class(-1) = %q", n)
	}
}
