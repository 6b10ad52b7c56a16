package index

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store"
)

// TestStatusRedactsRefreshError (issue 41, 3): a failed refresh's error
// that quotes a secret (here a file:// store whose directory is named
// like user information, "minioadmin:SuperSecretPass@127.0.0.1:9", quoted
// raw by the system's error) shows in Status, the JSON of .oxy/status and
// serve's ?format=json, redacted as every other output is.
func TestStatusRedactsRefreshError(t *testing.T) {
	ctx := context.Background()
	const secret = "SuperSecretPass"
	root := filepath.Join(t.TempDir(), "minioadmin:"+secret+"@127.0.0.1:9")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, "file://"+root, store.Options{Layout: store.LayoutBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ix := openWith(t, st, Options{})
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	err = ix.Refresh(ctx)
	if err == nil {
		t.Fatal("refresh of a removed store succeeded")
	}
	if !strings.Contains(err.Error(), secret) {
		t.Fatalf("the refresh's error %q does not quote the store's path: the test shows nothing", err)
	}
	js, jerr := json.Marshal(ix.Status())
	if jerr != nil {
		t.Fatal(jerr)
	}
	if s := ix.Status(); s.LastRefreshError == "" || strings.Contains(string(js), secret) {
		t.Fatalf("status after a failed refresh shows the secret: %s", js)
	}
}
