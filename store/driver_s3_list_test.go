package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// bodyClient answers every request with one ListObjectsV2 body.
type bodyClient struct{ body []byte }

func (c bodyClient) Do(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": []string{"application/xml"}},
		Body:    io.NopCloser(bytes.NewReader(c.body)),
		Request: r,
	}, nil
}

// listWith decodes body as a ListObjectsV2 answer, with the SDK's own
// deserializer or with fastList in front of it.
func listWith(t testing.TB, body []byte, fast bool) (*s3.ListObjectsV2Output, error) {
	t.Helper()
	opts := s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}, HTTPClient: bodyClient{body}, Retryer: aws.NopRetryer{},
	}
	if fast {
		opts.APIOptions = append(opts.APIOptions, fastList)
	}
	return s3.New(opts).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("b")})
}

// sameList compares what gocloud reads of a page (and IsTruncated, KeyCount).
func sameList(t testing.TB, body []byte) {
	t.Helper()
	want, werr := listWith(t, body, false)
	got, gerr := listWith(t, body, true)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("body %q: SDK error %v, fast error %v", body, werr, gerr)
	}
	if werr != nil {
		return
	}
	if !reflect.DeepEqual(readFields(got.Contents), readFields(want.Contents)) || !reflect.DeepEqual(got.CommonPrefixes, want.CommonPrefixes) ||
		!reflect.DeepEqual(got.NextContinuationToken, want.NextContinuationToken) ||
		!reflect.DeepEqual(got.IsTruncated, want.IsTruncated) || !reflect.DeepEqual(got.KeyCount, want.KeyCount) {
		t.Fatalf("body %q:\nfast %s\nSDK  %s", body, dumpList(got), dumpList(want))
	}
}

// readFields keeps what gocloud's s3blob reads of each object: the fast
// path leaves the rest (StorageClass, Owner, checksums) out.
func readFields(objs []types.Object) []types.Object {
	out := make([]types.Object, len(objs))
	for i, o := range objs {
		out[i] = types.Object{Key: o.Key, Size: o.Size, ETag: o.ETag, LastModified: o.LastModified}
	}
	return out
}

func dumpList(o *s3.ListObjectsV2Output) string {
	var b strings.Builder
	for _, c := range o.Contents {
		fmt.Fprintf(&b, "{key %v size %v etag %v mod %v} ", ptrStr(c.Key), ptrVal(c.Size), ptrStr(c.ETag), ptrVal(c.LastModified))
	}
	for _, p := range o.CommonPrefixes {
		fmt.Fprintf(&b, "{prefix %v} ", ptrStr(p.Prefix))
	}
	fmt.Fprintf(&b, "truncated %v next %v count %v", ptrVal(o.IsTruncated), ptrStr(o.NextContinuationToken), ptrVal(o.KeyCount))
	return b.String()
}

func ptrStr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *p)
}

