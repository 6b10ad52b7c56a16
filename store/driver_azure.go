package store

// The Azure driver (azblob:// URLs), through gocloud's azureblob. As types
// used:
//
//	azblobblob.DownloadStreamResponse  blob.Reader    the ETag of a read
//	*azblob.UploadStreamOptions        WriterOptions  If-Match (BeforeWrite)
//	*container.Client                  blob.Bucket    the conditional read
//	*azcore.ResponseError              errors         the HTTP status
//
// Create-only is gocloud's IfNotExist (If-None-Match: *). Writes go through
// Bucket.Upload (Store.upload): azureblob panics on a failed conditional
// WriteAll.

import (
	"context"
	"errors"
	"github.com/oxyfs/oxyfs/store/format"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	azblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	azblobblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob:// URLs
)

type azureDriver struct {
	defaults
	preconditionPuts
	prefix string     // the URL's prefix=, when Open knows it
	direct bool       // prefix is known: readDirect may address blobs itself
	lean   leanChoice // the read path Open chose (leanget.go)
}

var _ backendDriver = (*azureDriver)(nil)

func (*azureDriver) name() string { return "azure" }

func (d *azureDriver) leanChoice() leanChoice { return orNotFromURL(d.lean) }

func (*azureDriver) changeToken(r *blob.Reader, _ []byte) (string, error) {
	var resp azblobblob.DownloadStreamResponse
	if !r.As(&resp) || resp.ETag == nil {
		return "", errors.New("azure: read returned no ETag")
	}
	return string(*resp.ETag), nil
}

func (d *azureDriver) replaceIfUnchanged(ctx context.Context, key string, data []byte, token string) error {
	return d.putIf(ctx, key, data, token, &blob.WriterOptions{BeforeWrite: func(as func(any) bool) error {
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
}

// readIfChanged does not go through gocloud: the SDK answers a 304 as a
// success with no Last-Modified, which gocloud's azureblob reader
// dereferences (a panic, gocloud.dev v0.47.0). So readDirect sends the
// download itself, with If-None-Match: <ETag>, through the bucket's
// *container.Client; where it cannot, gocloud reads in full, with no
// condition, and the caller compares ETags.
func (d *azureDriver) readIfChanged(ctx context.Context, key, token string) ([]byte, string, error) {
	if data, tok, ok, err := d.readDirect(ctx, key, token); ok {
		return data, tok, err
	}
	return d.s.readWithToken(ctx, key, nil)
}

// readDirect downloads key with If-None-Match: token (one GET). The SDK
// treats a 304 as a success with an empty body: the record is unchanged,
// answered as nil data and token itself. ok is false when it cannot address
// the blob itself: the store was not opened from a URL (so a prefix the
// bucket adds is unknown), or the key holds characters azureblob would
// escape.
func (d *azureDriver) readDirect(ctx context.Context, key, token string) (data []byte, tok string, ok bool, err error) {
	name := d.prefix + key
	if !d.direct || !plainBlobName(name) {
		return nil, "", false, nil
	}
	var cc *container.Client
	if !d.s.bucket.As(&cc) {
		return nil, "", false, nil
	}
	err = d.s.read(ctx, &d.s.n.get, func(ctx context.Context) error {
		var raw *http.Response
		opts := &azblobblob.DownloadStreamOptions{AccessConditions: &azblobblob.AccessConditions{
			ModifiedAccessConditions: &azblobblob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETag(token))},
		}}
		resp, err := cc.NewBlobClient(name).DownloadStream(policy.WithCaptureResponse(ctx, &raw), opts)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if raw != nil && raw.StatusCode == http.StatusNotModified {
			data, tok = nil, token
			return nil
		}
		limit := format.ReadCap(key)
		size := int64(-1)
		if resp.ContentLength != nil {
			size = *resp.ContentLength
		}
		if size > limit {
			return tooLarge(size, limit)
		}
		if data, err = readCapped(resp.Body, size, limit, nil); err != nil {
			return err
		}
		if resp.ETag == nil {
			return errors.New("azure: read returned no ETag")
		}
		tok = string(*resp.ETag)
		return nil
	})
	return data, tok, true, err
}

// plainBlobName reports whether azureblob sends name unescaped: letters,
// digits and . _ - /, no "../", no trailing slash.
func plainBlobName(name string) bool {
	if name == "" || strings.HasSuffix(name, "/") || strings.Contains(name, "../") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return false
		}
	}
	return true
}

// requestContext turns the SDK's retries off per request: the store retries
// reads itself and counts every attempt.
func (*azureDriver) requestContext(ctx context.Context) context.Context {
	return policy.WithRetryOptions(ctx, policy.RetryOptions{MaxRetries: -1})
}

// mapErr reads the HTTP status of the SDK's errors (*azcore.ResponseError),
// of any other error the common way (statusOf): a 404 of readDirect, which
// bypasses gocloud's codes, is ErrNotFound.
func (*azureDriver) mapErr(err error) error { return mapStatus(err, azureStatus) }

var azureStatus = statusAs(func(e *azcore.ResponseError) int { return e.StatusCode })

var azureBackend = backend{
	name: "azure", scheme: "azblob",
	open: func(ctx context.Context, u *url.URL, opts Options) (*blob.Bucket, backendDriver, error) {
		if err := azureCredentials(ctx, u); err != nil {
			return nil, nil, err
		}
		b, lean, err := openAzure(ctx, u, idleConns(opts), opts.dates) // driver_azure_open.go
		return b, &azureDriver{prefix: u.Query().Get("prefix"), direct: true, lean: lean}, err
	},
	wrap: func(*blob.Bucket, string) backendDriver { return &azureDriver{} },
}
