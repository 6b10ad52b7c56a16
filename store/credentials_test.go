package store

import (
	"context"
	"errors"
	"github.com/oxyfs/oxyfs/store/format"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// noCredentialsEnv clears every variable a backend's SDK reads credentials
// from, points HOME (and gcloud's config) at an empty directory, and makes
// this machine not look like EC2.
func noCredentialsEnv(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLOUDSDK_CONFIG", filepath.Join(home, "gcloud"))
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range []string{"AWS_", "AZURE_", "GOOGLE_", "GCE_", "STORAGE_EMULATOR_", "IDENTITY_", "MSI_"} {
			if strings.HasPrefix(name, p) {
				t.Setenv(name, "") // restored at cleanup
				os.Unsetenv(name)
			}
		}
	}
	was := onEC2
	onEC2 = func() bool { return false }
	t.Cleanup(func() { onEC2 = was })
}

// openQuietly opens u and returns the store, what was written to stdout
// and stderr meanwhile, and the error.
func openQuietly(t *testing.T, u string) (*Store, string, error) {
	t.Helper()
	var st *Store
	var err error
	out := captureOutput(t, func() { st, err = Open(context.Background(), u, Options{Layout: LayoutBucket}) })
	if st != nil {
		t.Cleanup(func() { st.Close() })
	}
	return st, out, err
}

// TestNoCredentialsIsOneLineSayingWhatToSet: with no credentials anywhere,
// opening an s3://, gs:// or azblob:// store fails before any request with
// one line naming the variables to set, wrapping ErrNoCredentials, and
// nothing is written to stdout or stderr (no SDK warning, no IMDS attempts).
func TestNoCredentialsIsOneLineSayingWhatToSet(t *testing.T) {
	noCredentialsEnv(t)
	for _, c := range []struct{ url, want string }{
		{"s3://bucket?endpoint=http://127.0.0.1:1&region=us-east-1",
			`open store "s3://bucket?endpoint=http://127.0.0.1:1&region=us-east-1": no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (see README "Stores")`},
		{"s3://bucket?region=us-east-1",
			`open store "s3://bucket?region=us-east-1": no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (see README "Stores")`},
		{"gs://bucket",
			`open store "gs://bucket": no Google Cloud credentials: set GOOGLE_APPLICATION_CREDENTIALS to a key file, or run gcloud auth application-default login (see README "Stores")`},
		{"azblob://container",
			`open store "azblob://container": no Azure credentials: set AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, or AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_CONNECTION_STRING (see README "Stores")`},
		// An account with no key: azidentity's default chain finds nothing.
		{"azblob://container?storage_account=acct&protocol=http&domain=127.0.0.1:1",
			`open store "azblob://container?storage_account=acct&protocol=http&domain=127.0.0.1:1": no Azure credentials: set AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, or AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_CONNECTION_STRING (see README "Stores")`},
	} {
		_, out, err := openQuietly(t, c.url)
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrNoCredentials) {
			t.Errorf("open %s:\n got %v\nwant %s", c.url, err, c.want)
		}
		if out != "" {
			t.Errorf("open %s wrote %q", c.url, out)
		}
	}
}

// TestNoCredentialsNeverShowsASecret: a secret key without its key id is
// not credentials; the message names the variables, not the value, and
// the store URL's own secrets are redacted as always.
func TestNoCredentialsNeverShowsASecret(t *testing.T) {
	noCredentialsEnv(t)
	const secret = "PLANTEDSECRETVALUE"
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	_, out, err := openQuietly(t, "s3://bucket?endpoint=http://user:"+secret+"@127.0.0.1:1&region=us-east-1")
	if !errors.Is(err, ErrNoCredentials) || strings.Contains(err.Error(), secret) || strings.Contains(out, secret) || strings.Contains(err.Error(), "\n") {
		t.Errorf("open: %v (output %q)", err, out)
	}
}

