// Package blobtest is a gocloud.dev/blob driver for tests, in the manner of
// kopia's blobtesting wrappers: it passes every request to an inner bucket
// (an in-memory one by default) and lets a test step in before a request is
// sent (fail it, delay it, hold it) and after a write landed (lose its
// response). A store built over it with store.New sees real requests failing
// the way a network or a server makes them fail, through its ordinary
// blob.Bucket, and counts them as it counts any other.
//
// A Liar (SetLiar) makes the bucket answer as a server that lies does: a
// listing that ignores its prefix or leaves keys out, a DELETE that answers
// success and keeps the object, a HEAD or GET that answers 404 for a key
// that is there.
//
// Hooks and the liar may be changed while requests run; each request reads
// them once.
package blobtest

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/gcerrors"
)

// Op names the kind of a request, as the store counts them.
type Op string

// The kinds of request.
const (
	OpList   Op = "list"
	OpGet    Op = "get"
	OpHead   Op = "head"
	OpPut    Op = "put"
	OpDelete Op = "delete"
)

// Hooks step into requests. A nil hook does nothing.
type Hooks struct {
	// Before runs before a request is sent (key: the key, or a listing's
	// prefix). An error fails the request, which then never reaches the
	// inner bucket.
	Before func(ctx context.Context, op Op, key string) error
	// AfterPut runs once a write landed. An error makes the write fail
	// although it landed, as a response lost on the way back does.
	AfterPut func(key string) error
	// Body, if set, wraps the body of each GET of key: a test makes it
	// arrive slowly, stop, or fail midway.
	Body func(ctx context.Context, key string, body io.Reader) io.Reader
}

// Liar says which answers to falsify. A nil field tells no lie.
type Liar struct {
	// IgnorePrefix, true for a listing's prefix, answers that listing as
	// if no prefix had been asked: every key of the bucket.
	IgnorePrefix func(prefix string) bool
	// Omit, true for a listed key, leaves it out of the page.
	Omit func(prefix, key string) bool
	// KeepOnDelete, true for a key, answers its DELETE with success and
	// deletes nothing.
	KeepOnDelete func(key string) bool
	// NotFound, true for a request (OpHead or OpGet) and its key, answers
	// 404 whether or not the key exists.
	NotFound func(op Op, key string) bool
}

// ErrLiedNotFound is the 404 a Liar answers; its code is NotFound.
var ErrLiedNotFound = errors.New("blobtest: not found (a lie)")

// Bucket is the driver. Open a *blob.Bucket over it with blob.NewBucket.
type Bucket struct {
	inner *blob.Bucket
	mu    sync.Mutex // guards hooks and liar
	hooks Hooks
	liar  Liar
}

// New returns a driver over inner, or over a new in-memory bucket if nil.
func New(inner *blob.Bucket) *Bucket {
	if inner == nil {
		inner = memblob.OpenBucket(nil)
	}
	return &Bucket{inner: inner}
}

// SetHooks replaces the hooks.
func (b *Bucket) SetHooks(h Hooks) {
	b.mu.Lock()
	b.hooks = h
	b.mu.Unlock()
}

// SetLiar replaces the lies told; Liar{} tells none.
func (b *Bucket) SetLiar(l Liar) {
	b.mu.Lock()
	b.liar = l
	b.mu.Unlock()
}

// Lies returns the lies told.
func (b *Bucket) Lies() Liar {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.liar
}

func (b *Bucket) before(ctx context.Context, op Op, key string) error {
	b.mu.Lock()
	fn := b.hooks.Before
	b.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn(ctx, op, key)
}

func (b *Bucket) afterPut(key string) error {
	b.mu.Lock()
	fn := b.hooks.AfterPut
	b.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn(key)
}

// ErrorCode maps context errors to their codes and the inner bucket's
// errors to theirs; any other error a hook returned is Internal.
func (b *Bucket) ErrorCode(err error) gcerrors.ErrorCode {
	switch {
	case errors.Is(err, context.Canceled):
		return gcerrors.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return gcerrors.DeadlineExceeded
	case errors.Is(err, ErrLiedNotFound):
		return gcerrors.NotFound
	}
	if c := gcerrors.Code(err); c != gcerrors.Unknown {
		return c
	}
	return gcerrors.Internal
}

// As exposes no driver-specific type: it is false for every target.
func (b *Bucket) As(any) bool { return false }

// ErrorAs exposes no driver-specific error type: it is false for every
// error and target.
func (b *Bucket) ErrorAs(error, any) bool { return false }

// Close closes the inner bucket.
func (b *Bucket) Close() error { return b.inner.Close() }

