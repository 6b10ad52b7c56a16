package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"gocloud.dev/blob"
)

// backendDriver is what differs per backend, behind the Store: how a record's
// change token is read, how a write is made create-only or conditional on
// a token, how a read is made conditional, what a Delete sends, what a
// listing needs and how the backend's errors map to the sentinels. Each
// backend implements it once, in its own file (driver_s3.go, driver_gcs.go,
// driver_azure.go, driver_file.go, driver_mem.go), and no code outside those
// files asks which backend a store is. The Store does the rest: counting,
// timeouts, retries, caps, wrapping errors with the operation and key.
//
// A driver holds its Store (bind) and sends its requests through it
// (s.read, s.sendOnce, s.readWithToken), so each is counted once. Every
// error a method returns has been through mapErr.
type backendDriver interface {
	// bind gives the driver its store, once, before any other call.
	bind(s *Store)
	// name is the backend's name for display: s3, gcs, azure, file or mem.
	name() string
	// autoLayout is the layout of a store opened with LayoutAuto that its
	// open did not settle.
	autoLayout() Layout

	// changeToken is the version token of a record read whole: r is the
	// open reader of the GET, data its bytes. Fails if the answer carries
	// none.
	changeToken(r *blob.Reader, data []byte) (string, error)
	// createOnly writes key only if it does not exist: ErrConflict if it
	// does (exactly one of racing writers wins).
	createOnly(ctx context.Context, key string, data []byte) error
	// replaceIfUnchanged writes key only if it exists at token (a
	// changeToken): ErrConflict if it changed or vanished.
	replaceIfUnchanged(ctx context.Context, key string, data []byte, token string) error
	// readIfChanged is one GET of key, conditional on token where the
	// backend can make it so: an error wrapping ErrNotModified when the
	// backend answered "still at token" (304), else the record and its
	// token (which may be token itself: the caller compares), ErrNotFound
	// when it is gone.
	readIfChanged(ctx context.Context, key, token string) ([]byte, string, error)

	// conditionNames name the conditions of createOnly and
	// replaceIfUnchanged as the wire carries them, for the probe's
	// messages (probe.go).
	conditionNames() (create, replace string)
	// wrongToken is a change token no version of a key holds other than
	// tok (the probe's wrong version).
	wrongToken(tok string) string
	// localConditions: compare-and-swap is this host's lock (file,
	// mem) or refused (noCAS), so no probe asks the server.
	localConditions() bool

	// deleteRequests is what one Delete sends, for the counters: of a key
	// that exists, and (missing) of one that does not.
	deleteRequests(missing bool) Counts
	// listRetries is how many times a page that failed with ErrNotFound
	// (a key that vanished under the listing) is listed again.
	listRetries() int
	// listItem converts one listed object.
	listItem(o *blob.ListObject) ListItem
	// requestContext is the context one attempt runs under (the SDK's
	// own retries turned off where the context says so).
	requestContext(ctx context.Context) context.Context
	// mapErr maps one of the backend's errors (nil stays nil): ErrNotFound,
	// ErrConflict (a failed precondition), ErrNotModified (a 304), and
	// the HTTP status the answer carried, for transient (mapStatus).
	mapErr(err error) error
	// wireCounts is the requests counted on the wire, where the driver
	// counts them (ok false elsewhere).
	wireCounts() (c Counts, ok bool)

	// clockSource is where the store's time comes from (storeclock.go).
	clockSource() clockSource
	// probeClock reads the store's clock without a request counted (file:
	// a temporary file's mtime); errNoProbe where the time comes with
	// every answer instead.
	probeClock(ctx context.Context) (time.Time, error)
}

// backend is one kind of store: its name and URL scheme, and how its
// driver is made for Open (from a URL) and for New (around an open bucket).
type backend struct {
	name   string // s3, gcs, azure, file, mem
	scheme string // s3, gs, azblob, file, mem
	// open opens the bucket of a URL of scheme, with its driver.
	open func(ctx context.Context, u *url.URL, opts Options) (*blob.Bucket, backendDriver, error)
	// wrap is the driver of an already open bucket (root: a file:// store's
	// directory, for its lock).
	wrap func(b *blob.Bucket, root string) backendDriver
}

