package store

// The lean GET on GCS (leanget.go): an XML-API media GET of
// scheme://host/BUCKET/OBJECT, as the Go client reads an object, on the
// driver's client (whose transport adds the bearer token where there is
// one).

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// gcsLean is the lean GET of one GCS bucket.
type gcsLean struct {
	scheme, host string // the XML API's: the endpoint's scheme and host
	bucket       string
}

// gcsLeanChoice decides the lean path of gs:// URL u (query q, endpoint=
// already read), whose client is hc; emulator is STORAGE_EMULATOR_HOST.
func gcsLeanChoice(u *url.URL, q url.Values, endpoint, emulator string, hc httpDoer) leanChoice {
	if q.Get("universe_domain") != "" {
		return sdkPath("universe_domain=")
	}
	if q.Has("key") {
		return sdkPath("a single-key bucket (key=)")
	}
	l := &gcsLean{scheme: "https", host: "storage.googleapis.com", bucket: u.Host}
	switch {
	case endpoint != "":
		e, err := url.Parse(endpoint)
		if err != nil || e.Host == "" || (e.Scheme != "http" && e.Scheme != "https") {
			return sdkPath("an endpoint= that is not an http(s) URL")
		}
		l.scheme, l.host = e.Scheme, e.Host
	case emulator != "":
		h := emulator
		if s, rest, ok := strings.Cut(emulator, "://"); ok {
			if s != "http" && s != "https" {
				return sdkPath("STORAGE_EMULATOR_HOST with scheme " + s)
			}
			l.scheme, h = s, rest
		} else {
			l.scheme = "http"
		}
		l.host = strings.TrimSuffix(h, "/")
	}
	if l.bucket == "" || strings.ContainsAny(l.bucket, "/?#%") {
		return sdkPath("a bucket name the lean path does not address")
	}
	return leanChoice{path: &leanPath{be: l, client: hc, prefix: q.Get("prefix"), label: "gcs: XML API"}}
}

func (l *gcsLean) request(ctx context.Context, name string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "", nil)
	if err != nil {
		return nil, err
	}
	// As the Go client: the object's name path-escaped whole, "/" too.
	req.URL = &url.URL{Scheme: l.scheme, Host: l.host, Path: "/" + l.bucket + "/" + name, RawPath: "/" + l.bucket + "/" + url.PathEscape(name)}
	req.Host = l.host
	return req, nil
}

// verify checks the CRC-32C X-Goog-Hash names (as the Go client checks a
// whole object read), unless the body was decompressed on the way.
func (*gcsLean) verify(resp *http.Response, data []byte) error {
	if resp.Uncompressed {
		return nil
	}
	for _, v := range resp.Header.Values("X-Goog-Hash") {
		for _, part := range strings.Split(v, ",") {
			want, ok := strings.CutPrefix(strings.TrimSpace(part), "crc32c=")
			if !ok {
				continue
			}
			if got := base64.StdEncoding.EncodeToString(crc32cDigest(data)); got != want {
				return fmt.Errorf("%w: X-Goog-Hash says crc32c=%s, the body's is %s", errChecksum, want, got)
			}
			return nil
		}
	}
	return nil
}
