package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestLeanKeyMatchesTheSDKsEscaping: the lean path takes exactly the keys
// gocloud's drivers send as they are; a key they escape goes to the SDK.
func TestLeanKeyMatchesTheSDKsEscaping(t *testing.T) {
	for key, want := range map[string]bool{
		"sig/ab/cdef/alice":             true,
		"sig/ab/cdef/bob smith+x@ex.ør": true,
		"pack-entries":                  true,
		"":                              false,
		"sig/ab/cdef/a%20b":             false, // azureblob escapes %
		"sig/ab/cdef/a#b":               false,
		"sig/ab/cdef/a?b":               false,
		`sig/ab/cdef/a\b`:               false,
		`sig/ab/cdef/a"b`:               false,
		"sig/ab/cdef/a\tb":              false,
		"sig/ab/cdef/a\x7fb":            false,
		"sig/ab/../x":                   false,
		"sig/ab/cdef/__0x41__":          false,
		"sig/ab/cdef/":                  false,
		"sig/ab/cdef/\xff":              false,
	} {
		if got := leanKey(key); got != want {
			t.Errorf("leanKey(%q) = %v, want %v", key, got, want)
		}
	}
}

// TestLeanStatusErrorSaysWhatTheServerSaid: an error answer's status maps
// as the SDK's errors do (404: ErrNotFound; 503: transient) and its code
// and message are kept, on one line.
func TestLeanStatusErrorSaysWhatTheServerSaid(t *testing.T) {
	resp := &http.Response{StatusCode: 404, Header: http.Header{},
		Body: io.NopCloser(strings.NewReader("<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The specified\nkey does not exist.</Message></Error>"))}
	err := mapErr(statusError(resp))
	if !errors.Is(err, ErrNotFound) || transient(err) {
		t.Errorf("404: %v (transient %v), want ErrNotFound, final", err, transient(err))
	}
	if want := "GET answered Not Found (404): NoSuchKey: The specified key does not exist."; err.Error() != want {
		t.Errorf("404: %q, want %q", err, want)
	}
	resp = &http.Response{StatusCode: 503, Header: http.Header{"X-Ms-Error-Code": {"ServerBusy"}}, Body: io.NopCloser(strings.NewReader(""))}
	if err := mapErr(statusError(resp)); !transient(err) || !strings.Contains(err.Error(), "ServerBusy") {
		t.Errorf("503: %v (transient %v), want transient, naming ServerBusy", err, transient(err))
	}
}

// FuzzLeanStatusError: whatever an error answer's body holds, its error is
// one line of valid UTF-8 with no control character, and keeps the status.
func FuzzLeanStatusError(f *testing.F) {
	f.Add(500, []byte("<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>"))
	f.Add(404, []byte("<Code><Code></Code></Code><Message>\x00\xff\n</Message>"))
	f.Add(999, []byte("<Details>"+strings.Repeat("x", 5000)+"</Details>"))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
		err := statusError(resp)
		var se *leanStatusError
		if !errors.As(err, &se) || se.HTTPStatusCode() != status {
			t.Fatalf("status %d: %v", status, err)
		}
		s := err.Error()
		if !utf8.ValidString(s) || len(s) > 600 {
			t.Fatalf("error of %d bytes, valid UTF-8 %v", len(s), utf8.ValidString(s))
		}
		for _, r := range s {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("control character %q in %q", r, s)
			}
		}
	})
}

// TestLeanErrorsCarryNoQuery: a transport error names the URL without its
// query, where a SAS token would be.
func TestLeanErrorsCarryNoQuery(t *testing.T) {
	err := redactURLError(&url.Error{Op: "Get", URL: "https://acct.blob.core.windows.net/c/sig%2Fab?sv=2024&sig=SECRET", Err: errors.New("connection refused")})
	if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "acct.blob.core.windows.net/c/sig%2Fab") {
		t.Errorf("error %q: want the URL without its query", err)
	}
}

