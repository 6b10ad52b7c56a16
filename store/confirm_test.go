package store

import (
	"net/http"
	"testing"
)

// TestWriteAnswerProves: an answer proves the bytes only when it names
// their MD5 (S3's ETag, Azure's Content-MD5, GCS's X-Goog-Hash md5=).
func TestWriteAnswerProves(t *testing.T) {
	data := []byte("journal line\n")
	// md5("journal line\n")
	for _, tc := range []struct {
		name string
		h    http.Header
		want bool
	}{
		{"none", nil, false},
		{"s3 etag", http.Header{"Etag": {`"` + md5hex(data) + `"`}}, true},
		{"s3 etag of other bytes", http.Header{"Etag": {`"` + md5hex([]byte("x")) + `"`}}, false},
		{"azure content-md5", http.Header{"Content-Md5": {md5b64(data)}}, true},
		{"gcs x-goog-hash", http.Header{"X-Goog-Hash": {"crc32c=AAAAAA==,md5=" + md5b64(data)}}, true},
		{"gcs x-goog-hash of other bytes", http.Header{"X-Goog-Hash": {"md5=" + md5b64([]byte("x"))}}, false},
	} {
		a := &writeAnswer{header: tc.h}
		if got := a.proves(data); got != tc.want {
			t.Errorf("%s: proves = %v, want %v", tc.name, got, tc.want)
		}
	}
}
