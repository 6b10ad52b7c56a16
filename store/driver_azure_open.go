package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	azblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
)

// openAzure opens an azblob:// URL as gocloud's opener does (the same
// query parameters and environment: azureblob's ServiceURLOptions), with
// the container client made here so that its transport is driver_http.go's:
// answers bounded, no redirect to another host.
func openAzure(ctx context.Context, u *url.URL, idle int, dates *storeClock) (*blob.Bucket, leanChoice, error) {
	tr := idleTransport(idle)
	hc := guardedClient(tr, azureListToken, dates)
	mux := new(blob.URLMux)
	var auth azureAuth
	mux.RegisterBucket(azureblob.Scheme, &azureblob.URLOpener{
		MakeClient: func(svc azureblob.ServiceURL, name azureblob.ContainerName) (*container.Client, error) {
			return azureContainerClient(svc, name, hc, &auth)
		},
		ServiceURLOptions: *azureblob.NewDefaultServiceURLOptions(),
	})
	b, err := mux.OpenBucketURL(ctx, u)
	if err != nil {
		return nil, leanChoice{}, err
	}
	q := u.Query()
	c := azureLeanChoice(b, auth, q.Get("prefix"), q, hc) // leanget_azure.go
	if c.path != nil {
		base := c.path.be.(*azureLean).base
		c.path.scheme, c.path.host, c.path.tr, c.path.dates = base.Scheme, base.Host, tr, dates
	}
	return b, c, nil
}

// azureContainerClient is gocloud's azureblob client for the credentials
// of the environment (credentials.go's table), with transport hc: an
// account key, a SAS token (only for the service the environment names:
// gocloud's rule, so that a URL cannot send the token elsewhere), a
// connection string, or azidentity's default chain. auth is told which,
// and the shared key, for the lean GET (leanget_azure.go).
func azureContainerClient(svc azureblob.ServiceURL, name azureblob.ContainerName, hc *http.Client, auth *azureAuth) (*container.Client, error) {
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: hc,
		Telemetry: policy.TelemetryOptions{ApplicationID: "oxyfs"},
	}}
	containerURL, err := url.JoinPath(string(svc), string(name))
	if err != nil {
		return nil, err
	}
	account, key := os.Getenv("AZURE_STORAGE_ACCOUNT"), os.Getenv("AZURE_STORAGE_KEY")
	conn := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	if conn == "" {
		conn = os.Getenv("AZURE_STORAGEBLOB_CONNECTIONSTRING")
	}
	switch {
	case account != "" && key != "":
		cred, err := azblob.NewSharedKeyCredential(account, key)
		if err != nil {
			return nil, fmt.Errorf("azure shared key: %w", err)
		}
		decoded, err := base64.StdEncoding.DecodeString(key)
		if err != nil { // NewSharedKeyCredential decoded it: never
			return nil, fmt.Errorf("azure shared key: %w", err)
		}
		*auth = azureAuth{kind: "shared key", account: account, key: decoded}
		return container.NewClientWithSharedKeyCredential(containerURL, cred, opts)
	case os.Getenv("AZURE_STORAGE_SAS_TOKEN") != "":
		def, err := azureblob.NewServiceURL(azureblob.NewDefaultServiceURLOptions())
		if err != nil {
			return nil, err
		}
		if !sameOrigin(string(def), string(svc)) {
			return nil, errors.New("azureblob: bucket URL cannot change the service endpoint when AZURE_STORAGE_SAS_TOKEN is set")
		}
		*auth = azureAuth{kind: "SAS"}
		return container.NewClientWithNoCredential(containerURL, opts)
	case conn != "":
		*auth = azureAuth{kind: "connection string"}
		return container.NewClientFromConnectionString(conn, string(name), opts)
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("azidentity default credential: %w", err)
	}
	*auth = azureAuth{kind: "Entra ID token"}
	return container.NewClient(containerURL, cred, opts)
}

// sameOrigin reports whether two URLs have one scheme and host.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

// azureListToken tells a List Blobs (comp=list) from the other requests,
// with its marker.
func azureListToken(r *http.Request) (string, bool) {
	q := r.URL.Query()
	if r.Method != http.MethodGet || q.Get("comp") != "list" {
		return "", false
	}
	return q.Get("marker"), true
}
