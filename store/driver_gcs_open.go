package store

import (
	"context"
	"net/url"
	"strconv"

	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcp"
	"golang.org/x/oauth2/google"
)

// openGCS opens a gs:// URL as gocloud's opener does, but finds the
// credentials first: gocloud's prints a warning on stdout when there are
// none, and goes on with empty ones that fail every request.
func openGCS(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
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
	client, err := gcp.NewHTTPClient(gcp.DefaultTransport(), creds.TokenSource)
	if err != nil {
		return nil, err
	}
	return (&gcsblob.URLOpener{Client: client, TokenSource: gcp.CredentialsTokenSource(creds)}).OpenBucketURL(ctx, u)
}
