package store

// The GCS driver (gs:// URLs), through gocloud's gcsblob. As types used:
//
//	*storage.Reader        blob.Reader      the generation of a read
//	**storage.ObjectHandle ReaderOptions    GenerationNotMatch (BeforeRead)
//	**storage.ObjectHandle WriterOptions    GenerationMatch (BeforeWrite)
//	*storage.Client        blob.Bucket      its retries turned off
//	*googleapi.Error       errors           the HTTP status
//
// The change token is the object's generation; create-only is gocloud's
// IfNotExist (DoesNotExist).

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/gcsblob" // gs:// URLs
	"google.golang.org/api/googleapi"
)

type gcsDriver struct {
	defaults
	preconditionPuts
	lean leanChoice // the read path Open chose (leanget.go)
}

var _ backendDriver = (*gcsDriver)(nil)

func (*gcsDriver) name() string { return "gcs" }

func (d *gcsDriver) leanChoice() leanChoice { return orNotFromURL(d.lean) }

func (*gcsDriver) changeToken(r *blob.Reader, _ []byte) (string, error) {
	var sr *storage.Reader
	if !r.As(&sr) || sr == nil {
		return "", errors.New("gcs: read returned no generation")
	}
	return strconv.FormatInt(sr.Attrs.Generation, 10), nil
}

func (*gcsDriver) conditionNames() (string, string) {
	return "ifGenerationMatch=0", "ifGenerationMatch"
}
func (*gcsDriver) wrongToken(tok string) string { return generationWrongToken(tok) }

func (d *gcsDriver) replaceIfUnchanged(ctx context.Context, key string, data []byte, token string) error {
	gen, err := strconv.ParseInt(token, 10, 64)
	if err != nil {
		return fmt.Errorf("gcs: bad generation %q: %w", token, err)
	}
	return d.putIf(ctx, key, data, token, &blob.WriterOptions{BeforeWrite: func(as func(any) bool) error {
		var obj **storage.ObjectHandle
		if !as(&obj) {
			return errors.New("gcs: cannot set generation precondition")
		}
		*obj = (*obj).If(storage.Conditions{GenerationMatch: gen})
		return nil
	}})
}

// readIfChanged reads with ObjectHandle.If(Conditions{GenerationNotMatch}).
// The Go client sends that condition only on JSON-API reads; on the
// XML-API reads it makes by default (and gocloud's gs:// opener uses) it
// drops it silently, and the object is read in full. Either way the answer
// is right: a 304 is "unchanged", and so is a read whose generation is
// token's (the caller compares). Still one GET; on XML reads it costs the
// record's bytes.
func (d *gcsDriver) readIfChanged(ctx context.Context, key, token string) ([]byte, string, error) {
	var opts *blob.ReaderOptions
	if before := d.ifNoneMatch(token); before != nil {
		opts = &blob.ReaderOptions{BeforeRead: before}
	}
	return d.s.readWithToken(ctx, key, opts)
}

// ifNoneMatch is the BeforeRead of a read conditional on the generation
// token; nil when token is not a generation (read in full and compare).
func (*gcsDriver) ifNoneMatch(token string) func(as func(any) bool) error {
	gen, err := strconv.ParseInt(token, 10, 64)
	if err != nil || gen == 0 {
		return nil
	}
	return func(as func(any) bool) error {
		var objp **storage.ObjectHandle
		if !as(&objp) {
			return errors.New("gcs: cannot set a generation precondition on a read")
		}
		*objp = (*objp).If(storage.Conditions{GenerationNotMatch: gen})
		return nil
	}
}

// mapErr reads the HTTP status of the API's errors (*googleapi.Error), of
// any other error the common way (statusOf).
func (*gcsDriver) mapErr(err error) error { return mapStatus(err, gcsStatus) }

var gcsStatus = statusAs(func(e *googleapi.Error) int { return e.Code })

// ownGCSRetries turns off the GCS client's own retries: the store retries
// reads itself and counts every attempt. The client is this store's alone
// (gcsblob makes one per bucket it opens, HTTP or gRPC), so its policy is
// set here, once, before any request, and nothing is kept per process.
func ownGCSRetries(b *blob.Bucket) {
	var c *storage.Client
	if b.As(&c) && c != nil {
		c.SetRetry(storage.WithPolicy(storage.RetryNever))
	}
}

var gcsBackend = backend{
	name: "gcs", scheme: "gs",
	open: func(ctx context.Context, u *url.URL, opts Options) (*blob.Bucket, backendDriver, error) {
		b, lean, err := openGCS(ctx, u, idleConns(opts), opts.dates)
		if err == nil {
			ownGCSRetries(b)
		}
		return b, &gcsDriver{lean: lean}, err
	},
	wrap: func(*blob.Bucket, string) backendDriver { return &gcsDriver{} },
}
