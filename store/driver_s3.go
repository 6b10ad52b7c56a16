package store

// The S3 driver (s3:// URLs). Opening, with the requests counted on the wire,
// is in driver_s3_open.go; the ListObjectsV2 page scanner in
// driver_s3_list.go. As types used:
//
//	*s3.GetObjectOutput                 blob.Reader       the ETag of a read
//	*s3.GetObjectInput                  ReaderOptions     If-None-Match (BeforeRead)
//	*transfermanager.UploadObjectInput  WriterOptions     If-Match (BeforeWrite)
//
// Create-only is gocloud's IfNotExist (If-None-Match: *). ETags are content
// hashes: equal bytes, equal ETag, so a record rewritten with the same bytes
// keeps its version (harmless: a record's only state is its bytes).

import (
	"context"
	"errors"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
)

type s3Driver struct {
	defaults
	preconditionPuts
	wire *wireCounter // nil when gocloud's own opener opened the bucket
	lean leanChoice   // the read path Open chose (leanget.go)
}

var _ backendDriver = (*s3Driver)(nil)

func (*s3Driver) name() string { return "s3" }

func (d *s3Driver) leanChoice() leanChoice { return orNotFromURL(d.lean) }

func (*s3Driver) changeToken(r *blob.Reader, _ []byte) (string, error) {
	var out s3.GetObjectOutput
	if !r.As(&out) || out.ETag == nil || *out.ETag == "" {
		return "", errors.New("s3: read returned no ETag")
	}
	return *out.ETag, nil
}

func (d *s3Driver) replaceIfUnchanged(ctx context.Context, key string, data []byte, token string) error {
	return d.putIf(ctx, key, data, token, &blob.WriterOptions{BeforeWrite: func(as func(any) bool) error {
		var in *transfermanager.UploadObjectInput
		if !as(&in) {
			return errors.New("s3: cannot set If-Match on upload")
		}
		in.IfMatch = &token
		return nil
	}})
}

// readIfChanged sends GetObject with If-None-Match: <ETag>; S3 answers 304
// Not Modified, with no body, while the record is at token.
func (d *s3Driver) readIfChanged(ctx context.Context, key, token string) ([]byte, string, error) {
	return d.s.readWithToken(ctx, key, &blob.ReaderOptions{BeforeRead: d.ifNoneMatch(token)})
}

func (*s3Driver) ifNoneMatch(token string) func(as func(any) bool) error {
	return func(as func(any) bool) error {
		var in *s3.GetObjectInput
		if !as(&in) {
			return errors.New("s3: cannot set If-None-Match on GetObject")
		}
		in.IfNoneMatch = &token
		return nil
	}
}

// deleteRequests: s3blob sends a HEAD first (S3 deletes missing keys
// silently) and no DELETE when the key is missing.
func (*s3Driver) deleteRequests(missing bool) Counts {
	if missing {
		return Counts{Head: 1}
	}
	return Counts{Head: 1, Delete: 1}
}

// mapErr: the AWS SDK's errors (smithy's ResponseError) carry
// HTTPStatusCode(), the convention the common mapErr reads (0 when no
// response came).
func (*s3Driver) mapErr(err error) error { return mapErr(err) }

func (d *s3Driver) wireCounts() (Counts, bool) {
	if d.wire == nil {
		return Counts{}, false
	}
	// The conditions probe's requests are on the wire but not in Counts.
	return d.wire.n.snapshot().Sub(d.s.probeN.snapshot()), true
}

var s3Backend = backend{
	name: "s3", scheme: "s3",
	open: func(ctx context.Context, u *url.URL, opts Options) (*blob.Bucket, backendDriver, error) {
		b, wire, lean, err := openS3(ctx, u, idleConns(opts), opts.dates)
		return b, &s3Driver{wire: wire, lean: lean}, err
	},
	wrap: func(*blob.Bucket, string) backendDriver { return &s3Driver{} },
}
