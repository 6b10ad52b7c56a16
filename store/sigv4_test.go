package store

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// leanS3For is the lean S3 GET of bucket bkt through a client of opts.
func leanS3For(t *testing.T, opts s3.Options) *s3Lean {
	t.Helper()
	choice := s3LeanChoice(context.Background(), s3.New(opts), http.DefaultClient, "bkt", "")
	if choice.path == nil {
		t.Fatalf("SDK path (%s), want lean", choice.why)
	}
	return choice.path.be.(*s3Lean)
}

// sdkSigned is req as the SDK's signer signs it at t (DisableURIPathEscaping,
// as the lean path signed with it before sigv4.go): a copy of req with the
// signer's headers and Host taken off, signed anew.
func sdkSigned(t *testing.T, l *s3Lean, req *http.Request, creds aws.Credentials, at time.Time) *http.Request {
	t.Helper()
	r := req.Clone(context.Background())
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		delete(r.Header, h)
	}
	r.Host = r.URL.Host
	signer := v4.NewSigner(func(so *v4.SignerOptions) { so.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(context.Background(), creds, r, emptyPayloadSHA256, l.service, l.region, at); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSigV4SignsAsTheSDK: the lean GET's signature (sigv4.go) is the SDK
// signer's byte for byte — the same headers, the same Host — for every
// endpoint shape (virtual host, path style, default and other ports, an
// IPv6 literal), keys the path escapes, a session token with spaces, and
// across days and credentials that change (the signing key is derived
// again).
func TestSigV4SignsAsTheSDK(t *testing.T) {
	ctx := context.Background()
	endpoints := []*string{nil, aws.String("http://127.0.0.1:9000"), aws.String("http://minio.local:80"),
		aws.String("https://s3.example.com:443"), aws.String("http://[::1]:8080"), aws.String("http://[::1]"), aws.String("http://[::1]:80"),
		aws.String("https://S3.Example.com:8443/base")}
	names := []string{"sig/ab/cdef0123/alice@example.org", "sig/ab/cd/bob smith+x@ex.ør", "pack-entries", "a/b/~._-"}
	credSets := []aws.Credentials{
		{AccessKeyID: "AKID", SecretAccessKey: "SECRET"},
		{AccessKeyID: "AKID", SecretAccessKey: "ROTATED"},
		{AccessKeyID: "AKID2", SecretAccessKey: "ROTATED", SessionToken: "  tok  en  with   spaces "},
		{AccessKeyID: "AKID2", SecretAccessKey: "ROTATED", SessionToken: "FwoGZXIvYXdzE//token=="},
	}
	times := []time.Time{time.Date(2026, 12, 7, 23, 59, 59, 0, time.UTC), time.Date(2026, 12, 8, 0, 0, 1, 0, time.UTC),
		time.Date(2026, 12, 8, 1, 0, 0, 0, time.FixedZone("CET", 3600))}
	for _, ep := range endpoints {
		for _, pathStyle := range []bool{false, true} {
			l := leanS3For(t, s3.Options{Region: "eu-west-3", UsePathStyle: pathStyle, BaseEndpoint: ep,
				Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")})
			for _, name := range names {
				req, err := l.request(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				at, err := time.Parse("20060102T150405Z", req.Header.Get("X-Amz-Date"))
				if err != nil {
					t.Fatal(err)
				}
				checkSigned(t, l, req, aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, at)
				for _, creds := range credSets {
					for _, at := range times {
						delete(req.Header, "X-Amz-Security-Token") // a fresh request has none
						l.sig.sign(req, req.URL.EscapedPath(), creds, at)
						checkSigned(t, l, req, creds, at)
					}
				}
			}
		}
	}
}

// checkSigned fails unless req, signed by the lean path with creds at at,
// is what the SDK's signer makes of it.
func checkSigned(t *testing.T, l *s3Lean, req *http.Request, creds aws.Credentials, at time.Time) {
	t.Helper()
	want := sdkSigned(t, l, req, creds, at)
	if !reflect.DeepEqual(req.Header, want.Header) || req.Host != want.Host {
		t.Fatalf("%s (%s, %+v at %v):\n lean Host %q %v\n  SDK Host %q %v", req.URL, l.region, creds, at, req.Host, req.Header, want.Host, want.Header)
	}
}

// TestSigV4RequestAllocations: a signed lean S3 GET request is made with
// a handful of allocations (the SDK's signer alone took 43).
func TestSigV4RequestAllocations(t *testing.T) {
	l := leanS3For(t, s3.Options{Region: "us-east-1", UsePathStyle: true, BaseEndpoint: aws.String("http://127.0.0.1:9000"),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")})
	ctx := context.Background()
	const name = "sig/ab/cdef0123456789/alice@example.org"
	if _, err := l.request(ctx, name); err != nil { // the signing key, derived once
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := l.request(ctx, name); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 20 {
		t.Fatalf("a signed request took %.0f allocations, want at most 20", allocs)
	}
	t.Logf("%.0f allocations a signed request", allocs)
}
