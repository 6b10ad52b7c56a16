package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/aws/smithy-go"
	"gocloud.dev/gcerrors"
)

// Sentinel errors. Every backend error is mapped to one of these (or left as
// is) by mapStatus in this one file, from what its driver's mapErr read of
// it, so callers match with errors.Is, never on strings.
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
	// ErrUnavailable: the store did not answer (connection refused or
	// reset, no answer within Options.RequestTimeout) or answered with a
	// server error (5xx, 429), on every try the request was allowed. The
	// message names the store.
	ErrUnavailable = errors.New("store unavailable")
)

// mapErr maps a backend error by its gcerrors code and the HTTP status it
// carries by the common convention (statusOf): what a driver's mapErr does
// with an error of no SDK type of its own.
func mapErr(err error) error { return mapStatus(err, statusOf) }

// statusOf is the HTTP status an error carries by the common convention, a
// method HTTPStatusCode() int (the AWS SDK's errors, and the faults tests
// inject into any bucket); 0 if none.
func statusOf(err error) int {
	var sc interface{ HTTPStatusCode() int }
	if errors.As(err, &sc) {
		return sc.HTTPStatusCode()
	}
	return 0
}

// statusAs is a driver's status reader: the status code of its SDK's error
// type E, else (another error in the chain) statusOf's.
func statusAs[E error](code func(E) int) func(error) int {
	return func(err error) int {
		var e E
		if errors.As(err, &e) {
			return code(e)
		}
		return statusOf(err)
	}
}

// mapStatus wraps a backend error with the sentinel it maps to and the HTTP
// status its driver reads from it (status; 0: none, as AWS reports when no
// response came). The sentinel comes from the error's gcerrors code
// (NotFound, FailedPrecondition), else from the status (404, 412, and 304
// Not Modified, which a conditional read answers); the status is kept for
// transient. Every driver's mapErr ends here, so the sentinels are decided
// in this one place.
func mapStatus(err error, status func(error) int) error {
	if err == nil {
		return nil
	}
	var sentinel error
	code := 0
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		sentinel = ErrNotFound
	case gcerrors.FailedPrecondition:
		sentinel = ErrConflict
	default:
		switch code = status(err); code {
		case http.StatusNotFound:
			sentinel = ErrNotFound
		case http.StatusPreconditionFailed:
			sentinel = ErrConflict
		case http.StatusNotModified:
			sentinel = ErrNotModified
		}
	}
	if sentinel == nil && code == 0 {
		return err
	}
	return &codedError{sentinel: sentinel, status: code, err: err}
}

// codedError keeps the backend's error text and matches its sentinel.
type codedError struct {
	sentinel error // nil: none
	status   int   // the HTTP status of the answer, 0: none or not known
	err      error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() []error {
	if e.sentinel == nil {
		return []error{e.err}
	}
	return []error{e.sentinel, e.err}
}

// transient reports whether a failed request may succeed if sent again: the
// store did not answer (connection refused, reset or closed, a network
// timeout, a request past its timeout) or answered 5xx or 429. A missing key,
// a lost compare-and-swap, a cancelled context and every other 4xx are final.
func transient(err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrConflict), errors.Is(err, ErrNotModified), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, errTimedOut), errors.Is(err, errBodyRead):
		return true
	}
	code := httpStatus(err)
	if cutAnswer(err) && (code == 0 || code/100 == 2) {
		// An answer the SDK could not decode: a server that went away
		// mid-answer (a LIST's 200 with its XML cut off: "failed to
		// decode response body, unexpected EOF"). Asking again is safe.
		return true
	}
	if code != 0 {
		return code >= 500 || code == http.StatusTooManyRequests
	}
	var op *net.OpError
	var ne net.Error
	switch {
	case errors.As(err, &op), errors.As(err, &ne) && ne.Timeout(),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	}
	return gcerrors.Code(err) == gcerrors.ResourceExhausted
}

// cutAnswer reports whether err is an answer the SDK could not decode
// (smithy's DeserializationError).
func cutAnswer(err error) bool {
	var de *smithy.DeserializationError
	return errors.As(err, &de)
}

// httpStatus is the HTTP status a mapped backend error carries (the
// driver's mapErr read it), 0 if none.
func httpStatus(err error) int {
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.status
	}
	return 0
}

// errTimedOut marks a request that got no answer within the store's
// per-request timeout (the caller's own deadline is not this).
var errTimedOut = errors.New("no answer")

// errBodyRead marks a GET that was answered but whose body failed midway:
// cut off, or not matching its checksum (fake-gcs-server serves torn reads of
// an object being replaced: "storage: bad CRC on read"). Reading again is
// always safe, so it is transient.
var errBodyRead = errors.New("reading the body failed")

type timeoutError struct {
	d   time.Duration
	err error
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("no answer within %s (the request timeout): %v", e.d, e.err)
}
func (e *timeoutError) Unwrap() []error { return []error{errTimedOut, e.err} }

// unavailable wraps the transient error that ended a request after tries
// attempts: ErrUnavailable, naming the store.
func unavailable(url string, tries int, err error) error {
	n := "1 try"
	if tries > 1 {
		n = fmt.Sprintf("%d tries", tries)
	}
	return &codedError{sentinel: ErrUnavailable, err: fmt.Errorf("store %s unavailable (%s): %w", url, n, err)}
}
