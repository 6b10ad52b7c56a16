package store

// The lean GET on S3 (leanget.go): the bucket's endpoint resolved once by
// the client's own endpoint rules, each GET signed with SigV4 (sigv4.go).

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyauth "github.com/aws/smithy-go/auth"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// emptyPayloadSHA256 is the SHA-256 of an empty body, hex: a GET's payload
// hash in its SigV4 signature and its X-Amz-Content-Sha256.
const emptyPayloadSHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// s3SigningName is S3's SigV4 service name.
const s3SigningName = "s3"

// s3Lean is the lean GET of one S3 bucket.
type s3Lean struct {
	scheme, host string                  // the resolved endpoint's
	base         string                  // its path, "" or "/BUCKET" (path style)
	creds        aws.CredentialsProvider // nil: anonymous (unsigned)
	sig          *sigV4                  // nil: anonymous
	service      string                  // the SigV4 signing name ("s3")
	region       string                  // the SigV4 signing region
}

// s3LeanChoice decides the lean path of a bucket opened on client, whose
// requests go through hc (the wire-counting client).
func s3LeanChoice(ctx context.Context, client *s3.Client, hc httpDoer, bucket, prefix string) leanChoice {
	o := client.Options()
	switch {
	case o.Region == "":
		return sdkPath("no region")
	case o.EndpointResolverV2 == nil:
		return sdkPath("no endpoint resolver")
	case o.UseAccelerate:
		return sdkPath("transfer acceleration")
	}
	base, pathStyle, signingRegion, why := s3LegacyEndpoint(o)
	if why != "" {
		return sdkPath(why)
	}
	ep, err := o.EndpointResolverV2.ResolveEndpoint(ctx, s3.EndpointParameters{
		Bucket:                         aws.String(bucket),
		Region:                         aws.String(o.Region),
		UseFIPS:                        aws.Bool(o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		UseDualStack:                   aws.Bool(o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
		Endpoint:                       base,
		ForcePathStyle:                 aws.Bool(pathStyle),
		Accelerate:                     aws.Bool(o.UseAccelerate),
		DisableMultiRegionAccessPoints: aws.Bool(o.DisableMultiRegionAccessPoints),
		UseArnRegion:                   aws.Bool(o.UseARNRegion),
		DisableS3ExpressSessionAuth:    o.DisableS3ExpressSessionAuth,
	})
	if err != nil {
		return sdkPath("endpoint: " + oneLine(err.Error()))
	}
	if len(ep.Headers) > 0 {
		return sdkPath("the endpoint sets headers")
	}
	l := &s3Lean{scheme: ep.URI.Scheme, host: ep.URI.Host, base: strings.TrimSuffix(ep.URI.EscapedPath(), "/"), creds: o.Credentials, service: s3SigningName, region: o.Region}
	if o.EndpointOptions.DisableHTTPS {
		l.scheme = "http" // as the SDK's DisableHTTPS middleware does
	}
	if ep.URI.RawQuery != "" || l.host == "" {
		return sdkPath("an endpoint with a query or no host")
	}
	if why := l.takeAuthScheme(&ep.Properties); why != "" {
		return sdkPath(why)
	}
	if signingRegion != "" {
		l.region = signingRegion
	}
	if _, anon := l.creds.(aws.AnonymousCredentials); anon {
		l.creds = nil
	}
	if l.creds != nil && !aws.IsCredentialsProvider(l.creds, (*aws.CredentialsCache)(nil)) {
		l.creds = aws.NewCredentialsCache(l.creds)
	}
	label := "s3: anonymous"
	if l.creds != nil {
		l.sig, label = newSigV4(l.scheme, l.host, l.region, l.service), "s3: SigV4"
	}
	return leanChoice{path: &leanPath{be: l, client: hc, prefix: prefix, label: label}}
}

// s3LegacyEndpoint is where the endpoint rules start from: the client's
// base endpoint, or the URL of a resolver of the older kind (gocloud's
// endpoint= sets one), as the SDK does — a hostname it says is immutable
// takes the bucket in the path — with the signing region it names; why is
// not empty when the SDK path must read instead.
func s3LegacyEndpoint(o s3.Options) (base *string, pathStyle bool, signingRegion, why string) {
	base, pathStyle = o.BaseEndpoint, o.UsePathStyle
	if o.EndpointResolver == nil { //nolint:staticcheck // gocloud's endpoint= sets this deprecated resolver: its URL is the endpoint
		return base, pathStyle, "", ""
	}
	le, err := o.EndpointResolver.ResolveEndpoint(o.Region, s3.EndpointResolverOptions{}) //nolint:staticcheck // as above
	var nf *aws.EndpointNotFoundError
	switch {
	case errors.As(err, &nf):
		return base, pathStyle, "", ""
	case err != nil:
		return nil, false, "", "endpoint: " + oneLine(err.Error())
	case le.SigningName != "" && le.SigningName != s3SigningName:
		return nil, false, "", "an endpoint signing as " + le.SigningName
	}
	return aws.String(le.URL), pathStyle || le.HostnameImmutable, le.SigningRegion, ""
}

// takeAuthScheme takes the signing name and region the endpoint's first
// auth scheme gives; why is not empty for a scheme other than SigV4.
func (l *s3Lean) takeAuthScheme(props *smithy.Properties) (why string) {
	opts, ok := smithyauth.GetAuthOptions(props)
	if !ok || len(opts) == 0 {
		return ""
	}
	a := opts[0]
	if a.SchemeID != "sigv4" && a.SchemeID != "aws.auth#sigv4" {
		return "the endpoint's auth scheme " + a.SchemeID
	}
	if n, ok := smithyhttp.GetSigV4SigningName(&a.SignerProperties); ok && n != "" {
		l.service = n
	}
	if r, ok := smithyhttp.GetSigV4SigningRegion(&a.SignerProperties); ok && r != "" {
		l.region = r
	}
	return ""
}

// request is the GET of name, signed (sigV4, sigv4.go) unless the bucket
// is read anonymously.
func (l *s3Lean) request(ctx context.Context, name string) (*http.Request, error) {
	u := &url.URL{Scheme: l.scheme, Host: l.host, Path: l.base + "/" + name, RawPath: l.base + "/" + awsEscapePath(name)}
	if u.RawPath == u.Path {
		u.RawPath = ""
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "", nil)
	if err != nil {
		return nil, err
	}
	req.URL, req.Host = u, u.Host
	vals := [...]string{emptyPayloadSHA256, s3ChecksumMode, s3AcceptEncoding}
	h := make(http.Header, 6)
	h["X-Amz-Content-Sha256"] = vals[0:1:1]
	h["X-Amz-Checksum-Mode"] = vals[1:2:2] // the full object's checksum, checked in verify
	// As the SDK: the bytes as stored, never decompressed on the way
	// (net/http would ask for gzip and undo it).
	h["Accept-Encoding"] = vals[2:3:3]
	req.Header = h
	if l.creds == nil {
		return req, nil
	}
	creds, err := l.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("s3 credentials: %w", err)
	}
	l.sig.sign(req, u.EscapedPath(), creds, time.Now()) // the canonical URI the SDK's signer takes (DisableURIPathEscaping)
	return req, nil
}

// awsEscapePath escapes a key for an S3 request path as the SDK does
// (httpbinding.EscapePath): everything but A-Z a-z 0-9 - _ . ~ and "/".
func awsEscapePath(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !awsUnreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hexDigits = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if awsUnreserved(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
	}
	return string(b)
}

func awsUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' || c == '/'
}

