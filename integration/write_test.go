package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestCopyThroughMountLandsInBucket: cp of a signature and touch of a seal
// through one mount write the per-object keys and their journal lines
// (DESIGN §4), as a separate process and the bucket itself show; a second
// mount, in another process, sees them; a signer's signature copied again
// with other bytes replaces the old one, for that mount after a refresh and
// for a new mount.
func TestCopyThroughMountLandsInBucket(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	genFolded(t, srv, url, 200, 4)
	st := openStore(t, url)

	a := t.TempDir()
	startMount(t, srv, url, a, "--allow-overwrite") // the test replaces a signature below
	src := sigFiles(t, a)[0]
	sigBytes, err := os.ReadFile(src)
	if err != nil || len(sigBytes) == 0 {
		t.Fatalf("read %s: %d bytes, %v", src, len(sigBytes), err)
	}
	before := readStatus(t, a).Requests

	obj := newObject(t)
	hh, rest := obj[:2], obj[2:]
	const signer = "integration-signer"
	sigKey := format.Entry{Kind: format.KindSig, Object: obj, Value: signer}.Key()
	sealValue := newObject(t)
	sealKey := format.Entry{Kind: format.KindSeal, Object: obj, Value: sealValue}.Key()

	run(t, "mkdir", "-p", filepath.Join(a, "sig", hh, rest), filepath.Join(a, "seal", hh, rest))
	run(t, "cp", src, filepath.Join(a, sigKey))
	run(t, "touch", filepath.Join(a, sealKey))

	// The writing mount sees its own writes at once.
	if got, err := os.ReadFile(filepath.Join(a, sigKey)); err != nil || !bytes.Equal(got, sigBytes) {
		t.Errorf("mount A reads back %d bytes (%v), want the %d copied", len(got), err, len(sigBytes))
	}
	if fi, err := os.Stat(filepath.Join(a, sealKey)); err != nil || fi.Size() != 0 || !fi.Mode().IsRegular() {
		t.Errorf("mount A: stat of the touched seal: %v, %v", fi, err)
	}
	w := readStatus(t, a)
	d := w.Requests.Sub(before)
	t.Logf("cp of a %d-byte signature and touch of a seal through the mount: %s, journal appends %d (keys %d)", len(sigBytes), d, w.JournalAppends, w.JournalKeys)
	if d.List != 0 {
		t.Errorf("writing through the mount sent %d LIST requests", d.List)
	}
	if d.Put < 4 {
		t.Errorf("writing two entries sent %d PUTs, want at least 4 (2 keys + 2 journal updates)", d.Put)
	}

	// The bucket, through a handle of this test process.
	ctx := context.Background()
	if got, err := st.Get(ctx, sigKey); err != nil || !bytes.Equal(got, sigBytes) {
		t.Errorf("bucket %s: %d bytes, %v; want the %d copied", sigKey, len(got), err, len(sigBytes))
	}
	if got, err := st.Get(ctx, sealKey); err != nil || len(got) != 0 {
		t.Errorf("bucket %s: %d bytes, %v; want an empty key", sealKey, len(got), err)
	}
	jl := journalLines(t, st)
	for _, k := range []string{sigKey, sealKey} {
		if n := unfoldedLines(jl, k); n != 1 {
			t.Errorf("journal: %d lines \"0 %s\", want 1", n, k)
		}
	}

	// Another process: oxyfs cat and oxyfs status.
	if got := mustOxyfs(t, srv, "cat", url, sigKey).stdout; got != string(sigBytes) {
		t.Errorf("oxyfs cat %s: %d bytes, want %d", sigKey, len(got), len(sigBytes))
	}
	if out := mustOxyfs(t, srv, "ls", url, "seal/"+hh+"/"+rest).stdout; strings.TrimSpace(out) != sealValue {
		t.Errorf("oxyfs ls seal/%s/%s: %q, want %q", hh, rest, out, sealValue)
	}
	var stat struct {
		Folded          bool `json:"folded"`
		JournalUnfolded int  `json:"journal_unfolded"`
	}
	out := mustOxyfs(t, srv, "status", "--json", url).stdout
	if err := json.Unmarshal([]byte(out), &stat); err != nil {
		t.Fatalf("oxyfs status --json: %v\n%s", err, out)
	}
	if !stat.Folded || stat.JournalUnfolded != 2 {
		t.Errorf("oxyfs status --json: folded=%v journal_unfolded=%d, want true and 2 (the two new lines)", stat.Folded, stat.JournalUnfolded)
	}

	// A second mount, in another process, sees both.
	b := t.TempDir()
	mb := startMount(t, srv, url, b)
	if got, err := os.ReadFile(filepath.Join(b, sigKey)); err != nil || !bytes.Equal(got, sigBytes) {
		t.Errorf("mount B reads %s: %d bytes, %v; want the %d copied", sigKey, len(got), err, len(sigBytes))
	}
	if _, err := os.Stat(filepath.Join(b, sealKey)); err != nil {
		t.Errorf("mount B: stat %s: %v", sealKey, err)
	}
	if names := lines(run(t, "ls", filepath.Join(b, "by-signer", signer))); len(names) != 1 || names[0] != obj {
		t.Errorf("mount B: ls by-signer/%s = %v, want [%s]", signer, names, obj)
	}

	// Replace by the same signer with other bytes (another length, so a
	// stale size would show).
	newBytes := randomBytes(t, len(sigBytes)+37)
	tmp := filepath.Join(t.TempDir(), "new.sig")
	if err := os.WriteFile(tmp, newBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "cp", tmp, filepath.Join(a, sigKey))
	if got, err := os.ReadFile(filepath.Join(a, sigKey)); err != nil || !bytes.Equal(got, newBytes) {
		t.Errorf("mount A after the replacement reads %d bytes (%v), want the new %d", len(got), err, len(newBytes))
	}
	if got, err := st.Get(ctx, sigKey); err != nil || !bytes.Equal(got, newBytes) {
		t.Errorf("bucket %s after the replacement: %d bytes, %v; want the new %d", sigKey, len(got), err, len(newBytes))
	}
	if n := unfoldedLines(journalLines(t, st), sigKey); n != 2 {
		t.Errorf("journal after the replacement: %d lines \"0 %s\", want 2", n, sigKey)
	}

	// Mount B, after a refresh (SIGHUP), reads the new bytes and size.
	mb.refresh()
	if got, err := os.ReadFile(filepath.Join(b, sigKey)); err != nil || !bytes.Equal(got, newBytes) {
		t.Errorf("mount B after refresh reads %d bytes (%v), want the new %d", len(got), err, len(newBytes))
	}
	if n := strings.TrimSpace(run(t, "stat", "-c", "%s", filepath.Join(b, sigKey))); n != strconv.Itoa(len(newBytes)) {
		t.Errorf("mount B after refresh: stat size %s, want %d", n, len(newBytes))
	}

	// And so does a new mount.
	c := t.TempDir()
	mc := startMount(t, srv, url, c)
	mc.stopSignal = syscall.SIGTERM // SIGTERM unmounts as SIGINT does
	if got, err := os.ReadFile(filepath.Join(c, sigKey)); err != nil || !bytes.Equal(got, newBytes) {
		t.Errorf("mount C reads %d bytes (%v), want the new %d", len(got), err, len(newBytes))
	}

	// The bucket checks out.
	if r := oxyfs(t, srv, "check", url); r.code != 0 {
		t.Errorf("oxyfs check after the writes: %s", r)
	}
}

