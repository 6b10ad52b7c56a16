package main

import (
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// perObjectKeys walks the store directory for entry keys (<kind>/<hh>/<rest>/<value>).
func perObjectKeys(t *testing.T, dir string) []string {
	t.Helper()
	var keys []string
	kinds := map[string]bool{"sig": true, "seal": true, "receipt": true, "approval": true, "cert": true, "accepted": true}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if parts := strings.Split(rel, "/"); len(parts) == 4 && kinds[parts[0]] {
			keys = append(keys, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

func readListFile(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	text, err := dec.DecodeAll(data, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	if lines[0] != "oxy-entries 1" {
		t.Fatalf("%s: header %q", path, lines[0])
	}
	return lines[1:]
}

// TestFoldOfHandWrittenStoreWithLegacyLists: oxyfs fold on a store written
// by hand per the spec — older one-list keys (one signature conflicting with
// a per-object key), an older writer's key no journal names, journal lines,
// an older complete list and a partial list — leaves exactly one live
// complete list equal to all per-object keys, retires the old lists, marks
// every line it read, writes the marker; a second fold writes nothing.
func TestFoldOfHandWrittenStoreWithLegacyLists(t *testing.T) {
	h := newHandStore(t)
	b64 := base64.StdEncoding.EncodeToString
	writeFile(t, h.dir, "sigs/ab/cdef01", []byte("alice "+b64([]byte("legacy bytes of alice"))+"\nzed "+b64([]byte("legacy zed"))+"\n"))
	writeFile(t, h.dir, "seals/12/3456", []byte("change-2\n"))
	store := "file://" + h.dir

	out, errOut, code := runCLI(t, "fold", "--layout", "bucket", store)
	if code != 0 {
		t.Fatalf("fold: exit %d: %s\n%s", code, errOut, out)
	}
	if got, _ := os.ReadFile(filepath.Join(h.dir, "sig/ab/cdef01/alice")); string(got) != "signature of sig/ab/cdef01/alice" {
		t.Errorf("the per-object signature of alice became %q; a legacy line must not replace it", got)
	}
	if got, _ := os.ReadFile(filepath.Join(h.dir, "sig/ab/cdef01/zed")); string(got) != "legacy zed" {
		t.Errorf("legacy signature of zed copied as %q", got)
	}

	out, _, code = runCLI(t, "status", "--json", "--layout", "bucket", store)
	if code != 0 {
		t.Fatal("status failed")
	}
	var s storeStatus
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	// Every line the fold read is marked; the lines folded long before
	// (their hour has passed on the wall clock) were dropped by the update.
	if s.LiveComplete != 1 || s.LivePartial != 0 || s.RetiredLists != 3 || !s.LegacyMarker || s.JournalUnfolded != 0 || s.JournalFolded != h.unfolded || s.JournalLines != h.unfolded {
		t.Fatalf("after fold: %+v", s)
	}
	var live string
	for _, l := range s.Lists {
		if !l.Retired {
			live = l.Name
		}
	}
	want := perObjectKeys(t, h.dir)
	if got := readListFile(t, filepath.Join(h.dir, live)); !slices.Equal(got, want) {
		t.Errorf("live complete list =\n%s\nper-object keys =\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	_, errOut, code = runCLI(t, "fold", "--stats", "--layout", "bucket", store)
	if code != 0 {
		t.Fatalf("second fold: exit %d", code)
	}
	if m := regexp.MustCompile(`put=(\d+) delete=(\d+)`).FindStringSubmatch(errOut); m == nil || m[1] != "0" || m[2] != "0" {
		t.Errorf("a second fold wrote: %q", errOut)
	}
	out, _, code = runCLI(t, "check", "--layout", "bucket", store)
	if code != 0 {
		t.Errorf("check after fold: exit %d\n%s", code, out)
	}
}

func TestCheckReportsProblemsAndExits1(t *testing.T) {
	h := newHandStore(t)
	// A key the live complete list names is gone.
	if err := os.Remove(filepath.Join(h.dir, "sig/ab/cdef01/bob")); err != nil {
		t.Fatal(err)
	}
	out, _, code := runCLI(t, "check", "--layout", "bucket", "file://"+h.dir)
	if code != 1 || !strings.Contains(out, "sig/ab/cdef01/bob") {
		t.Fatalf("check: exit %d, report:\n%s", code, out)
	}
}
