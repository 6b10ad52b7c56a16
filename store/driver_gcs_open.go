package store

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcp"
	"golang.org/x/oauth2/google"
)

// openGCS opens a gs:// URL as gocloud's opener does, but finds the
// credentials first: gocloud's prints a warning on stdout when there are
// none, and goes on with empty ones that fail every request. Its client
// keeps idle up to idle connections to the service (idleTransport).
func openGCS(ctx context.Context, u *url.URL, idle int) (*blob.Bucket, error) {
	if anyEnv("STORAGE_EMULATOR_HOST", "STORAGE_EMULATOR_HOST_GRPC") {
		return blob.OpenBucket(ctx, u.String()) // an emulator: no credentials
	}
	q := u.Query()
	anon, _ := strconv.ParseBool(q.Get("anonymous"))
	if anon || q.Get("access_id") == "-" {
		return (&gcsblob.URLOpener{}).OpenBucketURL(ctx, u)
	}
	creds, err := google.FindDefaultCredentialsWithParams(ctx, google.CredentialsParams{
		Scopes:         []string{"https://www.googleapis.com/auth/cloud-platform"},
		UniverseDomain: q.Get("universe_domain"),
	})
	if err != nil {
		e := &noCredentials{who: "Google Cloud", hint: "set GOOGLE_APPLICATION_CREDENTIALS to a key file, or run gcloud auth application-default login"}
		if anyEnv("GOOGLE_APPLICATION_CREDENTIALS") {
			e.cause = err
		}
		return nil, e
	}
	client, err := gcp.NewHTTPClient(idleTransport(idle), creds.TokenSource)
	if err != nil {
		return nil, err
	}
	return (&gcsblob.URLOpener{Client: client, TokenSource: gcp.CredentialsTokenSource(creds)}).OpenBucketURL(ctx, u)
}

// idleTransport is net/http's default transport keeping idle up to idle
// connections a host, as many as the store may have requests in flight:
// the default keeps 2, so read-ahead's 16–64 GETs would close and open
// (TLS handshake and all) connections on every burst.
func idleTransport(idle int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = max(t.MaxIdleConns, idle)
	t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, idle)
	return t
}