// TestAzureSharedKeyString: the lean path's Shared Key signature of a GET
// is the HMAC of the Blob service's string to sign, written out here
// (Azurite checks the real thing in TestLeanGetAnswersAsTheSDK).
func TestAzureSharedKeyString(t *testing.T) {
	l := &azureLean{account: "devstoreaccount1"}
	key := []byte("0123456789abcdef0123456789abcdef")
	l.macs.New = func() any { return newHMAC(key) }
	date := "Sun, 06 Dec 2026 08:00:00 GMT"
	got := l.sign(date, "/devstoreaccount1/c/sig%2Fab%2Fx")
	// The string to sign, written out: twelve empty standard headers,
	// the x-ms- headers, the resource.
	want := hmacBase64(key, "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:"+date+"\nx-ms-version:"+azureVersion+"\n/devstoreaccount1/devstoreaccount1/c/sig%2Fab%2Fx")
	if got != want {
		t.Errorf("signature %s, want %s", got, want)
	}
}

// hmacBase64 is the base64 HMAC-SHA256 of s with key.
func hmacBase64(key []byte, s string) string {
	m := newHMAC(key)
	m.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// TestLeanVerifiesTheChecksum: a body that does not match the full-object
// checksum its answer names fails as a torn read (errBodyRead: retried);
// a composite (multipart) checksum or none is not checked.
func TestLeanVerifiesTheChecksum(t *testing.T) {
	data := []byte("a signature")
	crc := func(h hash.Hash) string {
		h.Write(data)
		return base64.StdEncoding.EncodeToString(h.Sum(nil))
	}
	for _, c := range []struct {
		be     leanBackend
		header http.Header
		ok     bool
	}{
		{&s3Lean{}, http.Header{}, true},
		{&s3Lean{}, http.Header{"X-Amz-Checksum-Crc32": {crc(crc32.NewIEEE())}}, true},
		{&s3Lean{}, http.Header{"X-Amz-Checksum-Crc32": {"AAAAAA=="}}, false},
		{&s3Lean{}, http.Header{"X-Amz-Checksum-Crc32c": {crc(crc32.New(crc32cTable))}}, true},
		{&s3Lean{}, http.Header{"X-Amz-Checksum-Crc64nvme": {crc(crc64.New(crc64NVME))}}, true},
		{&s3Lean{}, http.Header{"X-Amz-Checksum-Crc64nvme": {"AAAAAAAAAAA="}, "X-Amz-Checksum-Crc32": {crc(crc32.NewIEEE())}}, false},
		{&s3Lean{}, http.Header{"X-Amz-Checksum-Sha256": {crc(sha256.New())}}, true},
		{&s3Lean{}, http.Header{"X-Amz-Checksum-Crc32": {"AAAAAA==-3"}}, true},
		{&gcsLean{}, http.Header{"X-Goog-Hash": {"crc32c=" + crc(crc32.New(crc32cTable)) + ",md5=xx"}}, true},
		{&gcsLean{}, http.Header{"X-Goog-Hash": {"md5=xx", "crc32c=AAAAAA=="}}, false},
		{&gcsLean{}, http.Header{}, true},
	} {
		err := c.be.verify(&http.Response{Header: c.header}, data)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, errChecksum)) {
			t.Errorf("%T with %v: %v, want ok %v", c.be, c.header, err, c.ok)
		}
	}
}

// TestS3LeanAddressesAsTheSDK: without endpoint=, the lean GET goes where
// the SDK's endpoint rules send a GetObject: the bucket in the host (or,
// path style, in the path), the key escaped as the SDK escapes it, signed
// for the region.
func TestS3LeanAddressesAsTheSDK(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		pathStyle bool
		want      string
	}{
		{false, "https://bkt.s3.eu-west-3.amazonaws.com/sig/ab/cd/bob%20smith%2Bx%40ex.org"},
		{true, "https://s3.eu-west-3.amazonaws.com/bkt/sig/ab/cd/bob%20smith%2Bx%40ex.org"},
	} {
		client := s3.New(s3.Options{Region: "eu-west-3", UsePathStyle: c.pathStyle,
			Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")})
		choice := s3LeanChoice(ctx, client, http.DefaultClient, "bkt", "")
		if choice.path == nil {
			t.Fatalf("path style %v: SDK path (%s), want lean", c.pathStyle, choice.why)
		}
		req, err := choice.path.be.request(ctx, "sig/ab/cd/bob smith+x@ex.org")
		if err != nil {
			t.Fatal(err)
		}
		if got := req.URL.String(); got != c.want {
			t.Errorf("path style %v: %s, want %s", c.pathStyle, got, c.want)
		}
		if a := req.Header.Get("Authorization"); !strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential=AKID/") || !strings.Contains(a, "/eu-west-3/s3/aws4_request") {
			t.Errorf("path style %v: Authorization %q", c.pathStyle, a)
		}
	}
}
