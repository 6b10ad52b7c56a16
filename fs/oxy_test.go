package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// fakeClock is the clock of oxyHold in these tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// oxyFixture is the fixture store with a retired record, so every .oxy file
// has bytes, mounted with a fake clock.
func oxyFixture(t *testing.T) (*fixture, *index.Index, *Server, *fakeClock) {
	t.Helper()
	f := buildFixture(t)
	retired := format.Retired([]format.RetiredLine{{RetiredAt: 1700000000000, Key: format.EntryListName(strings.Repeat("0", 64), true)}})
	if err := f.st.Put(context.Background(), format.RetiredKey, retired); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Unix(1700000000, 0)}
	ix := openIndex(t, f.st)
	srv, _ := testMount(t, ix, Options{now: clock.now})
	return f, ix, srv, clock
}

// storeText is what a .oxy file shows of a store key: the record, or the
// list's text.
func storeText(t *testing.T, st *store.Store, key string) []byte {
	t.Helper()
	data, err := st.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := format.ParseEntryListName(key); !ok {
		return data
	}
	lt, err := format.NewEntryListText(data)
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Close()
	text, err := io.ReadAll(io.NewSectionReader(lt, 0, 1<<40))
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// TestOxyFilesReportTheSizeTheyRead: stat of every .oxy file gives the
// exact length of what a read returns, for os.ReadFile, a read of an open
// file after its fstat (io.ReadAll) and cp; journal, retired and the list
// are the store's bytes. Stating them sends nothing; reading journal and
// retired nothing either (the view holds them), a list one GET.
func TestOxyFilesReportTheSizeTheyRead(t *testing.T) {
	f, _, srv, _ := oxyFixture(t)
	want := map[string][]byte{
		".oxy/journal":         storeText(t, f.st, format.JournalKey),
		".oxy/retired":         storeText(t, f.st, format.RetiredKey),
		".oxy/lists/" + f.list: storeText(t, f.st, f.list),
		".oxy/status":          nil, // changes with every request
	}
	for p, w := range want {
		full := filepath.Join(srv.Dir(), p)
		var fi os.FileInfo
		if d := storefixture.Delta(f.st, func() {
			var err error
			if fi, err = os.Stat(full); err != nil {
				t.Fatal(err)
			}
		}); d.Total() != 0 {
			t.Errorf("stat %s sent %v, want nothing", p, d)
		}
		var data []byte
		d := storefixture.Delta(f.st, func() {
			var err error
			if data, err = os.ReadFile(full); err != nil {
				t.Fatal(err)
			}
		})
		if fi.Size() != int64(len(data)) || len(data) == 0 {
			t.Errorf("%s: stat says %d bytes, a read returns %d", p, fi.Size(), len(data))
		}
		if wantGets := int64(strings.Count(p, "/lists/")); d.Get != wantGets || d.Total() != wantGets {
			t.Errorf("reading %s sent %v, want %d GET", p, d, wantGets)
		}
		if blocks := fi.Sys().(*syscall.Stat_t).Blocks; blocks != (fi.Size()+511)/512 {
			t.Errorf("%s: %d blocks for %d bytes (du)", p, blocks, fi.Size())
		}
		if w != nil && !bytes.Equal(data, w) {
			t.Errorf("%s reads %q, want the store's %q", p, data, w)
		}

		// An open file: fstat, then read it all.
		fh, err := os.Open(full)
		if err != nil {
			t.Fatal(err)
		}
		ofi, err := fh.Stat()
		if err != nil {
			t.Fatal(err)
		}
		all, err := io.ReadAll(fh)
		fh.Close()
		if err != nil || ofi.Size() != int64(len(all)) {
			t.Errorf("%s open: fstat says %d bytes, io.ReadAll read %d (%v)", p, ofi.Size(), len(all), err)
		}
		if w != nil && !bytes.Equal(all, w) {
			t.Errorf("%s open: read %q, want %q", p, all, w)
		}

		// cp: the copy holds every byte.
		dst := filepath.Join(t.TempDir(), "copy")
		if out, err := exec.Command("cp", full, dst).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v %s", p, err, out)
		}
		copied, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if w != nil && !bytes.Equal(copied, w) {
			t.Errorf("cp %s copied %q, want %q", p, copied, w)
		}
		if w == nil {
			var doc statusDoc
			if err := json.Unmarshal(copied, &doc); err != nil || doc.Mountpoint != srv.Dir() {
				t.Errorf("cp .oxy/status copied %d bytes that are not its JSON: %v\n%s", len(copied), err, copied)
			}
		}
	}
}