// backends lists every backend, each declared in its driver file.
var backends = []*backend{&s3Backend, &gcsBackend, &azureBackend, &fileBackend, &memBackend}

// backendOf is the backend of a URL scheme.
func backendOf(scheme string) (*backend, error) {
	for _, be := range backends {
		if be.scheme == scheme {
			return be, nil
		}
	}
	return nil, fmt.Errorf("unsupported scheme %q (want s3, gs, azblob, file or mem)", scheme)
}

// driverNamed is New's driver for a backend name; a name no backend has gets
// a driver that refuses compare-and-swap (noCAS).
func driverNamed(name string, b *blob.Bucket, root string) backendDriver {
	for _, be := range backends {
		if be.name == name {
			return be.wrap(b, root)
		}
	}
	return &noCAS{label: name}
}

// storeRef is the driver's store, given by bind.
type storeRef struct{ s *Store } // read-only after bind

func (r *storeRef) bind(s *Store) { r.s = s }

// defaults is what most backends do; a driver embeds it and overrides what
// its backend does otherwise.
type defaults struct{}

func (defaults) autoLayout() Layout                                 { return LayoutBucket }
func (defaults) deleteRequests(bool) Counts                         { return Counts{Delete: 1} }
func (defaults) listRetries() int                                   { return 0 }
func (defaults) listItem(o *blob.ListObject) ListItem               { return plainItem(o) }
func (defaults) requestContext(ctx context.Context) context.Context { return ctx }
func (defaults) mapErr(err error) error                             { return mapErr(err) }
func (defaults) wireCounts() (Counts, bool)                         { return Counts{}, false }
func (defaults) clockSource() clockSource                           { return clockDates }
func (defaults) probeClock(context.Context) (time.Time, error)      { return time.Time{}, errNoProbe }

func plainItem(o *blob.ListObject) ListItem {
	return ListItem{Key: o.Key, Size: o.Size, IsDir: o.IsDir, ModTime: o.ModTime, MD5: o.MD5}
}

// --- s3, gcs, azure: a PUT that carries its precondition ---

// preconditionPuts is the compare-and-swap of a backend whose PUT carries a
// precondition (s3, gcs, azure): one PUT, the precondition set by the
// driver's own BeforeWrite.
type preconditionPuts struct{ storeRef }

func (*preconditionPuts) conditionNames() (string, string) {
	return "If-None-Match: *", "If-Match"
}
func (*preconditionPuts) wrongToken(tok string) string { return etagWrongToken(tok) }

func (p *preconditionPuts) createOnly(ctx context.Context, key string, data []byte) error {
	return p.putIf(ctx, key, data, "", &blob.WriterOptions{IfNotExist: true})
}

// putIf sends one conditional PUT (wo says the condition; base is the
// token it replaces, "" for create-only) and confirms what it wrote
// (confirm.go): by the answer's MD5 where it names one, else by reading
// the key back (one GET).
func (p *preconditionPuts) putIf(ctx context.Context, key string, data []byte, base string, wo *blob.WriterOptions) error {
	a := &writeAnswer{}
	err := conflict(p.s.sendOnce(withWriteAnswer(ctx, a), &p.s.n.put, func(ctx context.Context) error {
		return p.s.upload(ctx, key, data, wo)
	}))
	if err != nil {
		return err
	}
	return p.s.confirmWrite(ctx, key, data, base, a)
}

