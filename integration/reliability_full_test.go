package integration

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// The disk under a file:// store fills (issue 36). Before: a put whose key
// write hit ENOSPC left a 0-byte signature key, one whose journal update
// hit it left pack-entries 0 bytes long (the lines before it gone), the
// mount answered EIO, the CLI printed only the chain of the error, and
// `oxyfs check` said "OK: no problems" on what was left.

// TestReliabilityFullFileStore fills a real small tmpfs under a folded
// file:// store with `oxyfs put`s of 32 KiB signatures until one fails,
// fills what is left with a file of its own, then writes once more with
// the CLI (a signature: its key write fails; an index entry: its key fits,
// as an empty file takes no page, and the journal update fails) and through
// a mount of the store (both kinds). Every failure must say the disk is
// full: the CLI exits 1 naming the key and "no space left on the store's
// filesystem", the mount's close returns ENOSPC. After the fill the journal
// holds every line it held before (it never shrinks or empties), no
// signature key is 0 bytes, and a fresh reader (`oxyfs ls -R`, `oxyfs
// cat`) shows every put that exited 0, with its bytes.
//
// The journal and 0-byte-key assertions depend on the file driver writing
// every key through a temporary file that is removed, not renamed, when a
// write, sync or close fails (store/fileblob).
func TestReliabilityFullFileStore(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, "1m")
	url := "file://" + filepath.Join(disk, "store")
	mustOxyfs(t, nil, "gen", url, "--entries", "20", "--signers", "2", "--fold")
	mnt := t.TempDir()
	startMount(t, nil, url, mnt)
	journalBefore := fullJournalLines(t, disk)

	// CLI puts of 32 KiB until the disk refuses one.
	var acked []relAck
	sigKey := func(i int) string { return fmt.Sprintf("sig/f1/%04x/writer-%d", i, i) }
	failed := false
	for i := 0; i < 200 && !failed; i++ {
		data := make([]byte, 32<<10)
		if _, err := rand.Read(data); err != nil {
			t.Fatal(err)
		}
		key := sigKey(i)
		r := oxyfs(t, nil, "put", url, key, relTempFile(t, "sig", data))
		if r.code == 0 {
			acked = append(acked, relAck{key: key, data: data})
			continue
		}
		failed = true
		wantFull(t, r, key)
		t.Logf("the put the disk refused: exit %d: %s", r.code, clip(r.stderr, 1000))
	}
	if !failed || len(acked) == 0 {
		t.Fatalf("after %d puts of 32 KiB: failed %v; a 1 MiB disk should take some and refuse one", len(acked), failed)
	}
	t.Logf("%d puts of 32 KiB landed before the disk refused one", len(acked))

	// Fill every page left.
	fillDisk(t, filepath.Join(disk, "filler"))

	// The CLI again: a signature's key cannot be written; an index
	// entry's key (an empty file) can, and its journal update cannot.
	sealKey := "seal/f1/0000/after-the-fill"
	for _, key := range []string{sigKey(1000), sealKey} {
		args := []string{"put", url, key}
		if strings.HasPrefix(key, "sig/") {
			args = append(args, relTempFile(t, "sig", []byte("a small signature")))
		}
		wantFull(t, oxyfs(t, nil, args...), key)
	}

	// The mount: the close of a signature and of an index entry written
	// into it returns ENOSPC.
	for _, key := range []string{"sig/f2/0000/through-the-mount", "approval/f2/0000/through-the-mount"} {
		p := filepath.Join(mnt, key)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var data []byte
		if strings.HasPrefix(key, "sig/") {
			data = []byte("a signature written into the mount")
		}
		err := os.WriteFile(p, data, 0o644)
		if e := errnoOf(err); e != syscall.ENOSPC {
			t.Errorf("write %s into the mount of a full store: %v (errno %d), want ENOSPC", key, err, int(e))
		}
	}

	// What is left: the journal kept every line, no signature key is
	// empty, and every acknowledged put reads back.
	journalAfter := fullJournalLines(t, disk)
	wantAll := append(slices.Clone(journalBefore), ackedLines(acked)...)
	if missing := missingLines(journalAfter, wantAll); len(missing) > 0 {
		t.Errorf("the journal lost %d of the %d lines it held or was acknowledged (%d lines now), e.g. %q", len(missing), len(wantAll), len(journalAfter), missing[:min(len(missing), 5)])
	}
	empty := emptySigKeys(t, filepath.Join(disk, "store"))
	if len(empty) > 0 {
		t.Errorf("0-byte signature keys after the fill: %q", empty)
	}
	// check finds what the fill left: every 0-byte signature key named,
	// exit 1; on a store the fill did not damage, exit 0 (the index
	// entry whose journal update failed is only waiting for a fold).
	chk := oxyfs(t, nil, "check", url)
	for _, k := range empty {
		if out := chk.stdout + chk.stderr; chk.code != 1 || !strings.Contains(out, "sig-empty: signature keys of 0 bytes") || !strings.Contains(out, k) {
			t.Errorf("check does not name the 0-byte signature key %s with exit 1\n%s", k, chk)
		}
	}
	if len(empty) == 0 && chk.code != 0 {
		t.Errorf("check of the filled store: %s", chk)
	}
	if err := os.Remove(filepath.Join(disk, "filler")); err != nil {
		t.Fatal(err)
	}
	ls := oxyfs(t, nil, "ls", "-R", url)
	if ls.code != 0 {
		t.Fatalf("%s", ls)
	}
	shown := 0
	for _, a := range acked {
		if strings.Contains(ls.stdout, a.key) {
			shown++
		} else {
			t.Errorf("a fresh reader does not show %s, whose put exited 0", a.key)
		}
	}
	for _, a := range []relAck{acked[0], acked[len(acked)-1]} {
		if r := oxyfs(t, nil, "cat", url, a.key); r.code != 0 || r.stdout != string(a.data) {
			t.Errorf("cat %s: exit %d, %d bytes; want its %d bytes\n%s", a.key, r.code, len(r.stdout), len(a.data), clip(r.stderr, 2000))
		}
	}
	relFigure(t, "full file store: %d puts acknowledged, %d shown by a fresh reader; journal %d lines before, %d after", len(acked), shown, len(journalBefore), len(journalAfter))
}