// fakeIMDS is an EC2 instance metadata service handing out one role's
// credentials (IMDSv2: a token first).
func fakeIMDS(t *testing.T, keyID string) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path)
		mu.Unlock()
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			w.Write([]byte("token"))
		case keyID == "":
			http.NotFound(w, r)
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/":
			w.Write([]byte("role"))
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/role":
			w.Write([]byte(`{"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"` + keyID + `","SecretAccessKey":"imds-secret","Token":"imds-token","Expiration":"2099-01-01T00:00:00Z","LastUpdated":"2026-01-01T00:00:00Z"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), asked...) }
}

// TestIMDSIsAskedWhereItCanAnswer: an instance metadata service configured
// (AWS_EC2_METADATA_SERVICE_ENDPOINT, as on EC2) is asked, its role's
// credentials sign the store's requests, and nothing is printed; one that
// has no role fails the open with the one line and the SDK's reason.
func TestIMDSIsAskedWhereItCanAnswer(t *testing.T) {
	noCredentialsEnv(t)
	var mu sync.Mutex
	var auth string
	s3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`<Error><Code>NoSuchKey</Code><Message>no</Message></Error>`))
	}))
	t.Cleanup(s3.Close)
	u := "s3://bucket?endpoint=" + s3.URL + "&region=us-east-1&use_path_style=true"

	imds, asked := fakeIMDS(t, "AKIDFROMIMDS")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
	st, out, err := openQuietly(t, u)
	if err != nil || out != "" {
		t.Fatalf("open with IMDS: %v (output %q)", err, out)
	}
	if len(asked()) == 0 {
		t.Error("IMDS was not asked")
	}
	if _, err := st.Get(context.Background(), format.JournalKey); !errors.Is(err, ErrNotFound) {
		t.Errorf("get: %v, want ErrNotFound", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(auth, "Credential=AKIDFROMIMDS/") {
		t.Errorf("the request was signed %q, want with IMDS's key id", auth)
	}

	noRole, _ := fakeIMDS(t, "")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", noRole.URL)
	_, out, err = openQuietly(t, u)
	want := `open store "` + u + `": no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (see README "Stores"): `
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") || out != "" {
		t.Errorf("open with IMDS and no role: %v (output %q), want one line starting %q", err, out, want)
	}
}

// TestCredentialsThatExistOpenQuietly: credentials where each SDK looks
// (keys in the environment, a key file, an account key) or none needed
// (anonymous, an emulator) open the store without a word.
func TestCredentialsThatExistOpenQuietly(t *testing.T) {
	noCredentialsEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	key := filepath.Join(t.TempDir(), "key.json")
	// A service account key is parsed when a token is made, not here.
	if err := os.WriteFile(key, []byte(`{"type":"service_account","client_email":"sa@p.iam.gserviceaccount.com","private_key":"-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n","token_uri":"http://127.0.0.1:1/token"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", key)
	t.Setenv("AZURE_STORAGE_ACCOUNT", "devstoreaccount1")
	t.Setenv("AZURE_STORAGE_KEY", "a2V5")
	for _, u := range []string{
		"s3://bucket?endpoint=http://127.0.0.1:1&region=us-east-1",
		"s3://bucket?endpoint=http://127.0.0.1:1&region=us-east-1&anonymous=true",
		"gs://bucket",
		"gs://bucket?anonymous=true",
		"azblob://container?protocol=http&domain=127.0.0.1:1&localemu=true",
	} {
		if _, out, err := openQuietly(t, u); err != nil || out != "" {
			t.Errorf("open %s: %v (output %q)", u, err, out)
		}
	}
	os.Unsetenv("GOOGLE_APPLICATION_CREDENTIALS")
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1")
	if _, out, err := openQuietly(t, "gs://bucket"); err != nil || out != "" {
		t.Errorf("open gs:// with an emulator: %v (output %q)", err, out)
	}
}
