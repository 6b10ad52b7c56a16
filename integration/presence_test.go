package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// TestNoStoreIsRefusedOnS3: on a real S3 server (versitygw), an empty
// bucket, a bucket of photos and a prefix= typo are refused by ls, mount
// and check (exit 1, the message naming --create), with one LIST of the
// root; --create takes the empty bucket; a store and its prefix are taken.
func TestNoStoreIsRefusedOnS3(t *testing.T) {
	t.Parallel()
	testwatch.Arm(t) // its mounts are refused; one that served would hang the test
	srv, empty := s3Store(t)
	_, photos := s3Store(t)
	if err := openStore(t, photos).Put(context.Background(), "IMG_0001.jpg", []byte("jpeg")); err != nil {
		t.Fatal(err)
	}
	_, url := s3Store(t)
	genFolded(t, srv, url, 20, 2)
	typo := url + "&prefix=typo/"
	for name, loc := range map[string]string{"empty bucket": empty, "photos": photos, "prefix typo": typo} {
		r := oxyfs(t, srv, "ls", "--stats", loc)
		if r.code != 1 || !strings.Contains(r.stderr, "oxy store") && !strings.Contains(r.stderr, "holds nothing") || !strings.Contains(r.stderr, "--create") {
			t.Errorf("%s: ls: exit %d, want 1 with a message naming --create\n%s", name, r.code, r)
		}
		// The open (a LIST of pack-, two GETs) and the one LIST of the root.
		if r.requests.List != 2 {
			t.Errorf("%s: ls sent %d LISTs, want the open's and the check's: %s", name, r.requests.List, r)
		}
		if r := oxyfs(t, srv, "check", loc); r.code != 1 {
			t.Errorf("%s: check: exit %d, want 1\n%s", name, r.code, r)
		}
		if r := oxyfs(t, srv, "mount", loc, t.TempDir()); r.code != 1 || !strings.Contains(r.stderr, "--create") {
			t.Errorf("%s: mount: exit %d, want 1 naming --create\n%s", name, r.code, r)
		}
	}
	if r := oxyfs(t, srv, "ls", "--create", empty); r.code != 0 {
		t.Errorf("ls --create of an empty bucket: exit %d\n%s", r.code, r)
	}
	// A folded store: the open knows it is one, and sends no LIST more.
	r := mustOxyfs(t, srv, "ls", "--stats", url)
	if r.requests.List != 1 {
		t.Errorf("ls of a folded store sent %d LISTs, want the open's 1: %s", r.requests.List, r)
	}
}