func ptrVal[T any](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

const pageHead = `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>sig/</Prefix>`

var listPages = []string{
	// versitygw's shape: every field, one key.
	pageHead + `<KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>` +
		`<NextContinuationToken>sig/00/ab/alice</NextContinuationToken>` +
		`<Contents><Key>sig/00/ab/alice</Key><LastModified>2026-11-30T13:34:56.123Z</LastModified>` +
		`<ETag>&#34;9e107d9d372bb6826bd81d3542a419d6&#34;</ETag><Size>3</Size><StorageClass>STANDARD</StorageClass>` +
		`<Owner><ID>x</ID><DisplayName>y</DisplayName></Owner></Contents></ListBucketResult>`,
	// Delimited: keys and common prefixes, pretty-printed.
	pageHead + "\n  <Delimiter>/</Delimiter>\n  <IsTruncated>false</IsTruncated>\n" +
		"  <Contents>\n    <Key>sig/stray</Key>\n    <Size>0</Size>\n    <LastModified>2026-11-30T13:34:56Z</LastModified>\n  </Contents>\n" +
		"  <CommonPrefixes>\n    <Prefix>sig/00/</Prefix>\n  </CommonPrefixes>\n  <CommonPrefixes><Prefix>sig/01/</Prefix></CommonPrefixes>\n</ListBucketResult>\n",
	// Entities and a carriage return in keys: decoded as encoding/xml does.
	pageHead + `<Contents><Key>sig/00/a&amp;b/&lt;x&gt;</Key><Size>1</Size><LastModified>2026-11-30T13:34:56Z</LastModified></Contents>` +
		"<Contents><Key>sig/00/cr\r\nlf</Key><Size>1</Size><LastModified>2026-11-30T13:34:56Z</LastModified></Contents>" +
		`<Contents><Key>sig/00/&#x1F600;/&#9;</Key><Size>1</Size><LastModified>2026-11-30T13:34:56Z</LastModified></Contents></ListBucketResult>`,
	// Empty elements and an empty page.
	pageHead + `<Contents><Key></Key><ETag/><Size>0</Size><LastModified>2026-11-30T13:34:56Z</LastModified></Contents><IsTruncated>false</IsTruncated></ListBucketResult>`,
	`<ListBucketResult></ListBucketResult>`,
	// EncodingType, ignored by both (versitygw sends an empty one).
	pageHead + `<Contents><Key>k</Key><Size>1</Size><LastModified>2026-11-30T13:34:56Z</LastModified></Contents><EncodingType></EncodingType></ListBucketResult>`,
	// Shapes left to the SDK: CDATA, a comment, attributes on a child.
	pageHead + `<EncodingType>url</EncodingType><Contents><Key>sig%2F00</Key><Size>1</Size><LastModified>2026-11-30T13:34:56Z</LastModified></Contents></ListBucketResult>`,
	pageHead + `<Contents><Key><![CDATA[sig/00/<a>]]></Key><Size>1</Size><LastModified>2026-11-30T13:34:56Z</LastModified></Contents></ListBucketResult>`,
	pageHead + `<!-- c --><Contents><Key>k</Key><Size>1</Size><LastModified>2026-11-30T13:34:56Z</LastModified></Contents></ListBucketResult>`,
	pageHead + `<Contents a="1"><Key>k</Key><Size>1</Size><LastModified>2026-11-30T13:34:56Z</LastModified></Contents></ListBucketResult>`,
	// Case-insensitive names, as the SDK matches them.
	pageHead + `<contents><key>k</key><size>1</size><lastmodified>2026-11-30T13:34:56Z</lastmodified></contents></ListBucketResult>`,
	// Broken pages: both fail, or both agree.
	pageHead + `<Contents><Key>k</Key><Size>x</Size></Contents></ListBucketResult>`,
	pageHead + `<Contents><Key>k</Key>`,
	`not xml at all`,
}

func TestFastListMatchesSDK(t *testing.T) {
	for _, p := range listPages {
		sameList(t, []byte(p))
	}
	// The plain pages are parsed here, not by the SDK.
	for i := range 6 {
		if _, err := parseListV2([]byte(listPages[i])); err != nil {
			t.Errorf("page %d: %v, want it parsed by the scanner", i, err)
		}
	}
}

func FuzzParseListV2(f *testing.F) {
	for _, p := range listPages {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameList(t, body)
	})
}

// BenchmarkListDecode decodes a page of 1000 keys as a fold receives it.
func BenchmarkListDecode(b *testing.B) {
	var page strings.Builder
	page.WriteString(pageHead + `<KeyCount>1000</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>t</NextContinuationToken>`)
	for i := range 1000 {
		fmt.Fprintf(&page, `<Contents><Key>sig/%02x/%062x/signer-%02d</Key><LastModified>2026-11-30T13:34:56.123Z</LastModified><ETag>&#34;9e107d9d372bb6826bd81d3542a419d6&#34;</ETag><Size>64</Size><StorageClass>STANDARD</StorageClass></Contents>`, i%256, i, i%16)
	}
	page.WriteString(`</ListBucketResult>`)
	body := []byte(page.String())
	for _, fast := range []bool{false, true} {
		name := "sdk"
		if fast {
			name = "fast"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := listWith(b, body, fast)
				if err != nil || len(out.Contents) != 1000 {
					b.Fatalf("%v, %d keys", err, len(out.Contents))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/key")
		})
	}
}
