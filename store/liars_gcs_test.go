package store_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// TestGCSBearerTokenNeverFollowsARedirect: a gs:// store with credentials
// (a service account whose token endpoint is local) through the proxy: its
// bearer token reaches the proxy, and never the listener a 307 names
// (issue 25.7: the client of gcp.NewHTTPClient adds it to every request).
// Not parallel: it unsets STORAGE_EMULATOR_HOST for its own open.
func TestGCSBearerTokenNeverFollowsARedirect(t *testing.T) {
	srv := testservers.Start(t, "gcs")
	bucketURL := srv.NewBucket(t)
	p := lyingproxy.Start(t, srv.Kind, srv.URL)
	const token = "ya29.oxyfs-test-bearer"
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(tokens.Close)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	sa, _ := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "oxyfs-test",
		"private_key_id": "k1",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   "oxyfs@oxyfs-test.iam.gserviceaccount.com",
		"token_uri":      tokens.URL + "/token",
	})
	file := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(file, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
	t.Setenv("STORAGE_EMULATOR_HOST", "")

	ctx := context.Background()
	st, err := store.Open(ctx, p.StoreURL(bucketURL), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Put(ctx, "a/1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, to := range []struct {
		name string
		t    lyingproxy.Target
		rec  *lyingproxy.Recorder
	}{{"another host", lyingproxy.OtherHost, p.OtherHost()}, {"another port", lyingproxy.OtherPort, p.OtherPort()}} {
		p.Set(lyingproxy.Redirect(to.t))
		_, gerr := st.Get(ctx, "a/1")
		_, lerr := st.Exists(ctx, "a/1")
		for _, err := range []error{gerr, lerr} {
			if err == nil || !strings.Contains(err.Error(), "redirect refused") {
				t.Errorf("%s: err %v, want a refused redirect", to.name, err)
			}
		}
		if auth := to.rec.Authorizations(); slices.ContainsFunc(auth, func(a string) bool { return strings.Contains(a, token) }) || to.rec.Requests() != 0 {
			t.Errorf("%s: %d requests followed the redirect, Authorization %q", to.name, to.rec.Requests(), auth)
		}
	}
	// Honest again, the store reads through the proxy as before.
	p.Set()
	if _, err := st.Get(ctx, "a/1"); err != nil {
		t.Fatalf("honest again: %v", err)
	}
}
