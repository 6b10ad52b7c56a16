package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"
)

// openGCS opens a gs:// URL as gocloud's opener does, but finds the
// credentials first: gocloud's prints a warning on stdout when there are
// none, and goes on with empty ones that fail every request. Its client
// keeps idle up to idle connections to the service (idleTransport), and
// is driver_http.go's: answers bounded, no redirect to another host (the
// bearer token the client adds to every request never goes with one).
//
// endpoint=URL sends the requests there instead of storage.googleapis.com
// (or STORAGE_EMULATOR_HOST): a GCS-compatible service or a proxy. gRPC
// URLs (grpc=, zonal=) go to gocloud's opener as they are.
func openGCS(ctx context.Context, u *url.URL, idle int, dates *storeClock) (*blob.Bucket, leanChoice, error) {
	q := u.Query()
	endpoint := q.Get("endpoint")
	if q.Has("grpc") || q.Has("zonal") {
		if endpoint != "" {
			return nil, leanChoice{}, errors.New("endpoint= cannot be combined with grpc= or zonal=")
		}
		b, err := openGCSgRPC(ctx, u)
		return b, sdkPath("gRPC"), err
	}
	q.Del("endpoint")
	tr := idleTransport(idle)
	hc := guardedClient(tr, gcsListToken, dates)
	client := &gcp.HTTPClient{Client: *hc}
	var authorize func(r *http.Request) error // the bearer token, where the client's transport adds one
	var clientOpts []option.ClientOption
	emulator := os.Getenv("STORAGE_EMULATOR_HOST")
	anon, _ := strconv.ParseBool(q.Get("anonymous"))
	switch {
	case emulator != "" || anon || q.Get("access_id") == "-":
		// An emulator, or a public bucket: no credentials.
		clientOpts = append(clientOpts, option.WithoutAuthentication())
	default:
		creds, err := gcsCredentials(ctx, q)
		if err != nil {
			return nil, leanChoice{}, err
		}
		if client, err = gcp.NewHTTPClient(hc.Transport, creds.TokenSource); err != nil {
			return nil, leanChoice{}, err
		}
		ts := oauth2.ReuseTokenSource(nil, creds.TokenSource)
		authorize = func(r *http.Request) error {
			t, err := ts.Token()
			if err != nil {
				return fmt.Errorf("token for a pipelined GET: %w", err)
			}
			t.SetAuthHeader(r)
			return nil
		}
		client.CheckRedirect = checkRedirect
	}
	switch {
	case endpoint != "":
		clientOpts = append(clientOpts, option.WithEndpoint(endpoint))
	case emulator != "":
		clientOpts = append(clientOpts, option.WithEndpoint("http://"+emulator+"/storage/v1/"))
	}
	// Last, so that it wins over the client gocloud picks (with
	// STORAGE_EMULATOR_HOST, http.DefaultClient).
	clientOpts = append(clientOpts, option.WithHTTPClient(&client.Client))
	mux := new(blob.URLMux)
	mux.RegisterBucket(gcsblob.Scheme, &gcsblob.URLOpener{Client: client, Options: gcsblob.Options{ClientOptions: clientOpts}})
	v := *u
	v.RawQuery = q.Encode()
	b, err := mux.OpenBucketURL(ctx, &v)
	c := gcsLeanChoice(u, q, endpoint, emulator, &client.Client) // leanget_gcs.go
	if c.path != nil {
		l := c.path.be.(*gcsLean)
		c.path.scheme, c.path.host, c.path.tr, c.path.dates, c.path.authorize = l.scheme, l.host, tr, dates, authorize
	}
	return b, c, err
}

// openGCSgRPC opens a gRPC gs:// URL with gocloud's opener, credentials
// found first (the HTTP guards of driver_http.go do not apply to gRPC).
func openGCSgRPC(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	if anyEnv("STORAGE_EMULATOR_HOST", "STORAGE_EMULATOR_HOST_GRPC") {
		return blob.OpenBucket(ctx, u.String()) // an emulator: no credentials
	}
	q := u.Query()
	anon, _ := strconv.ParseBool(q.Get("anonymous"))
	if anon || q.Get("access_id") == "-" {
		return (&gcsblob.URLOpener{}).OpenBucketURL(ctx, u)
	}
	creds, err := gcsCredentials(ctx, q)
	if err != nil {
		return nil, err
	}
	return (&gcsblob.URLOpener{TokenSource: gcp.CredentialsTokenSource(creds)}).OpenBucketURL(ctx, u)
}

// gcsListToken tells a LIST (GET .../storage/v1/b/BUCKET/o) from the
// other requests, with its pageToken.
func gcsListToken(r *http.Request) (string, bool) {
	if r.Method != http.MethodGet {
		return "", false
	}
	path := r.URL.Path
	i := strings.LastIndex(path, "/b/")
	if i < 0 || !strings.HasSuffix(path[:i], "/storage/v1") {
		return "", false
	}
	bucket, rest, _ := strings.Cut(path[i+3:], "/")
	if bucket == "" || rest != "o" {
		return "", false
	}
	return r.URL.Query().Get("pageToken"), true
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

// gcsCredentials finds the application default credentials for a gs://
// URL's query (universe_domain), or says what to set when there are none.
func gcsCredentials(ctx context.Context, q url.Values) (*google.Credentials, error) {
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
	return creds, nil
}