// TestReliabilityCheckFindsWhatAFullDiskLeft damages a folded file://
// store by hand as a failed write does — a 0-byte signature key, a journal
// cut in the middle of a line, a journal emptied after acknowledged puts —
// and `oxyfs check` must exit 1 naming each. It exited 0 on all three.
func TestReliabilityCheckFindsWhatAFullDiskLeft(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	url := "file://" + dir
	mustOxyfs(t, nil, "gen", url, "--entries", "20", "--signers", "2", "--fold")
	keys := []string{"sig/c4/0001/alice", "sig/c4/0002/bob", "seal/c4/0003/change-1"}
	for _, k := range keys {
		args := []string{"put", url, k}
		if strings.HasPrefix(k, "sig/") {
			args = append(args, relTempFile(t, "sig", []byte("the signature of "+k)))
		}
		mustOxyfs(t, nil, args...)
	}
	if r := oxyfs(t, nil, "check", url); r.code != 0 {
		t.Fatalf("check of the sound store: %s", r)
	}

	// A signature key a failed write left empty.
	empty := keys[0]
	if err := os.Truncate(filepath.Join(dir, empty), 0); err != nil {
		t.Fatal(err)
	}
	if out := wantCheck(t, url, "sig-empty: signature keys of 0 bytes"); !strings.Contains(out, empty) {
		t.Errorf("check does not name the 0-byte signature key %s", empty)
	}
	mustOxyfs(t, nil, "put", "--force", url, empty, relTempFile(t, "sig", []byte("signed again")))

	// A journal cut in the middle of its last line.
	jpath := filepath.Join(dir, format.JournalKey)
	text, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jpath, text[:len(text)-4], 0o644); err != nil {
		t.Fatal(err)
	}
	wantCheck(t, url, format.JournalKey+" is cut")

	// A journal emptied well after the puts it held were acknowledged:
	// the times are set back as if the fold ran 30 minutes ago and the
	// puts 10 (past the margin check leaves a writer adding its line).
	if err := os.WriteFile(jpath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	setBack := func(name string, d time.Duration) {
		t.Helper()
		at := time.Now().Add(-d)
		if err := os.Chtimes(filepath.Join(dir, name), at, at); err != nil {
			t.Fatal(err)
		}
	}
	lists, err := filepath.Glob(filepath.Join(dir, format.PackPrefix+"*"+format.EntryListSuffix))
	if err != nil || len(lists) == 0 {
		t.Fatalf("the folded store's lists: %q, %v", lists, err)
	}
	for _, l := range lists {
		setBack(filepath.Base(l), 30*time.Minute)
	}
	for _, k := range keys {
		setBack(k, 10*time.Minute)
	}
	out := wantCheck(t, url, "entry-unlisted: keys that exist, but no live list or journal line names them: the journal was rewritten after they were written")
	for _, k := range keys {
		if !strings.Contains(out, k) {
			t.Errorf("check does not name %s, whose journal line is gone", k)
		}
	}
	// A complete fold lists them again, and the store checks clean.
	mustOxyfs(t, nil, "fold", url)
	if r := oxyfs(t, nil, "check", url); r.code != 0 {
		t.Errorf("check after a fold: %s", r)
	}
}