// TestOxyStatusReadIsWhatItsStatMeasured: .oxy/status changes with every
// request, so a stat keeps the text it measured for the open that follows
// (within oxyHold), and an open file's text is what every stat reports
// until it is closed; after that, and after oxyHold, the text is new.
func TestOxyStatusReadIsWhatItsStatMeasured(t *testing.T) {
	_, _, srv, clock := oxyFixture(t)
	p := filepath.Join(srv.Dir(), ".oxy/status")
	lookups := func(data []byte) int64 {
		t.Helper()
		var doc statusDoc
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("status is not JSON: %v\n%s", err, data)
		}
		return doc.FuseOps["lookup"]
	}
	busy := func() { // 20 lookups, counted in the status
		for i := range 20 {
			os.Lstat(filepath.Join(srv.Dir(), "sig", "zz"+strconv.Itoa(i)))
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	busy()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(len(data)) {
		t.Errorf("stat says %d bytes, the read after 20 lookups returns %d", fi.Size(), len(data))
	}
	measured := lookups(data)
	waitReleased(t, srv, ".oxy/status")

	// Closed, the next read is rendered afresh: the lookups are in it.
	busy()
	again, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := lookups(again); n < measured+20 {
		t.Errorf("a read after the close shows %d lookups, want at least %d", n, measured+20)
	}
	waitReleased(t, srv, ".oxy/status")

	// Open: every stat and every other open sees the open file's text.
	fh, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	held, err := io.ReadAll(fh)
	if err != nil {
		t.Fatal(err)
	}
	busy()
	if fi, err := os.Stat(p); err != nil || fi.Size() != int64(len(held)) {
		t.Errorf("stat while open: %v %v, want %d bytes", fi, err, len(held))
	}
	if other, err := os.ReadFile(p); err != nil || !bytes.Equal(other, held) {
		t.Errorf("another open while one is open read %d bytes (%v), want the %d it reads", len(other), err, len(held))
	}
	fh.Close()
	waitReleased(t, srv, ".oxy/status")

	// A stat's text is kept oxyHold, not longer.
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	busy()
	clock.advance(oxyHold)
	late, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := lookups(late); n < lookups(held)+40 {
		t.Errorf("a read %v after a stat shows %d lookups, want a new text (at least %d)", oxyHold, n, lookups(held)+40)
	}
}

// waitReleased waits (bounded) for the kernel's RELEASE of every open of a
// .oxy file: it comes after close(2) returns, asynchronously.
func waitReleased(t *testing.T, srv *Server, p string) {
	t.Helper()
	opens := func() int {
		srv.texts.mu.Lock()
		defer srv.texts.mu.Unlock()
		if x := srv.texts.m[p]; x != nil {
			return x.open
		}
		return 0
	}
	for deadline := time.Now().Add(10 * time.Second); opens() != 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := opens(); n != 0 {
		t.Fatalf("%s: %d opens not released 10 s after closing", p, n)
	}
}

// TestTarOfOxyIsComplete: tar reads the size from its stat, then that many
// bytes; every file arrives whole and tar has nothing to say.
func TestTarOfOxyIsComplete(t *testing.T) {
	f, _, srv, _ := oxyFixture(t)
	cmd := exec.Command("tar", "-C", srv.Dir(), "-cf", "-", ".oxy")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	archive, err := cmd.Output()
	if err != nil || stderr.Len() != 0 {
		t.Fatalf("tar: %v\n%s", err, stderr.String())
	}
	out := t.TempDir()
	x := exec.Command("tar", "-C", out, "-xf", "-")
	x.Stdin = bytes.NewReader(archive)
	if b, err := x.CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v %s", err, b)
	}
	for p, key := range map[string]string{".oxy/journal": format.JournalKey, ".oxy/retired": format.RetiredKey, ".oxy/lists/" + f.list: f.list} {
		if got, err := os.ReadFile(filepath.Join(out, p)); err != nil || !bytes.Equal(got, storeText(t, f.st, key)) {
			t.Errorf("%s from tar: %q %v", p, got, err)
		}
	}
	var doc statusDoc
	if data, err := os.ReadFile(filepath.Join(out, ".oxy/status")); err != nil || json.Unmarshal(data, &doc) != nil || doc.Mountpoint != srv.Dir() {
		t.Errorf(".oxy/status from tar is not its JSON: %v\n%s", err, data)
	}
}

