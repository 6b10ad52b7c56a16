package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
)

// TestBrowseFoldedS3StoreSendsNoList is the product's claim (DESIGN §4, §7)
// measured end to end: a journaled store on a real S3 server, folded by
// `oxyfs fold`, mounted by `oxyfs mount` in another process, browsed with
// find, ls, stat, cat and du. The open costs 1 LIST and live lists + 2 GETs;
// browsing costs no LIST at all, and at most one GET per signature whose
// bytes or size were asked for, plus one GET per .oxy/lists/ file read
// (.oxy/status, journal and retired are the index's and cost nothing).
func TestBrowseFoldedS3StoreSendsNoList(t *testing.T) {
	t.Parallel()
	srv, url := s3Store(t)
	const entries, signers = 3000, 8
	gen, fold := genFolded(t, srv, url, entries, signers)
	t.Logf("gen --entries %d: %s; fold: %s", entries, gen.requests, fold.requests)
	if !gen.hasStats || !fold.hasStats {
		t.Errorf("--stats printed no requests line\ngen: %s\nfold: %s", gen, fold)
	}
	if gen.requests.List != 1 {
		t.Errorf("gen sent %d LIST requests; want 1, the check that the bucket is empty (writing needs none)", gen.requests.List)
	}

	// What the tree holds, as another process lists it (no mount involved).
	ls := mustOxyfs(t, srv, "ls", "-R", url)
	treeFiles := len(lines(ls.stdout))
	if treeFiles != entries {
		t.Errorf("oxyfs ls -R printed %d entries, want the %d gen wrote", treeFiles, entries)
	}

	mnt := t.TempDir()
	// Read-ahead off, so each GET below is one this test asked for
	// (TestCatEverySignatureWithReadAhead covers it on).
	startMount(t, srv, url, mnt, "--read-ahead=-1")

	// The open's cost, read from the mount itself.
	s0 := readStatus(t, mnt)
	r0 := s0.Requests
	live := len(s0.LiveLists)
	t.Logf("open: %s (live lists %d, mode %s, %d entries)", r0, live, s0.Mode, s0.Entries)
	if !s0.Folded || s0.Mode != "folded" {
		t.Fatalf("mount of a folded store: folded=%v mode=%q", s0.Folded, s0.Mode)
	}
	if live != 1 || !s0.LiveLists[0].Complete {
		t.Errorf("live lists after one fold: %+v, want one complete list", s0.LiveLists)
	}
	if r0.List != 1 || r0.Get != int64(live)+2 || r0.Head != 0 || r0.Put != 0 || r0.Delete != 0 {
		t.Errorf("open cost %s, want list=1 get=%d (live lists + 2) and nothing else", r0, live+2)
	}
	if r0 != s0.OpenRequests {
		t.Errorf("requests since start %s differ from open_requests %s: the mount sent something besides the open", r0, s0.OpenRequests)
	}
	if s0.Entries != entries {
		t.Errorf(".oxy/status entries = %d, want %d", s0.Entries, entries)
	}
	// Reading .oxy/status costs nothing.
	if d := readStatus(t, mnt).Requests.Sub(r0); d.Total() != 0 {
		t.Errorf("reading .oxy/status sent %s, want none", d)
	}

	// find: every entry, plus .oxy/{status,journal,retired} and one file per
	// live list in .oxy/lists/. by-signer/ holds symlinks, which -type f skips.
	found := lines(run(t, "find", mnt, "-type", "f"))
	if want := treeFiles + 3 + live; len(found) != want {
		t.Errorf("find %s -type f: %d files, want %d (%d entries + 3 .oxy files + %d lists)", mnt, len(found), want, treeFiles, live)
	}
	var sigs []string
	for _, p := range found {
		if strings.HasPrefix(p, mnt+"/sig/") {
			sigs = append(sigs, p)
		}
	}
	slices.Sort(sigs)
	if len(sigs) < 10 {
		t.Fatalf("only %d signatures under sig/", len(sigs))
	}

	seal := run(t, "ls", "-lR", filepath.Join(mnt, "seal"))
	if n := strings.Count(seal, "\n-rw"); n == 0 {
		t.Errorf("ls -lR seal/ shows no files:\n%s", clip(seal, 2000))
	}
	signerDirs := lines(run(t, "ls", filepath.Join(mnt, "by-signer")))
	if len(signerDirs) != signers {
		t.Errorf("ls by-signer: %d signers %v, want %d", len(signerDirs), signerDirs, signers)
	}
	links := lines(run(t, "ls", filepath.Join(mnt, "by-signer", signerDirs[0])))
	if len(links) == 0 {
		t.Errorf("ls by-signer/%s is empty", signerDirs[0])
	}
	run(t, "du", "-s", filepath.Join(mnt, "seal"))
	if d := readStatus(t, mnt).Requests.Sub(r0); d.Total() != 0 {
		t.Errorf("find, ls -lR, ls and du sent %s, want none (no GET either: no signature's size was asked)", d)
	}

	// stat a few signatures, then cat them and a few others; compare with
	// `oxyfs cat` in another process.
	stated := []string{sigs[0], sigs[len(sigs)/3], sigs[len(sigs)/2], sigs[len(sigs)-1]}
	catted := append(slices.Clone(stated), sigs[1], sigs[2], sigs[len(sigs)-2])
	// The first stat alone: what one signature's size costs.
	c1 := readStatus(t, mnt).Requests
	run(t, "stat", stated[0])
	t.Logf("stat of one signature: %s", settledRequests(t, mnt).Sub(c1))
	for _, p := range stated[1:] {
		run(t, "stat", p)
	}
	sizes := map[string]int{}
	for _, p := range stated {
		n, err := strconv.Atoi(strings.TrimSpace(run(t, "stat", "-c", "%s", p)))
		if err != nil {
			t.Fatalf("stat -c %%s %s: %v", p, err)
		}
		sizes[p] = n
	}
	for _, p := range catted {
		got := run(t, "cat", p)
		want := mustOxyfs(t, srv, "cat", url, rel(t, mnt, p)).stdout
		if got != want || got == "" {
			t.Errorf("cat %s: %d bytes, oxyfs cat: %d bytes (equal: %v)", p, len(got), len(want), got == want)
		}
		if n, ok := sizes[p]; ok && n != len(got) {
			t.Errorf("stat %s says %d bytes, cat reads %d", p, n, len(got))
		}
	}
	// A by-signer link leads to the same bytes.
	link := filepath.Join(mnt, "by-signer", signerDirs[0], links[0])
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatalf("readlink %s: %v", link, err)
	}
	if !strings.HasPrefix(target, "../../sig/") {
		t.Errorf("by-signer link %s -> %s, want ../../sig/...", link, target)
	}
	viaLink := run(t, "cat", link)
	viaSig := run(t, "cat", filepath.Join(filepath.Dir(link), target))
	if viaLink != viaSig || viaLink == "" {
		t.Errorf("cat of by-signer link and of its target differ (%d vs %d bytes)", len(viaLink), len(viaSig))
	}
	sigsRead := len(catted) + 1

	// .oxy/: the journal and the retired record (the mount's, no request)
	// and a list (one GET).
	journal := run(t, "cat", filepath.Join(mnt, ".oxy", "journal"))
	if n := len(lines(journal)); n != entries {
		t.Errorf(".oxy/journal has %d lines, want %d", n, entries)
	}
	for _, l := range lines(journal) {
		if strings.HasPrefix(l, "0 ") {
			t.Errorf(".oxy/journal: an unfolded line after the fold: %q", l)
			break
		}
	}
	run(t, "cat", filepath.Join(mnt, ".oxy", "retired"))
	listText := run(t, "cat", filepath.Join(mnt, ".oxy", "lists", s0.LiveLists[0].Name))
	ll := lines(listText)
	if len(ll) != entries+1 || ll[0] != format.EntryListHeader {
		t.Errorf(".oxy/lists/%s: %d lines starting %q, want the header and %d keys", s0.LiveLists[0].Name, len(ll), ll[0], entries)
	}
	const oxyReads = 1 // the list

	d := settledRequests(t, mnt).Sub(r0)
	t.Logf("browsing: find (%d files), ls -lR seal/, ls by-signer/, du, stat of %d signatures, cat of %d, 3 .oxy files: %s", len(found), len(stated), sigsRead, d)
	if d.List != 0 {
		t.Errorf("browsing sent %d LIST requests, want 0 (the product's claim)", d.List)
	}
	if d.Get > int64(sigsRead+oxyReads) {
		t.Errorf("browsing sent %d GETs, want at most %d (one per signature read: %d, one per .oxy list read: %d); "+
			"the rest fetched signatures nobody read (read-ahead?)", d.Get, sigsRead+oxyReads, sigsRead, oxyReads)
	}
	if d.Head != 0 || d.Put != 0 || d.Delete != 0 {
		t.Errorf("browsing sent %s, want GETs only", d)
	}

	// A second pass over the same signatures is answered from the cache.
	before := settledRequests(t, mnt)
	for _, p := range catted {
		if got := run(t, "cat", p); got == "" {
			t.Errorf("second cat %s: empty", p)
		}
	}
	run(t, "find", mnt, "-type", "f")
	// xattrs name the store key and where the entry came from. (On a
	// signature not read yet, the kernel's permission check asks for its
	// attributes first, which reads its size: one GET.)
	for _, p := range stated {
		if key := getxattr(t, p, "user.oxy.key"); key != rel(t, mnt, p) {
			t.Errorf("user.oxy.key of %s = %q", rel(t, mnt, p), key)
		}
		if src := getxattr(t, p, "user.oxy.source"); src == "" {
			t.Errorf("user.oxy.source of %s is empty", rel(t, mnt, p))
		}
	}
	if d := settledRequests(t, mnt).Sub(before); d.Total() != 0 {
		t.Errorf("reading the same signatures and their xattrs again, and find, sent %s, want none", d)
	}
}

// getxattr reads an extended attribute.
func getxattr(t *testing.T, path, name string) string {
	t.Helper()
	buf := make([]byte, 4096)
	n, err := syscall.Getxattr(path, name, buf)
	if err != nil {
		t.Errorf("getxattr %s %s: %v", path, name, err)
		return ""
	}
	return string(buf[:n])
}
