package main

import (
	"net/http/httptest"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, target, host string
		kind, key            string
	}{
		{"GET", "/b?list-type=2&prefix=sig%2F", "", "LIST", ""},
		{"GET", "/b/sig/00/x/alice", "", "GET", "sig/00/x/alice"},
		{"HEAD", "/b/sig/00/x/alice", "", "HEAD", "sig/00/x/alice"},
		{"PUT", "/b/pack-entries?x-id=PutObject", "", "PUT", "pack-entries"},
		{"DELETE", "/b/sig/00/x/alice", "", "DELETE", "sig/00/x/alice"},
		{"PUT", "/b", "", "OTHER", ""},
		// A multipart upload writes one object: its completion is the PUT.
		{"POST", "/b/pack-entries?uploads=", "", "MULTIPART", "pack-entries"},
		{"PUT", "/b/pack-entries?partNumber=1&uploadId=u", "", "MULTIPART", "pack-entries"},
		{"POST", "/b/pack-entries?uploadId=u", "", "PUT", "pack-entries"},
		{"DELETE", "/b/pack-entries?uploadId=u", "", "MULTIPART", "pack-entries"},
		{"POST", "/b?delete=", "", "OTHER", ""},
		// Virtual-host style: the bucket is in the host name.
		{"GET", "/?list-type=2", "b.s3.local:9000", "LIST", ""},
		{"GET", "/sig/00/x/alice", "b.s3.local:9000", "GET", "sig/00/x/alice"},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		if c.host != "" {
			r.Host = c.host
		}
		kind, key := classify(r, "s3.local")
		if kind != c.kind || key != c.key {
			t.Errorf("%s %s (host %q) = %s %q, want %s %q", c.method, c.target, c.host, kind, key, c.kind, c.key)
		}
	}
}
