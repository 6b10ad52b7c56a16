package index

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/gcerrors"

	"github.com/oxyfs/oxyfs/store"
)

// latencyBucket is a blob driver over an in-memory bucket that adds a
// round trip to every request, as a remote bucket would, and can hold the
// GETs of chosen keys until released (or their context ends). It counts the
// GETs in flight and their peak.
type latencyBucket struct {
	inner   *blob.Bucket
	latency atomic.Int64 // ns per request

	mu      sync.Mutex
	hold    func(key string) bool
	release chan struct{}

	inFlight, peak atomic.Int64
}

// newLatencyStore opens a mem store over a latencyBucket.
func newLatencyStore(t testing.TB, latency time.Duration) (*store.Store, *latencyBucket) {
	t.Helper()
	lb := &latencyBucket{inner: memblob.OpenBucket(nil), release: make(chan struct{})}
	lb.latency.Store(int64(latency))
	st := store.New(blob.NewBucket(lb), "mem", "", store.Options{Layout: store.LayoutBucket})
	t.Cleanup(func() { st.Close() })
	return st, lb
}

// holdGets makes GETs of the keys fn picks wait until releaseGets.
func (b *latencyBucket) holdGets(fn func(key string) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hold = fn
}

func (b *latencyBucket) releaseGets() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hold = nil
	close(b.release)
	b.release = make(chan struct{})
}

// wait waits one round trip, and while key (a GET's; "" for other
// requests) is held, until it is released.
func (b *latencyBucket) wait(ctx context.Context, key string) error {
	b.mu.Lock()
	held := key != "" && b.hold != nil && b.hold(key)
	release := b.release
	b.mu.Unlock()
	var hold <-chan struct{}
	if held {
		hold = release
	}
	t := time.NewTimer(time.Duration(b.latency.Load()))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-hold:
			hold = nil
		case <-t.C:
			if hold == nil {
				return nil
			}
			t.Reset(time.Hour)
		}
	}
}

func (b *latencyBucket) ErrorCode(err error) gcerrors.ErrorCode {
	if errors.Is(err, context.Canceled) {
		return gcerrors.Canceled
	}
	return gcerrors.Code(err)
}

func (b *latencyBucket) As(any) bool             { return false }
func (b *latencyBucket) ErrorAs(error, any) bool { return false }
func (b *latencyBucket) Close() error            { return b.inner.Close() }

func (b *latencyBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	if err := b.wait(ctx, ""); err != nil {
		return nil, err
	}
	a, err := b.inner.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{ContentType: a.ContentType, ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag}, nil
}

func (b *latencyBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if err := b.wait(ctx, ""); err != nil {
		return nil, err
	}
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	objs, next, err := b.inner.ListPage(ctx, token, max(opts.PageSize, 1), &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{NextPageToken: next}
	for _, o := range objs {
		page.Objects = append(page.Objects, &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir})
	}
	return page, nil
}

func (b *latencyBucket) NewRangeReader(ctx context.Context, key string, offset, length int64, _ *driver.ReaderOptions) (driver.Reader, error) {
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	for p := b.peak.Load(); n > p && !b.peak.CompareAndSwap(p, n); p = b.peak.Load() {
	}
	if err := b.wait(ctx, key); err != nil {
		return nil, err
	}
	r, err := b.inner.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		return nil, err
	}
	return &latencyReader{r: r}, nil
}

func (b *latencyBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	if err := b.wait(ctx, ""); err != nil {
		return nil, err
	}
	return b.inner.NewWriter(ctx, key, &blob.WriterOptions{ContentType: contentType, IfNotExist: opts.IfNotExist})
}

func (b *latencyBucket) Copy(ctx context.Context, dst, src string, _ *driver.CopyOptions) error {
	return b.inner.Copy(ctx, dst, src, nil)
}

func (b *latencyBucket) Delete(ctx context.Context, key string, _ *driver.DeleteOptions) error {
	if err := b.wait(ctx, ""); err != nil {
		return err
	}
	return b.inner.Delete(ctx, key)
}

func (b *latencyBucket) SignedURL(context.Context, string, *driver.SignedURLOptions) (string, error) {
	return "", errors.New("latencyBucket: no signed URLs")
}

type latencyReader struct{ r *blob.Reader }

func (r *latencyReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *latencyReader) Close() error               { return r.r.Close() }
func (r *latencyReader) As(any) bool                { return false }
func (r *latencyReader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

var _ driver.Bucket = (*latencyBucket)(nil)
