package fold

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/gcerrors"

	"github.com/oxyfs/oxyfs/store"
)

// errInjected is the failure a faultBucket injects.
var errInjected = errors.New("injected fault")

// faultBucket is a blob driver over an in-memory bucket that fails the
// requests a test picks: a real request failing the way a network or a
// permission error makes it fail, seen by the store through its ordinary
// blob.Bucket. Test stores use it with store.New.
type faultBucket struct {
	inner *blob.Bucket
	mu    sync.Mutex
	fail  func(op, key string) bool // op: list, get, head, put, delete
}

// newFaultStore opens a mem store over a faultBucket.
func newFaultStore(t testing.TB, clk store.Clock) (*store.Store, *faultBucket) {
	t.Helper()
	fb := &faultBucket{inner: memblob.OpenBucket(nil)}
	st := store.New(blob.NewBucket(fb), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: clk})
	t.Cleanup(func() { st.Close() })
	return st, fb
}

// failOn makes every request op on a key with the given prefix fail, until
// cleared with failOn("", "").
func (f *faultBucket) failOn(op, prefix string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if op == "" {
		f.fail = nil
		return
	}
	f.fail = func(o, k string) bool { return o == op && strings.HasPrefix(k, prefix) }
}

// failIf makes every request for which fn returns true fail.
func (f *faultBucket) failIf(fn func(op, key string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fn
}

func (f *faultBucket) check(op, key string) error {
	f.mu.Lock()
	fn := f.fail
	f.mu.Unlock()
	if fn != nil && fn(op, key) {
		return errInjected
	}
	return nil
}

func (f *faultBucket) ErrorCode(err error) gcerrors.ErrorCode {
	if errors.Is(err, errInjected) {
		return gcerrors.Internal
	}
	return gcerrors.Code(err)
}

func (f *faultBucket) As(any) bool             { return false }
func (f *faultBucket) ErrorAs(error, any) bool { return false }
func (f *faultBucket) Close() error            { return f.inner.Close() }

func (f *faultBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	if err := f.check("head", key); err != nil {
		return nil, err
	}
	a, err := f.inner.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}

func (f *faultBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if err := f.check("list", opts.Prefix); err != nil {
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
	objs, next, err := f.inner.ListPage(ctx, token, size, &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next}
	for _, o := range objs {
		page.Objects = append(page.Objects, &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir})
	}
	return page, nil
}

func (f *faultBucket) NewRangeReader(ctx context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	if err := f.check("get", key); err != nil {
		return nil, err
	}
	r, err := f.inner.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		return nil, err
	}
	return &faultReader{r: r}, nil
}

func (f *faultBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	if err := f.check("put", key); err != nil {
		return nil, err
	}
	return f.inner.NewWriter(ctx, key, &blob.WriterOptions{ContentType: contentType, IfNotExist: opts.IfNotExist})
}

func (f *faultBucket) Copy(ctx context.Context, dst, src string, _ *driver.CopyOptions) error {
	if err := f.check("put", dst); err != nil {
		return err
	}
	return f.inner.Copy(ctx, dst, src, nil)
}

func (f *faultBucket) Delete(ctx context.Context, key string, _ *driver.DeleteOptions) error {
	if err := f.check("delete", key); err != nil {
		return err
	}
	return f.inner.Delete(ctx, key)
}

func (f *faultBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("faultBucket: no signed URLs")
}

type faultReader struct{ r *blob.Reader }

func (r *faultReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *faultReader) Close() error               { return r.r.Close() }
func (r *faultReader) As(any) bool                { return false }
func (r *faultReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

var _ driver.Bucket = (*faultBucket)(nil)
var _ io.ReadCloser = (*faultReader)(nil)