// TestOxyListOfAnUnfoldedStoreIsMeasuredOnce: where the open read no list
// (a store with only a partial list is not folded), the first stat of
// .oxy/lists/<name> reads and decodes it (one GET), later ones send
// nothing, and the read returns that many bytes.
func TestOxyListOfAnUnfoldedStoreIsMeasuredOnce(t *testing.T) {
	f := buildFixture(t)
	ctx := context.Background()
	var keys []string
	for _, e := range f.listed {
		keys = append(keys, e.Key())
	}
	id, data, err := format.EncodeEntryList(keys)
	if err != nil {
		t.Fatal(err)
	}
	partial := format.EntryListName(id, false)
	if err := f.st.Put(ctx, partial, data); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Bucket().Delete(ctx, f.list); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, f.st)
	srv, _ := testMount(t, ix, Options{})
	if s := ix.Status(); s.Folded || len(s.LiveLists) != 1 {
		t.Fatalf("folded %v, live lists %v: want one partial list, not folded", s.Folded, s.LiveLists)
	}
	p := filepath.Join(srv.Dir(), ".oxy/lists", partial)
	stat := func() int64 {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	var size int64
	if d := storefixture.Delta(f.st, func() { size = stat() }); d.Get != 1 || d.Total() != 1 {
		t.Errorf("the first stat sent %v, want 1 GET", d)
	}
	if d := storefixture.Delta(f.st, func() { stat() }); d.Total() != 0 {
		t.Errorf("the second stat sent %v, want nothing", d)
	}
	text, err := os.ReadFile(p)
	if err != nil || size != int64(len(text)) || !bytes.Equal(text, storeText(t, f.st, partial)) {
		t.Errorf("stat says %d bytes; read %d (%v)", size, len(text), err)
	}
}

// TestOxyListThatChangedUnderItsNameFailsTheRead: a list's key that comes
// to hold other bytes than the ones measured fails the read (EIO) instead
// of returning more or fewer bytes than stat said.
func TestOxyListThatChangedUnderItsNameFailsTheRead(t *testing.T) {
	f, _, srv, _ := oxyFixture(t)
	p := filepath.Join(srv.Dir(), ".oxy/lists", f.list)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, keys := range [][]string{
		{storefixture.Ent(format.KindSig, "ab12cd34", "alice").Key()},                                              // shorter
		append(allKeys(f), storefixture.Ent(format.KindSeal, "ee01", "a longer text than the one measured").Key()), // longer
	} {
		_, data, err := format.EncodeEntryList(keys)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.st.Put(context.Background(), f.list, data); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("read of a list of %d keys, measured at %d bytes: %d bytes, %v; want EIO", len(keys), fi.Size(), len(got), err)
		}
	}
}

func allKeys(f *fixture) []string {
	var keys []string
	for _, e := range f.listed {
		keys = append(keys, e.Key())
	}
	return keys
}

// TestOxyJournalTheViewDoesNotKeep: a journal longer than
// index.Options.KeepJournalText is not in memory. Listing .oxy (ls -l does
// a LOOKUP of each file) sends nothing; a stat of .oxy/journal reads it
// (one GET) and reports its exact size; the read that follows gets those
// very bytes (held with the stat, no second GET); .oxy/retired costs nothing.
func TestOxyJournalTheViewDoesNotKeep(t *testing.T) {
	f := buildFixture(t)
	ix, err := index.Open(context.Background(), f.st, index.Options{Warn: func(string) {}, ReadAhead: -1, KeepJournalText: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	clock := &fakeClock{t: time.Unix(1700000000, 0)}
	srv, _ := testMount(t, ix, Options{now: clock.now})
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(srv.Dir(), ".oxy")
	if d := storefixture.Delta(f.st, func() {
		if _, err := os.ReadDir(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "retired")); err != nil {
			t.Fatal(err)
		}
	}); d.Total() != 0 {
		t.Errorf("listing .oxy and a stat of .oxy/retired sent %v, want nothing", d)
	}
	want := storeText(t, f.st, format.JournalKey)
	var fi os.FileInfo
	if d := storefixture.Delta(f.st, func() {
		var err error
		if fi, err = os.Stat(filepath.Join(dir, "journal")); err != nil {
			t.Fatal(err)
		}
	}); d.Get != 1 || d.Total() != 1 {
		t.Errorf("stat .oxy/journal sent %v, want 1 GET", d)
	}
	var data []byte
	if d := storefixture.Delta(f.st, func() {
		var err error
		if data, err = os.ReadFile(filepath.Join(dir, "journal")); err != nil {
			t.Fatal(err)
		}
	}); d.Total() != 0 {
		t.Errorf("reading .oxy/journal within the hold of its stat sent %v, want nothing", d)
	}
	if fi.Size() != int64(len(want)) || !bytes.Equal(data, want) {
		t.Errorf(".oxy/journal: stat %d bytes, read %q; want the store's %d bytes %q", fi.Size(), data, len(want), want)
	}
	if d := storefixture.Delta(f.st, func() {
		if _, err := os.ReadFile(filepath.Join(dir, "retired")); err != nil {
			t.Fatal(err)
		}
	}); d.Total() != 0 {
		t.Errorf("reading .oxy/retired sent %v, want nothing", d)
	}
}