// TestConcurrentWritesThroughMountAreGrouped: 8 writers copying signatures
// into one mount at once all land, each with its journal line, and the
// group commit carries them in fewer journal updates than entries
// (DESIGN §4, §7).
func TestConcurrentWritesThroughMountAreGrouped(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	const base = 100
	genFolded(t, srv, url, base, 4)
	st := openStore(t, url)
	mnt := t.TempDir()
	startMount(t, srv, url, mnt)
	s0 := readStatus(t, mnt)

	const writers, perWriter = 8, 25
	type write struct {
		key  string
		data []byte
	}
	var mu sync.Mutex
	var written []write
	var wg sync.WaitGroup
	began := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				e := format.Entry{Kind: format.KindSig, Object: newObjectID(w, i), Value: fmt.Sprintf("mount-writer-%d", w)}
				data := []byte(fmt.Sprintf("signature %d by mount writer %d", i, w))
				p := filepath.Join(mnt, e.Key())
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Errorf("mkdir -p %s: %v", filepath.Dir(p), err)
					return
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Errorf("write %s: %v", e.Key(), err)
					continue
				}
				mu.Lock()
				written = append(written, write{e.Key(), data})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	s1 := readStatus(t, mnt)
	d := s1.Requests.Sub(s0.Requests)
	appends, keys := s1.JournalAppends-s0.JournalAppends, s1.JournalKeys-s0.JournalKeys
	t.Logf("%d writers × %d signatures through the mount in %v (%.0f/s): %d journal updates carried %d keys; %s",
		writers, perWriter, took.Round(time.Millisecond), float64(len(written))/took.Seconds(), appends, keys, d)
	if len(written) != writers*perWriter {
		t.Fatalf("%d of %d writes succeeded", len(written), writers*perWriter)
	}
	if keys != int64(len(written)) {
		t.Errorf("journal updates carried %d keys for %d entries written", keys, len(written))
	}
	if appends >= keys {
		t.Errorf("%d journal updates for %d concurrent writes: no grouping", appends, keys)
	}
	if d.List != 0 {
		t.Errorf("writing through the mount sent %d LIST requests", d.List)
	}

	// Every entry is in the bucket with its bytes and an unfolded journal line.
	ctx := context.Background()
	jl := journalLines(t, st)
	for _, w := range written {
		if got, err := st.Get(ctx, w.key); err != nil || !bytes.Equal(got, w.data) {
			t.Errorf("bucket %s: %q, %v; want %q", w.key, got, err, w.data)
		}
		if n := unfoldedLines(jl, w.key); n != 1 {
			t.Errorf("journal: %d lines \"0 %s\", want 1", n, w.key)
		}
	}
	// Another process sees them all.
	if n := len(lines(mustOxyfs(t, srv, "ls", "-R", url).stdout)); n != base+len(written) {
		t.Errorf("oxyfs ls -R after the writes: %d entries, want %d", n, base+len(written))
	}
}
