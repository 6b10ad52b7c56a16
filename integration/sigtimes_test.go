package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// timesBackend is a store of one kind for the signature-time tests: its
// server (nil for file://), a fresh store's URL, the flags every command
// takes for it, and how a key's time is set (file:// only: a server sets
// its own; nil there).
type timesBackend struct {
	srv     *testservers.Server
	url     string
	flags   []string
	setTime func(t *testing.T, key string, at time.Time)
}

func newTimesBackend(t *testing.T, kind string) timesBackend {
	t.Helper()
	testservers.RequireFUSE(t)
	if kind == "file" {
		dir := t.TempDir()
		return timesBackend{url: "file://" + dir, flags: []string{"--layout", "bucket"}, setTime: func(t *testing.T, key string, at time.Time) {
			t.Helper()
			if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(key)), at, at); err != nil {
				t.Fatal(err)
			}
		}}
	}
	srv := testservers.Start(t, kind)
	return timesBackend{srv: srv, url: srv.NewBucket(t)}
}

// writer is another process's handle (the test's) on b's store.
func (b timesBackend) writer(t *testing.T) (*store.Store, *index.Index) {
	t.Helper()
	st, err := store.Open(context.Background(), b.url, store.Options{Layout: store.LayoutBucket})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	ix, err := index.Open(context.Background(), st, index.Options{Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return st, ix
}

// args is a command's arguments with b's flags after the command name.
func (b timesBackend) args(cmd string, rest ...string) []string {
	return append(append([]string{cmd}, b.flags...), rest...)
}

// keyTime is the key's Last-Modified as the server reports it to a HEAD
// (blob attributes) from the test process: what each answer of the mount,
// serve and ls must show.
func keyTime(t *testing.T, st *store.Store, key string) time.Time {
	t.Helper()
	a, err := st.Bucket().Attributes(context.Background(), key)
	if err != nil {
		t.Fatalf("attributes of %s: %v", key, err)
	}
	if a.ModTime.IsZero() {
		t.Fatalf("the server reports no time for %s", key)
	}
	return a.ModTime
}

// sameTime reports whether got is the server's time want: exactly, or to
// the second where a GET's Last-Modified header (to the second) and the
// attributes' time (finer) differ in precision.
func sameTime(got, want time.Time) bool {
	return got.Equal(want) || got.Equal(want.Truncate(time.Second))
}

// statTimes returns a file's mtime, ctime and atime.
func statTimes(t *testing.T, p string) (size int64, mtime, ctime, atime time.Time) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	ts := func(s syscall.Timespec) time.Time { return time.Unix(s.Sec, s.Nsec) }
	return st.Size, ts(st.Mtim), ts(st.Ctim), ts(st.Atim)
}

// TestSignatureTimes (issue 39 item 1): on each backend through the real
// server, two signatures put at different times show their keys' own
// Last-Modified as mtime, ctime and atime through a FUSE mount (at the GET
// a cold stat sends anyway for the size: no more requests than before),
// ls -t and find -newer order them truly, `oxyfs ls --json` and serve's
// page, GET (Last-Modified) and WebDAV (getlastmodified) show the same
// time, and a re-sign by another writer shows its new time after a refresh.
func TestSignatureTimes(t *testing.T) {
	for _, kind := range []string{"file", "s3", "gcs", "azure"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testSignatureTimes(t, kind)
		})
	}
}