// wantFull checks a put refused by a full disk: exit 1, and stderr says
// the store's filesystem is full and names the key.
func wantFull(t *testing.T, r result, key string) {
	t.Helper()
	if r.code != 1 || !strings.Contains(r.stderr, "no space left on the store's filesystem") || !strings.Contains(r.stderr, key) {
		t.Errorf("a put into a full store: want exit 1 and \"no space left on the store's filesystem\" naming %s\n%s", key, r)
	}
}

// wantCheck runs `oxyfs check` and wants exit 1 with want in what it says;
// it returns stdout and stderr.
func wantCheck(t *testing.T, url, want string) string {
	t.Helper()
	r := oxyfs(t, nil, "check", url)
	out := r.stdout + r.stderr
	if r.code != 1 || !strings.Contains(out, want) {
		t.Errorf("check: want exit 1 and %q\n%s", want, r)
	}
	return out
}

// smallDisk mounts a tmpfs of size (mount -o size=) in a directory of the
// test and unmounts it at cleanup (registered first, so it runs after the
// mounts over it stopped). It needs root.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	testservers.RequireFUSE(t)
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root; a tmpfs of a given size needs it")
		}
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, errOut, err := runErr("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "tmpfs", dir); err != nil {
		t.Fatalf("mount -t tmpfs -o size=%s: %v\n%s%s", size, err, out, errOut)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount the tmpfs %s: %v", dir, err)
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// fillDisk writes zeros to path until the filesystem refuses (ENOSPC).
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = io.Copy(f, io.LimitReader(zeros{}, 1<<30))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fill %s: %v, want ENOSPC", path, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// fullJournalLines reads the journal of the store under disk as its lines.
func fullJournalLines(t *testing.T, disk string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(disk, "store", format.JournalKey))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return lines(string(data))
}

// ackedLines are the journal lines of acknowledged puts: "0 <key>".
func ackedLines(acked []relAck) []string {
	var out []string
	for _, a := range acked {
		out = append(out, "0 "+a.key)
	}
	return out
}

// missingLines returns the lines of want (a multiset) that have is short of.
func missingLines(have, want []string) []string {
	n := map[string]int{}
	for _, l := range have {
		n[l]++
	}
	var missing []string
	for _, l := range want {
		if n[l] > 0 {
			n[l]--
		} else {
			missing = append(missing, l)
		}
	}
	return missing
}

// emptySigKeys returns the signature keys of the file store at root that
// are 0 bytes long.
func emptySigKeys(t *testing.T, root string) []string {
	t.Helper()
	var empty []string
	err := filepath.WalkDir(filepath.Join(root, "sig"), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Size() == 0 {
			empty = append(empty, p[len(root)+1:])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return empty
}