// s3Checksums are the full-object checksums an answer may carry, in the
// order the SDK prefers them, with their hashes.
var s3Checksums = []struct {
	header string
	hash   func() hash.Hash
}{
	{"X-Amz-Checksum-Crc64nvme", func() hash.Hash { return crc64.New(crc64NVME) }},
	{"X-Amz-Checksum-Crc32c", func() hash.Hash { return crc32.New(crc32cTable) }},
	{"X-Amz-Checksum-Crc32", func() hash.Hash { return crc32.NewIEEE() }},
	{"X-Amz-Checksum-Sha256", sha256.New},
	{"X-Amz-Checksum-Sha1", sha1.New},
}

// crc64NVME is the CRC-64/NVME table, made once (the SDK makes it per
// request).
var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

// verify checks the first full-object checksum the answer carries, as the
// SDK's response validation does; a multipart object's composite checksum
// ("…-N", or x-amz-checksum-type COMPOSITE) is not one.
func (*s3Lean) verify(resp *http.Response, data []byte) error {
	if resp.Uncompressed || strings.EqualFold(resp.Header.Get("X-Amz-Checksum-Type"), "COMPOSITE") {
		return nil
	}
	for _, c := range s3Checksums {
		want := resp.Header.Get(c.header)
		if want == "" {
			continue
		}
		if strings.Contains(want, "-") {
			return nil
		}
		return checkDigest(c.header, want, c.hash, data)
	}
	return nil
}

// checkDigest compares the base64 digest want (as header names it) with
// data's.
func checkDigest(header, want string, newHash func() hash.Hash, data []byte) error {
	h := newHash()
	h.Write(data)
	if got := base64.StdEncoding.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%w: %s says %s, the body's is %s", errChecksum, header, want, got)
	}
	return nil
}

// errChecksum is a body that does not match the checksum its answer
// carries (retried: errBodyRead).
var errChecksum = errors.New("checksum mismatch")

// crc32cDigest is data's CRC-32C as 4 big-endian bytes.
func crc32cDigest(data []byte) []byte {
	return binary.BigEndian.AppendUint32(nil, crc32.Checksum(data, crc32cTable))
}

// crc32cTable is the Castagnoli table, made once.
var crc32cTable = crc32.MakeTable(crc32.Castagnoli)
