package store

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
)

// openS3 opens an s3:// URL like s3blob's URL opener does, but with an HTTP
// client that counts every request on the wire by method, so tests can prove
// the store-level counters equal what was sent. URLs with S3 options this
// opener does not handle go to gocloud's own opener (wire is then nil).
//
// The client keeps idle up to idle connections to the endpoint, as many as
// the store may have requests in flight: net/http keeps 2 a host by default
// and the SDK 10, so read-ahead's 16–64 GETs would close and open
// connections on every burst (a TCP handshake each, and CPU on both sides).
func openS3(ctx context.Context, u *url.URL, idle int, dates *storeClock) (*blob.Bucket, *wireCounter, leanChoice, error) {
	q := u.Query()
	prefix := q.Get("prefix")
	q.Del("prefix")
	// The store retries reads itself and counts every attempt; the SDK's
	// retryer (3 attempts by default, AWS_MAX_ATTEMPTS) would send
	// requests the counters never see, and retry writes whose first
	// attempt may have landed.
	opts := []func(*s3.Options){func(o *s3.Options) {
		o.Retryer = aws.NopRetryer{}
		o.RetryMaxAttempts = 0
		o.APIOptions = append(o.APIOptions, fastList) // driver_s3_list.go
	}}
	for _, k := range []string{"use_path_style", "s3ForcePathStyle"} {
		if v := q.Get(k); v != "" {
			q.Del(k)
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, nil, leanChoice{}, fmt.Errorf("invalid value for %q: %w", k, err)
			}
			opts = append(opts, func(o *s3.Options) { o.UsePathStyle = b })
		}
	}
	if v := q.Get("disable_https"); v != "" {
		q.Del("disable_https")
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, nil, leanChoice{}, fmt.Errorf("invalid value for %q: %w", "disable_https", err)
		}
		opts = append(opts, func(o *s3.Options) { o.EndpointOptions.DisableHTTPS = b })
	}
	for _, k := range []string{"ssetype", "kmskeyid", "accelerate"} {
		if q.Has(k) {
			if _, err := awsCredentials(ctx, q); err != nil {
				return nil, nil, leanChoice{}, err
			}
			b, err := blob.OpenBucket(ctx, u.String())
			return b, nil, sdkPath("gocloud's own S3 opener (" + k + "=)"), err
		}
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q) // checks the parameters
	if err != nil {
		return nil, nil, leanChoice{}, err
	}
	creds, err := awsCredentials(ctx, q) // credentials.go
	if err != nil {
		return nil, nil, leanChoice{}, err
	}
	if creds != nil && q.Get("role") == "" {
		cfg.Credentials = creds // found without IMDS where it cannot answer
	}
	cfg.Logger = logging.Nop{} // no "SDK ... WARN" lines on stderr
	wc := &wireCounter{}
	tr := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = max(t.MaxIdleConns, idle)
		t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, idle)
	}).GetTransport()
	hc := wc.wrap(s3HTTPClient(tr, dates))
	cfg.HTTPClient = hc
	client := s3.NewFromConfig(cfg, opts...)
	b, err := s3blob.OpenBucket(ctx, client, u.Host, &s3blob.Options{RequestChecksumCalculation: cfg.RequestChecksumCalculation})
	if err != nil {
		return nil, nil, leanChoice{}, err
	}
	if prefix != "" {
		b = blob.PrefixedBucket(b, prefix)
	}
	c := s3LeanChoice(ctx, client, hc, u.Host, prefix) // leanget_s3.go
	if c.path != nil {
		l := c.path.be.(*s3Lean)
		c.path.scheme, c.path.host, c.path.tr, c.path.dates = l.scheme, l.host, tr, dates
		c.path.wire = func(n int) { wc.n.get.Add(int64(n)) }
	}
	return b, wc, c, nil
}

// idleConns is how many idle connections an S3 client keeps: the requests
// the store may have in flight (Options.MaxRequests), and
// DefaultMaxRequests when that is not capped.
func idleConns(opts Options) int {
	if opts.MaxRequests > 0 {
		return opts.MaxRequests
	}
	return DefaultMaxRequests
}

// s3HTTPClient is the S3 client's HTTP client (driver_http.go): answers
// bounded, a redirect followed only on 307 and 308 (the SDK's own rule: a
// method kept) and only to the same origin.
func s3HTTPClient(tr http.RoundTripper, dates *storeClock) *http.Client {
	c := guardedClient(tr, s3ListToken, dates)
	c.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if s := r.Response.StatusCode; s != http.StatusTemporaryRedirect && s != http.StatusPermanentRedirect {
			return http.ErrUseLastResponse
		}
		return checkRedirect(r, via)
	}
	return c
}

// isS3List tells a LIST (ListObjects, ListObjectsV2) from the other GETs.
func isS3List(r *http.Request) bool {
	q := r.URL.Query()
	return r.Method == http.MethodGet && (q.Has("list-type") || q.Has("delimiter") || q.Has("prefix"))
}

// s3ListToken is an S3 LIST's continuation (ListObjects' marker).
func s3ListToken(r *http.Request) (string, bool) {
	if !isS3List(r) {
		return "", false
	}
	q := r.URL.Query()
	if t := q.Get("continuation-token"); t != "" {
		return t, true
	}
	return q.Get("marker"), true
}

// wireCounter counts HTTP requests by S3 operation.
type wireCounter struct{ n counters }

type countingClient struct {
	wc   *wireCounter
	next aws.HTTPClient
}

func (wc *wireCounter) wrap(next aws.HTTPClient) aws.HTTPClient {
	return &countingClient{wc: wc, next: next}
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	switch r.Method {
	case http.MethodGet:
		if isS3List(r) {
			c.wc.n.list.Add(1)
		} else {
			c.wc.n.get.Add(1)
		}
	case http.MethodHead:
		c.wc.n.head.Add(1)
	case http.MethodPut, http.MethodPost:
		c.wc.n.put.Add(1)
	case http.MethodDelete:
		c.wc.n.del.Add(1)
	}
	return c.next.Do(r)
}