func testSignatureTimes(t *testing.T, kind string) {
	b := newTimesBackend(t, kind)
	st, w := b.writer(t)
	ctx := context.Background()
	ea := format.Entry{Kind: format.KindSig, Object: newObject(t), Value: "alice"}
	eb := format.Entry{Kind: format.KindSig, Object: newObject(t), Value: "bob"}
	put := func(e format.Entry, n int, ago time.Duration) {
		t.Helper()
		if err := w.Put(ctx, e, randomBytes(t, n)); err != nil {
			t.Fatal(err)
		}
		if b.setTime != nil {
			b.setTime(t, e.Key(), time.Now().Add(-ago).Truncate(time.Second))
		} else {
			time.Sleep(1100 * time.Millisecond) // the next put's Last-Modified is a later second
		}
	}
	put(ea, 100, 3*time.Hour)
	put(eb, 200, time.Hour)
	mustOxyfs(t, b.srv, b.args("fold", b.url)...)
	ta, tb := keyTime(t, st, ea.Key()), keyTime(t, st, eb.Key())
	if !tb.After(ta) {
		t.Fatalf("the server gives bob's key %v, not after alice's %v", tb, ta)
	}

	mnt := t.TempDir()
	m := startMount(t, b.srv, b.url, mnt, append(b.flags, "--read-ahead=-1")...)
	pa, pb := filepath.Join(mnt, ea.Key()), filepath.Join(mnt, eb.Key())
	r0 := settledRequests(t, mnt)
	check := func(p string, want time.Time, wantSize int64) {
		t.Helper()
		size, mt, ct, at := statTimes(t, p)
		if size != wantSize {
			t.Errorf("stat %s: size %d, want %d", p, size, wantSize)
		}
		if !sameTime(mt, want) || !ct.Equal(mt) || !at.Equal(mt) {
			t.Errorf("stat %s: mtime %v ctime %v atime %v, want all the key's Last-Modified %v", p, mt, ct, at, want)
		}
	}
	check(pa, ta, 100)
	check(pb, tb, 200)
	if d := readStatus(t, mnt).Requests.Sub(r0); d != (store.Counts{Get: 2}) {
		t.Errorf("a cold stat of two signatures sent %s, want get=2 (one GET each, for the size; the time comes with it)", d)
	}
	r1 := readStatus(t, mnt).Requests
	check(pa, ta, 100)
	if out := strings.Fields(run(t, "ls", "-t", pa, pb)); len(out) != 2 || out[0] != pb {
		t.Errorf("ls -t %s %s: %q, want bob's (newer) first", pa, pb, out)
	}
	if out := lines(run(t, "find", filepath.Join(mnt, "sig"), "-type", "f", "-newer", pa)); len(out) != 1 || out[0] != pb {
		t.Errorf("find -newer alice's: %q, want bob's alone", out)
	}
	if b.setTime != nil { // times hours apart: find -mmin tells them
		if out := lines(run(t, "find", filepath.Join(mnt, "sig"), "-type", "f", "-mmin", "-120")); len(out) != 1 || out[0] != pb {
			t.Errorf("find -mmin -120: %q, want bob's alone (alice's is 3 h old)", out)
		}
	}
	if d := readStatus(t, mnt).Requests.Sub(r1); d.Total() != 0 {
		t.Errorf("stat again, ls -t and find sent %s, want nothing", d)
	}

	// Another writer re-signs alice: after a refresh, the new bytes and
	// the new time, for one GET.
	put(ea, 300, 30*time.Minute)
	ta2 := keyTime(t, st, ea.Key())
	if !ta2.After(ta) {
		t.Fatalf("the re-signed key's time %v is not after %v", ta2, ta)
	}
	m.refresh()
	r2 := settledRequests(t, mnt)
	check(pa, ta2, 300)
	if d := readStatus(t, mnt).Requests.Sub(r2); d != (store.Counts{Get: 1}) {
		t.Errorf("stat of the re-signed signature sent %s, want get=1", d)
	}

	// oxyfs ls --json and -l: the same times.
	r := mustOxyfs(t, b.srv, b.args("ls", "--json", b.url, "sig/"+ea.Object[:2]+"/"+ea.Object[2:])...)
	var rows []struct {
		Path  string    `json:"path"`
		MTime time.Time `json:"mtime"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("oxyfs ls --json: %v\n%s", err, r)
	}
	if !sameTime(rows[0].MTime, ta2) {
		t.Errorf("oxyfs ls --json: mtime %v, want %v", rows[0].MTime, ta2)
	}
	r = mustOxyfs(t, b.srv, b.args("ls", "-l", b.url, "sig/"+eb.Object[:2]+"/"+eb.Object[2:])...)
	if want := tb.UTC().Format("2006-01-02T15:04:05Z"); !strings.Contains(r.stdout, want) {
		t.Errorf("oxyfs ls -l does not show bob's time %s:\n%s", want, r)
	}

	// serve: the signature's GET, its page and WebDAV.
	s := startServe(t, b.srv, b.url, b.flags...)
	base := "http://" + s.addr + "/"
	resp := httpDo(t, http.MethodGet, base+ea.Key(), "", nil)
	if lm, err := http.ParseTime(resp.Header.Get("Last-Modified")); err != nil || !sameTime(lm, ta2) {
		t.Errorf("serve GET %s: Last-Modified %q (%v), want %v", ea.Key(), resp.Header.Get("Last-Modified"), err, ta2.UTC().Format(http.TimeFormat))
	}
	page := httpDo(t, http.MethodGet, base+eb.Key()+"?view=page", "", nil)
	if want := tb.UTC().Format(time.RFC3339); !strings.Contains(page.body, `datetime="`+want+`"`) {
		t.Errorf("serve's page of bob's signature does not show %s:\n%s", want, page.body)
	}
	dav := httpDo(t, "PROPFIND", base+"dav/"+eb.Key(), "0", nil)
	if want := tb.UTC().Format(http.TimeFormat); !strings.Contains(dav.body, "<D:getlastmodified>"+want+"</D:getlastmodified>") {
		t.Errorf("WebDAV PROPFIND of bob's signature: no getlastmodified %s:\n%s", want, dav.body)
	}
}

// answer is an HTTP answer read whole.
type answer struct {
	code   int
	Header http.Header
	body   string
}

// httpDo sends one request (depth: the Depth header, if any) and reads the
// answer.
func httpDo(t *testing.T, method, u, depth string, body io.Reader) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if depth != "" {
		req.Header.Set("Depth", depth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	return answer{code: resp.StatusCode, Header: resp.Header, body: string(data)}
}

// TestListedButMissing (issue 42 item 1): a live list and a journal line
// name signatures whose keys are gone. Through the mount, stat and cat of
// each are ENOENT (not ESTALE), the mount logs one warning per key naming
// it, and .oxy/status counts them; `oxyfs ls -l` prints every other row,
// says which it could not read, and exits 1; serve answers 404 saying so
// while its listing of the directory still works.
func TestListedButMissing(t *testing.T) {
	for _, kind := range []string{"file", "s3"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testListedButMissing(t, kind)
		})
	}
}

func testListedButMissing(t *testing.T, kind string) {
	b := newTimesBackend(t, kind)
	st, w := b.writer(t)
	ctx := context.Background()
	obj := newObject(t)
	sig := func(signer string) format.Entry {
		return format.Entry{Kind: format.KindSig, Object: obj, Value: signer}
	}
	listed, kept, journaled := sig("alice"), sig("bob"), sig("carol")
	for _, e := range []format.Entry{listed, kept} {
		if err := w.Put(ctx, e, randomBytes(t, 64)); err != nil {
			t.Fatal(err)
		}
	}
	mustOxyfs(t, b.srv, b.args("fold", b.url)...)
	if err := w.Put(ctx, journaled, randomBytes(t, 64)); err != nil { // a journal line only
		t.Fatal(err)
	}
	for _, e := range []format.Entry{listed, journaled} {
		if err := st.Delete(ctx, e.Key()); err != nil {
			t.Fatal(err)
		}
	}
	missing := []format.Entry{listed, journaled}

	mnt := t.TempDir()
	m := startMount(t, b.srv, b.url, mnt, append(b.flags, "--read-ahead=-1")...)
	dir := filepath.Join(mnt, "sig", obj[:2], obj[2:])
	names := lines(run(t, "ls", dir))
	if len(names) != 3 {
		t.Fatalf("ls %s: %q, want the three signers listed", dir, names)
	}
	for _, e := range missing {
		p := filepath.Join(mnt, e.Key())
		for range 2 {
			if _, err := os.Stat(p); errnoOf(err) != syscall.ENOENT {
				t.Errorf("stat of %s (listed, key gone): %v, want ENOENT", e.Key(), err)
			}
			if _, err := os.ReadFile(p); errnoOf(err) != syscall.ENOENT {
				t.Errorf("cat of %s (listed, key gone): %v, want ENOENT", e.Key(), err)
			}
		}
	}
	if _, err := os.ReadFile(filepath.Join(mnt, kept.Key())); err != nil {
		t.Errorf("read of the signature whose key exists: %v", err)
	}
	for _, e := range missing {
		if n, _ := m.stderr.count(fmt.Sprintf("%q is listed but missing from the store", e.Key())); n != 1 {
			t.Errorf("the mount logged %d warnings of %s, want 1 (once per key, naming it)\n%s", n, e.Key(), m.stderr)
		}
	}
	if n, _ := m.stderr.count("It heals when"); n != len(missing) {
		t.Errorf("%d warnings say how it heals, want %d\n%s", n, len(missing), m.stderr)
	}
	s := readStatus(t, mnt)
	if s.ListedMissing != int64(len(missing)) || len(s.Warnings) == 0 {
		t.Errorf(".oxy/status: listed_missing %d, warnings %q; want %d and the warnings", s.ListedMissing, s.Warnings, len(missing))
	}

	// oxyfs ls -l: every other row, an error per missing one, exit 1.
	r := oxyfs(t, b.srv, b.args("ls", "-l", b.url, "sig/"+obj[:2]+"/"+obj[2:])...)
	if r.code != 1 || !strings.Contains(r.stdout, "bob") || strings.Contains(r.stdout, "alice") || strings.Contains(r.stdout, "carol") {
		t.Errorf("oxyfs ls -l: want bob's row alone, exit 1\n%s", r)
	}
	for _, e := range missing {
		if !strings.Contains(r.stderr, e.Value) || !strings.Contains(r.stderr, "listed but missing from the store") {
			t.Errorf("oxyfs ls -l: no error naming %s as listed but missing\n%s", e.Value, r)
		}
	}

	// serve: 404 saying so; the directory's page still lists all three.
	sv := startServe(t, b.srv, b.url, b.flags...)
	base := "http://" + sv.addr + "/"
	for _, e := range missing {
		a := httpDo(t, http.MethodGet, base+e.Key(), "", nil)
		if a.code != http.StatusNotFound || !strings.Contains(a.body, "listed but missing from the store") {
			t.Errorf("serve GET %s: %d %q, want 404 saying it is listed but missing", e.Key(), a.code, a.body)
		}
	}
	page := httpDo(t, http.MethodGet, base+"sig/"+obj[:2]+"/"+obj[2:]+"/?format=json", "", nil)
	if page.code != http.StatusOK || !strings.Contains(page.body, `"alice"`) || !strings.Contains(page.body, `"bob"`) {
		t.Errorf("serve's listing of the object: %d\n%s", page.code, page.body)
	}
	var sj index.Status
	stj := httpDo(t, http.MethodGet, base+".oxy/status", "", nil)
	if err := json.Unmarshal([]byte(stj.body), &sj); err != nil {
		t.Fatal(err)
	}
	if sj.ListedMissing != int64(len(missing)) {
		t.Errorf("serve's status: listed_missing %d, want %d", sj.ListedMissing, len(missing))
	}
}