// conflict is the error of a conditional write: a failed precondition, or
// (If-Match on a key that vanished) not found, is a lost race.
func conflict(err error) error {
	if errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// --- file, mem: a lock around read-compare-write ---

// lockedWrites serializes conditional writes with a lock: an OS file lock on
// a lock file in the store's directory for file:// (correct across processes), a mutex per
// bucket for mem://. The token is the SHA-256 of the record's bytes, and a
// conditional read reads in full (the caller compares tokens).
type lockedWrites struct {
	storeRef
	lock locker // read-only after bind; held across one GET and one PUT (a request slot is taken under it)
}

type locker interface {
	Lock() error
	Unlock()
}

// ctxLocker is a locker whose wait ends with the request's context (the
// file:// lock, file_lock.go): a lock another process holds fails the
// write at its deadline or cancellation instead of blocking it.
type ctxLocker interface {
	LockContext(ctx context.Context) error
}

// lockFor takes l, with ctx where l can wait with one.
func lockFor(ctx context.Context, l locker) error {
	if cl, ok := l.(ctxLocker); ok {
		return cl.LockContext(ctx)
	}
	return l.Lock()
}

func (c *lockedWrites) changeToken(_ *blob.Reader, data []byte) (string, error) {
	return contentToken(data), nil
}

func contentToken(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func (*lockedWrites) conditionNames() (string, string) {
	return "create-only under the lock", "replace under the lock"
}
func (*lockedWrites) wrongToken(tok string) string { return contentToken([]byte(tok)) }

func (c *lockedWrites) createOnly(ctx context.Context, key string, data []byte) error {
	return c.replaceIfUnchanged(ctx, key, data, "")
}

// replaceIfUnchanged writes data if the key's current content hashes to
// token (token "" = the key must be absent): one GET and one PUT under the
// lock.
func (c *lockedWrites) replaceIfUnchanged(ctx context.Context, key string, data []byte, token string) error {
	if err := lockFor(ctx, c.lock); err != nil {
		return fmt.Errorf("lock for %q: %w", key, err)
	}
	defer c.lock.Unlock()
	var cur []byte
	err := c.s.sendOnce(ctx, &c.s.n.get, func(ctx context.Context) (err error) {
		cur, err = c.s.bucket.ReadAll(ctx, key)
		return err
	})
	switch {
	case errors.Is(err, ErrNotFound):
		if token != "" {
			return fmt.Errorf("%w: record vanished", ErrConflict)
		}
	case err != nil:
		return err
	case token == "":
		return fmt.Errorf("%w: key already exists", ErrConflict)
	case contentToken(cur) != token:
		return fmt.Errorf("%w: record changed", ErrConflict)
	}
	return c.s.sendOnce(ctx, &c.s.n.put, func(ctx context.Context) error { return c.s.upload(ctx, key, data, nil) })
}

func (c *lockedWrites) readIfChanged(ctx context.Context, key, _ string) ([]byte, string, error) {
	return c.s.readWithToken(ctx, key, nil)
}

// --- a backend New does not know ---

// noCAS refuses conditional writes: a backend that cannot compare-and-swap
// never writes a record blindly.
type noCAS struct {
	defaults
	storeRef
	label string
}

var _ backendDriver = (*noCAS)(nil)

func (d *noCAS) name() string                                   { return d.label }
func (*noCAS) changeToken(*blob.Reader, []byte) (string, error) { return "", nil }
func (d *noCAS) createOnly(context.Context, string, []byte) error {
	return fmt.Errorf("%w (%s)", ErrNoCAS, d.label)
}
func (d *noCAS) replaceIfUnchanged(context.Context, string, []byte, string) error {
	return fmt.Errorf("%w (%s)", ErrNoCAS, d.label)
}
func (*noCAS) conditionNames() (string, string) { return "create-only", "replace" }
func (*noCAS) wrongToken(tok string) string     { return tok + "x" }
func (d *noCAS) readIfChanged(ctx context.Context, key, _ string) ([]byte, string, error) {
	return d.s.readWithToken(ctx, key, nil)
}

// localConditions: preconditionPuts' conditions are the server's (probed,
// probe.go); lockedWrites' are this host's lock, noCAS refuses.
func (*preconditionPuts) localConditions() bool { return false }
func (*lockedWrites) localConditions() bool     { return true }
func (*noCAS) localConditions() bool            { return true }