// Attributes is a HEAD of key (OpHead): the Before hook, then a lied 404
// (Liar.NotFound), else the inner bucket's attributes.
func (b *Bucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	if err := b.before(ctx, OpHead, key); err != nil {
		return nil, err
	}
	if l := b.Lies(); l.NotFound != nil && l.NotFound(OpHead, key) {
		return nil, ErrLiedNotFound
	}
	a, err := b.inner.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}

// ListPaged is a LIST of one page (OpList, key: the prefix): the Before
// hook, then the inner bucket's page with the Liar's lies (a prefix
// ignored, keys omitted).
func (b *Bucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if err := b.before(ctx, OpList, opts.Prefix); err != nil {
		return nil, err
	}
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	size := opts.PageSize
	if size <= 0 {
		size = 1000
	}
	l := b.Lies()
	prefix := opts.Prefix
	if l.IgnorePrefix != nil && l.IgnorePrefix(prefix) {
		prefix = ""
	}
	objs, next, err := b.inner.ListPage(ctx, token, size, &blob.ListOptions{Prefix: prefix, Delimiter: opts.Delimiter})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next}
	for _, o := range objs {
		if l.Omit != nil && l.Omit(opts.Prefix, o.Key) {
			continue
		}
		page.Objects = append(page.Objects, &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir})
	}
	return page, nil
}

// NewRangeReader is a GET of key (OpGet): the Before hook, then a lied 404
// (Liar.NotFound), else the inner bucket's reader, its body wrapped by the
// Body hook.
func (b *Bucket) NewRangeReader(ctx context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	if err := b.before(ctx, OpGet, key); err != nil {
		return nil, err
	}
	if l := b.Lies(); l.NotFound != nil && l.NotFound(OpGet, key) {
		return nil, ErrLiedNotFound
	}
	r, err := b.inner.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	wrap := b.hooks.Body
	b.mu.Unlock()
	if wrap != nil {
		return reader{r: r, body: wrap(ctx, key, r)}, nil
	}
	return reader{r: r, body: r}, nil
}

// NewTypedWriter is a PUT of key (OpPut): the Before hook, then a writer to
// the inner bucket (create-only with IfNotExist) whose Close runs the
// AfterPut hook.
func (b *Bucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	if err := b.before(ctx, OpPut, key); err != nil {
		return nil, err
	}
	w, err := b.inner.NewWriter(ctx, key, &blob.WriterOptions{ContentType: contentType, IfNotExist: opts.IfNotExist})
	if err != nil {
		return nil, err
	}
	return &writer{w: w, b: b, key: key}, nil
}

// Copy copies src to dst in the inner bucket, a PUT of dst (OpPut) to the
// Before hook.
func (b *Bucket) Copy(ctx context.Context, dst, src string, _ *driver.CopyOptions) error {
	if err := b.before(ctx, OpPut, dst); err != nil {
		return err
	}
	return b.inner.Copy(ctx, dst, src, nil)
}

// Delete is a DELETE of key (OpDelete): the Before hook, then success
// without deleting (Liar.KeepOnDelete), else the inner bucket's delete.
func (b *Bucket) Delete(ctx context.Context, key string, _ *driver.DeleteOptions) error {
	if err := b.before(ctx, OpDelete, key); err != nil {
		return err
	}
	if l := b.Lies(); l.KeepOnDelete != nil && l.KeepOnDelete(key) {
		return nil
	}
	return b.inner.Delete(ctx, key)
}

// SignedURL fails: the bucket signs no URLs.
func (b *Bucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("blobtest: no signed URLs")
}

type writer struct {
	w   *blob.Writer
	b   *Bucket
	key string
}

func (w *writer) Write(p []byte) (int, error) { return w.w.Write(p) }
func (w *writer) Close() error {
	if err := w.w.Close(); err != nil {
		return err
	}
	return w.b.afterPut(w.key)
}

type reader struct {
	r    *blob.Reader
	body io.Reader // r, or what Hooks.Body made of it
}

func (r reader) Read(p []byte) (int, error) { return r.body.Read(p) }
func (r reader) Close() error               { return r.r.Close() }
func (r reader) As(any) bool                { return false }
func (r reader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

var (
	_ driver.Bucket = (*Bucket)(nil)
	_ io.ReadCloser = reader{}
)

// HoldFirstPut replaces the hooks with one that holds the first PUT of key
// once it landed, until release is called: its response comes back late,
// as over a slow link, while later writes go on. held is closed when that
// PUT has landed and waits. Call release once.
func (b *Bucket) HoldFirstPut(key string) (held <-chan struct{}, release func()) {
	var seen atomic.Bool
	h, r := make(chan struct{}), make(chan struct{})
	b.SetHooks(Hooks{AfterPut: func(k string) error {
		if k == key && seen.CompareAndSwap(false, true) {
			close(h)
			<-r
		}
		return nil
	}})
	return h, func() { close(r) }
}
