package store

// The lean GET on Azure Blob (leanget.go): GET of the blob's URL (the
// container's URL and the name path-escaped, as azblob's NewBlobClient
// makes it), signed with Shared Key or carrying the SAS of the container
// URL.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"gocloud.dev/blob"
)

// azureVersion is the Blob service version the lean GET asks for
// (x-ms-version): a Get Blob answers the same in every version since.
const azureVersion = "2024-11-04"

// azureAuth is how azureContainerClient signs: what the lean path needs
// to sign the same way.
type azureAuth struct {
	kind    string // "shared key", "SAS", "connection string", "Entra ID"
	account string // shared key: the account
	key     []byte // shared key: the account key, decoded
}

// azureLean is the lean GET of one container.
type azureLean struct {
	base    url.URL // the container's URL, without its query
	query   string  // the SAS the container URL carries ("" for shared key)
	account string  // shared key: the account; "": no signature
	// macs are HMAC-SHA256s keyed with the account key, reused.
	macs sync.Pool
}

// azureLeanChoice decides the lean path of the bucket b opened with auth.
func azureLeanChoice(b *blob.Bucket, auth azureAuth, prefix string, q url.Values, hc httpDoer) leanChoice {
	if q.Has("key") {
		return sdkPath("a single-key bucket (key=)")
	}
	if auth.kind == "" {
		auth.kind = "source the store did not make"
	}
	if auth.kind != "shared key" && auth.kind != "SAS" {
		return sdkPath("azure credentials from a " + auth.kind + ", which it does not sign with")
	}
	var cc *container.Client
	if !b.As(&cc) || cc == nil {
		return sdkPath("no container client")
	}
	u, err := url.Parse(cc.URL())
	if err != nil || u.Host == "" {
		return sdkPath("a container URL the lean path cannot parse")
	}
	l := &azureLean{query: u.RawQuery}
	u.RawQuery, u.Fragment = "", ""
	l.base = *u
	label := "azure: SAS"
	if auth.kind == "shared key" {
		if l.query != "" {
			return sdkPath("a shared key and a query in the container URL")
		}
		key := auth.key
		l.account = auth.account
		l.macs.New = func() any { return newHMAC(key) }
		label = "azure: Shared Key"
	}
	return leanChoice{path: &leanPath{be: l, client: hc, prefix: prefix, label: label}}
}

func (l *azureLean) request(ctx context.Context, name string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "", nil)
	if err != nil {
		return nil, err
	}
	u := l.base
	u.Path = l.base.Path + "/" + name
	u.RawPath = l.base.EscapedPath() + "/" + url.PathEscape(name) // as azblob's NewBlobClient
	u.RawQuery = l.query
	req.URL, req.Host = &u, u.Host
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header["X-Ms-Date"] = []string{date}
	req.Header["X-Ms-Version"] = []string{azureVersion}
	if l.account != "" {
		req.Header["Authorization"] = []string{"SharedKey " + l.account + ":" + l.sign(date, u.EscapedPath())}
	}
	return req, nil
}

// sign is the Shared Key signature of a GET of path with no other headers
// than x-ms-date and x-ms-version and no query: the Blob service's string
// to sign (its twelve standard headers empty, then the canonical x-ms-
// headers, then the canonical resource /ACCOUNT/PATH), HMAC-SHA256 with
// the account key, base64.
func (l *azureLean) sign(date, path string) string {
	mac := l.macs.Get().(hash.Hash)
	defer l.macs.Put(mac)
	mac.Reset()
	var buf [512]byte
	b := append(buf[:0], "GET\n\n\n\n\n\n\n\n\n\n\n\n"...)
	b = append(b, "x-ms-date:"...)
	b = append(b, date...)
	b = append(b, "\nx-ms-version:"...)
	b = append(b, azureVersion...)
	b = append(b, "\n/"...)
	b = append(b, l.account...)
	b = append(b, path...)
	mac.Write(b)
	var sum [sha256.Size]byte
	return base64.StdEncoding.EncodeToString(mac.Sum(sum[:0]))
}

// newHMAC is an HMAC-SHA256 keyed with key.
func newHMAC(key []byte) hash.Hash { return hmac.New(sha256.New, key) }

// verify: Azure's Get Blob names the content's MD5 only as it was stored
// (Content-MD5 of the blob, not of the range), which the SDK does not
// check either.
func (*azureLean) verify(*http.Response, []byte) error { return nil }
