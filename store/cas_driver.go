package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	azblobblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
)

// casDriver is one backend's compare-and-swap: the version token a read
// returns, a create-only write and a write conditional on a token. Every
// driver-specific escape hatch (As, BeforeWrite) lives in this file.
type casDriver interface {
	token(r *blob.Reader, data []byte) (string, error)
	create(ctx context.Context, key string, data []byte) error
	replace(ctx context.Context, key string, data []byte, token string) error
}

func casFor(s *Store, b *blob.Bucket) casDriver {
	switch s.backend {
	case "s3":
		return s3CAS{s}
	case "gcs":
		return gcsCAS{s}
	case "azure":
		return azureCAS{s}
	case "mem":
		return &lockCAS{s: s, lock: memLock(b)}
	}
	return noCAS{s}
}

// conflict maps the errors of a conditional write: a failed precondition,
// or (S3 If-Match on a key that vanished) not found, is a lost race.
func conflict(err error) error {
	err = mapErr(err)
	if errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// --- S3: If-None-Match: * and If-Match: <ETag> ---

type s3CAS struct{ s *Store }

func (c s3CAS) token(r *blob.Reader, _ []byte) (string, error) {
	var out s3.GetObjectOutput
	if !r.As(&out) || out.ETag == nil || *out.ETag == "" {
		return "", errors.New("s3: read returned no ETag")
	}
	return *out.ETag, nil
}

func (c s3CAS) create(ctx context.Context, key string, data []byte) error {
	return conflict(c.s.sendOnce(ctx, &c.s.n.put, func(ctx context.Context) error {
		return c.s.upload(ctx, key, data, &blob.WriterOptions{IfNotExist: true})
	}))
}

func (c s3CAS) replace(ctx context.Context, key string, data []byte, token string) error {
	return conflict(c.s.sendOnce(ctx, &c.s.n.put, func(ctx context.Context) error {
		return c.s.upload(ctx, key, data, &blob.WriterOptions{BeforeWrite: func(as func(any) bool) error {
			var in *transfermanager.UploadObjectInput
			if !as(&in) {
				return errors.New("s3: cannot set If-Match on upload")
			}
			in.IfMatch = &token
			return nil
		}})
	}))
}

// --- GCS: generation preconditions ---

type gcsCAS struct{ s *Store }

func (c gcsCAS) token(r *blob.Reader, _ []byte) (string, error) {
	var sr *storage.Reader
	if !r.As(&sr) || sr == nil {
		return "", errors.New("gcs: read returned no generation")
	}
	return strconv.FormatInt(sr.Attrs.Generation, 10), nil
}

func (c gcsCAS) create(ctx context.Context, key string, data []byte) error {
	return conflict(c.s.sendOnce(ctx, &c.s.n.put, func(ctx context.Context) error {
		return c.s.upload(ctx, key, data, &blob.WriterOptions{IfNotExist: true})
	}))
}

func (c gcsCAS) replace(ctx context.Context, key string, data []byte, token string) error {
	gen, err := strconv.ParseInt(token, 10, 64)
	if err != nil {
		return fmt.Errorf("gcs: bad generation %q: %w", token, err)
	}
	return conflict(c.s.sendOnce(ctx, &c.s.n.put, func(ctx context.Context) error {
		return c.s.upload(ctx, key, data, &blob.WriterOptions{BeforeWrite: func(as func(any) bool) error {
			var obj **storage.ObjectHandle
			if !as(&obj) {
				return errors.New("gcs: cannot set generation precondition")
			}
			*obj = (*obj).If(storage.Conditions{GenerationMatch: gen})
			return nil
		}})
	}))
}

// --- Azure: ETag access conditions ---

type azureCAS struct{ s *Store }

func (c azureCAS) token(r *blob.Reader, _ []byte) (string, error) {
	var resp azblobblob.DownloadStreamResponse
	if !r.As(&resp) || resp.ETag == nil {
		return "", errors.New("azure: read returned no ETag")
	}
	return string(*resp.ETag), nil
}

func (c azureCAS) create(ctx context.Context, key string, data []byte) error {
	return conflict(c.s.sendOnce(ctx, &c.s.n.put, func(ctx context.Context) error {
		return c.s.upload(ctx, key, data, &blob.WriterOptions{IfNotExist: true})
	}))
}

func (c azureCAS) replace(ctx context.Context, key string, data []byte, token string) error {
	return conflict(c.s.sendOnce(ctx, &c.s.n.put, func(ctx context.Context) error {
		return c.s.upload(ctx, key, data, &blob.WriterOptions{BeforeWrite: func(as func(any) bool) error {
			var opts *azblob.UploadStreamOptions
			if !as(&opts) {
				return errors.New("azure: cannot set If-Match on upload")
			}
			etag := azcore.ETag(token)
			if opts.AccessConditions == nil {
				opts.AccessConditions = &azblob.AccessConditions{}
			}
			if opts.AccessConditions.ModifiedAccessConditions == nil {
				opts.AccessConditions.ModifiedAccessConditions = &azblobblob.ModifiedAccessConditions{}
			}
			opts.AccessConditions.ModifiedAccessConditions.IfMatch = &etag
			return nil
		}})
	}))
}

// --- file and mem: a lock around read-compare-write ---

// lockCAS serializes conditional writes with a lock: an OS file lock on the
// store's directory for file:// (correct across processes), a mutex per
// bucket for mem://. The token is the SHA-256 of the record's bytes.
type lockCAS struct {
	s    *Store
	lock locker
}

type locker interface {
	Lock() error
	Unlock()
}

func (c *lockCAS) token(_ *blob.Reader, data []byte) (string, error) {
	return contentToken(data), nil
}

func contentToken(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func (c *lockCAS) create(ctx context.Context, key string, data []byte) error {
	return c.replace(ctx, key, data, "")
}

// replace writes data if the key's current content hashes to token
// (token "" = the key must be absent).
func (c *lockCAS) replace(ctx context.Context, key string, data []byte, token string) error {
	if err := c.lock.Lock(); err != nil {
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

var memLocks sync.Map // *blob.Bucket -> *memLocker

type memLocker struct{ mu sync.Mutex }

func (m *memLocker) Lock() error { m.mu.Lock(); return nil }
func (m *memLocker) Unlock()     { m.mu.Unlock() }

func memLock(b *blob.Bucket) locker {
	l, _ := memLocks.LoadOrStore(b, &memLocker{})
	return l.(*memLocker)
}

// noCAS refuses conditional writes: a backend that cannot compare-and-swap
// never writes a record blindly.
type noCAS struct{ s *Store }

func (noCAS) token(*blob.Reader, []byte) (string, error) { return "", nil }
func (c noCAS) create(context.Context, string, []byte) error {
	return fmt.Errorf("%w (%s)", ErrNoCAS, c.s.backend)
}
func (c noCAS) replace(context.Context, string, []byte, string) error {
	return fmt.Errorf("%w (%s)", ErrNoCAS, c.s.backend)
}
