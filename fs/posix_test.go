package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// kit is a mount of the fixture that the POSIX checks run against.
type kit struct {
	f   *fixture
	ix  *index.Index
	srv *Server
	ro  bool
}

func (k *kit) p(rel string) string { return filepath.Join(k.srv.Dir(), rel) }

// posixKit: read-only checks any mount of the fixture passes, by name.
var posixKit = []struct {
	name string
	fn   func(t *testing.T, k *kit)
}{
	{"ReaddirListsEveryLevel", checkReaddir},
	{"LookupOfMissingOrMalformedNamesIsENOENT", checkLookupMissing},
	{"StatGivesSizesModesAndTheIndexInodes", checkStat},
	{"ReadReturnsTheSignatureBytes", checkRead},
	{"XattrsNameTheKeyAndSource", checkXattrs},
	{"BySignerSymlinksLeadToTheSignature", checkSymlinks},
	{"OxyStatusIsJSONWithRequestCounters", checkOxyStatus},
	{"OxyFilesReportTheirSizeAndOnlyAListCostsAGet", checkOxyFiles},
	{"RefusedWritesSendNothing", checkRefused},
}

func runKit(t *testing.T, k *kit) {
	for _, c := range posixKit {
		t.Run(c.name, func(t *testing.T) { c.fn(t, k) })
	}
}

func TestPosixKit(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{})
	runKit(t, &kit{f: f, ix: ix, srv: srv})
}

func TestPosixKitReadOnly(t *testing.T) {
	f, ix, srv, _ := mountFixture(t, Options{ReadOnly: true})
	runKit(t, &kit{f: f, ix: ix, srv: srv, ro: true})
}

// expectedTree derives every directory's listing from the fixture.
func (k *kit) expectedTree() map[string][]string {
	tree := map[string]map[string]bool{}
	add := func(dir, name string) {
		if tree[dir] == nil {
			tree[dir] = map[string]bool{}
		}
		tree[dir][name] = true
	}
	for _, n := range []string{".oxy", "by-signer"} {
		add("", n)
	}
	for _, kd := range format.Kinds {
		add("", kd.String())
	}
	for _, e := range k.f.all() {
		kd, hh, rest := e.Kind.String(), e.Object[:2], e.Object[2:]
		add(kd, hh)
		add(kd+"/"+hh, rest)
		add(kd+"/"+hh+"/"+rest, e.Value)
		if e.Kind == format.KindSig {
			add("by-signer", e.Value)
			add("by-signer/"+e.Value, e.Object)
		}
	}
	out := map[string][]string{}
	for dir, names := range tree {
		for n := range names {
			out[dir] = append(out[dir], n)
		}
		slices.Sort(out[dir])
	}
	return out
}

func checkReaddir(t *testing.T, k *kit) {
	for dir, want := range k.expectedTree() {
		des, err := os.ReadDir(k.p(dir))
		if err != nil {
			t.Fatalf("readdir /%s: %v", dir, err)
		}
		var got []string
		for _, de := range des {
			got = append(got, de.Name())
			wantType := os.ModeDir
			switch {
			case strings.HasPrefix(dir, "by-signer/"):
				wantType = os.ModeSymlink
			case strings.Count(dir, "/") == 2:
				wantType = 0
			}
			if de.Type() != wantType {
				t.Errorf("/%s/%s: d_type %v, want %v", dir, de.Name(), de.Type(), wantType)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("readdir /%s = %q, want %q", dir, got, want)
		}
	}
}

func checkLookupMissing(t *testing.T, k *kit) {
	for _, rel := range []string{"nope", "sig/zz", "sig/ab/0000", "sig/ab/12cd34/nobody", "sig/AB", "sig/ab/12CD34",
		"by-signer/nobody", "by-signer/alice/ffff", ".oxy/nope", ".oxy/lists/pack-nope.entries"} {
		if _, err := os.Lstat(k.p(rel)); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("lstat /%s: %v, want ENOENT", rel, err)
		}
	}
}

func checkStat(t *testing.T, k *kit) {
	fileMode, dirMode := os.FileMode(0o644), os.FileMode(0o755)
	if k.ro {
		fileMode, dirMode = 0o444, 0o555
	}
	ctx := context.Background()
	for _, e := range k.f.all() {
		fi, err := os.Lstat(k.srv.path(e))
		if err != nil {
			t.Fatal(err)
		}
		want := int64(len(k.f.sigs[e.Key()]))
		if fi.Size() != want || fi.Mode() != fileMode {
			t.Errorf("%s: size %d mode %v, want %d %v", e.Key(), fi.Size(), fi.Mode(), want, fileMode)
		}
		n, err := k.ix.Stat(ctx, e.Key())
		if err != nil {
			t.Fatal(err)
		}
		if ino := fi.Sys().(*syscall.Stat_t).Ino; ino != n.Ino || ino != index.PathIno(e.Key()) {
			t.Errorf("%s: ino %d, index says %d, pathIno %d", e.Key(), ino, n.Ino, index.PathIno(e.Key()))
		}
		// du adds st_blocks × 512: blocks from the real size.
		if b := fi.Sys().(*syscall.Stat_t).Blocks; b != (want+511)/512 {
			t.Errorf("%s: %d blocks for %d bytes, want %d", e.Key(), b, want, (want+511)/512)
		}
	}
	root, err := os.Stat(k.p(""))
	if err != nil {
		t.Fatal(err)
	}
	if ino := root.Sys().(*syscall.Stat_t).Ino; ino != 1 {
		t.Errorf("the mount's root is inode %d, want 1", ino)
	}
	for dir := range k.expectedTree() {
		fi, err := os.Lstat(k.p(dir))
		if err != nil {
			t.Fatal(err)
		}
		want := os.ModeDir | dirMode
		if strings.HasPrefix(dir, ".oxy") {
			want = os.ModeDir | dirMode&0o555
		}
		if fi.Mode() != want {
			t.Errorf("/%s: mode %v, want %v", dir, fi.Mode(), want)
		}
	}
}

func checkRead(t *testing.T, k *kit) {
	for _, e := range k.f.all() {
		got, err := os.ReadFile(k.srv.path(e))
		if err != nil {
			t.Fatal(err)
		}
		if want := k.f.sigs[e.Key()]; !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes, want %d", e.Key(), len(got), len(want))
		}
	}
	big := storefixture.Ent(format.KindSig, "ff0011223344", "carol smith")
	f, err := os.Open(k.srv.path(big))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 100)
	if n, err := f.ReadAt(buf, 4990); n != 10 || !bytes.Equal(buf[:n], k.f.sigs[big.Key()][4990:]) {
		t.Errorf("pread at 4990: %d bytes, %v", n, err)
	}
}

func getxattr(p, name string) (string, error) {
	buf := make([]byte, 1024)
	n, err := syscall.Getxattr(p, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func checkXattrs(t *testing.T, k *kit) {
	for _, e := range k.f.all() {
		p := k.srv.path(e)
		if v, err := getxattr(p, xattrKey); err != nil || v != e.Key() {
			t.Errorf("%s: %s = %q, %v", e.Key(), xattrKey, v, err)
		}
		wantSrc := "list " + k.f.list
		if slices.Contains(k.f.jrnl, e) {
			wantSrc = "journal"
		}
		if v, err := getxattr(p, xattrSource); err != nil || v != wantSrc {
			t.Errorf("%s: %s = %q, %v, want %q", e.Key(), xattrSource, v, err, wantSrc)
		}
		if _, err := getxattr(p, "user.other"); !errors.Is(err, syscall.ENODATA) {
			t.Errorf("%s: user.other: %v, want ENODATA", e.Key(), err)
		}
		buf := make([]byte, 256)
		n, err := syscall.Listxattr(p, buf)
		if err != nil || string(buf[:n]) != xattrKey+"\x00"+xattrSource+"\x00" {
			t.Errorf("%s: listxattr %q, %v", e.Key(), buf[:n], err)
		}
		if n, err := syscall.Listxattr(p, nil); err != nil || n != len(xattrList) {
			t.Errorf("%s: listxattr size %d, %v", e.Key(), n, err)
		}
	}
}

func checkSymlinks(t *testing.T, k *kit) {
	for _, e := range k.f.all() {
		if e.Kind != format.KindSig {
			continue
		}
		link := k.p("by-signer/" + e.Value + "/" + e.Object)
		target, err := os.Readlink(link)
		if want := "../../sig/" + e.Object[:2] + "/" + e.Object[2:] + "/" + e.Value; err != nil || target != want {
			t.Errorf("readlink %s = %q, %v, want %q", link, target, err, want)
		}
		fi, err := os.Lstat(link)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("lstat %s: %v, %v", link, fi, err)
		}
		data, err := os.ReadFile(link)
		if err != nil || !bytes.Equal(data, k.f.sigs[e.Key()]) {
			t.Errorf("read through %s: %d bytes, %v", link, len(data), err)
		}
		if fi, err := os.Stat(link); err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
			t.Errorf("stat through %s: %v, %v", link, fi, err)
		}
	}
}

func checkOxyStatus(t *testing.T, k *kit) {
	var data []byte
	d := storefixture.Delta(k.f.st, func() {
		var err error
		if data, err = os.ReadFile(k.p(".oxy/status")); err != nil {
			t.Fatal(err)
		}
	})
	if d.Total() != 0 {
		t.Errorf("reading .oxy/status sent %v", d)
	}
	var doc struct {
		Folded    bool             `json:"folded"`
		Mode      string           `json:"mode"`
		LiveLists []store.ListInfo `json:"live_lists"`
		Entries   int              `json:"entries"`
		Requests  *store.Counts    `json:"requests"`
		FuseOps   map[string]int64 `json:"fuse_ops"`
		ReadOnly  bool             `json:"read_only"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf(".oxy/status is not JSON: %v\n%s", err, data)
	}
	if !doc.Folded || doc.Mode != index.ModeFolded || len(doc.LiveLists) != 1 || doc.LiveLists[0].Name != k.f.list {
		t.Errorf("status: folded %v mode %q lists %v", doc.Folded, doc.Mode, doc.LiveLists)
	}
	if doc.Entries != len(k.f.all()) || doc.ReadOnly != k.ro {
		t.Errorf("status: %d entries, read_only %v", doc.Entries, doc.ReadOnly)
	}
	if doc.Requests == nil || doc.Requests.List < 1 || doc.FuseOps["lookup"] == 0 || doc.FuseOps["open"] == 0 {
		t.Errorf("status lacks counters: requests %v fuse_ops %v", doc.Requests, doc.FuseOps)
	}
}

func checkOxyFiles(t *testing.T, k *kit) {
	ctx := context.Background()
	read := func(rel string, gets int64) []byte {
		t.Helper()
		var data []byte
		d := storefixture.Delta(k.f.st, func() {
			var err error
			if data, err = os.ReadFile(k.p(rel)); err != nil {
				t.Fatal(err)
			}
		})
		if d.Get != gets || d.Total() != gets {
			t.Errorf("reading /%s sent %v, want %d GET", rel, d, gets)
		}
		return data
	}
	want, err := k.f.st.Get(ctx, format.JournalKey)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range k.f.listed {
		keys = append(keys, e.Key())
	}
	slices.Sort(keys)
	wantList := format.EntryListHeader + "\n" + strings.Join(keys, "\n") + "\n"
	// Sizes are exact, and stating them sends nothing.
	if d := storefixture.Delta(k.f.st, func() {
		for rel, size := range map[string]int{".oxy/journal": len(want), ".oxy/retired": 0, ".oxy/lists/" + k.f.list: len(wantList)} {
			if fi, err := os.Lstat(k.p(rel)); err != nil || fi.Size() != int64(size) {
				t.Errorf("lstat /%s: %v %v, want %d bytes", rel, fi, err, size)
			}
		}
		if fi, err := os.Lstat(k.p(".oxy/status")); err != nil || fi.Size() == 0 {
			t.Errorf("lstat /.oxy/status: %v %v", fi, err)
		}
	}); d.Total() != 0 {
		t.Errorf("lstat of .oxy sent %v", d)
	}
	// The records are the view's: reading them sends nothing.
	if got := read(".oxy/journal", 0); !bytes.Equal(got, want) {
		t.Errorf(".oxy/journal = %q, want %q", got, want)
	}
	if got := read(".oxy/retired", 0); len(got) != 0 {
		t.Errorf(".oxy/retired = %q, want empty", got)
	}
	if got := read(".oxy/lists/"+k.f.list, 1); string(got) != wantList {
		t.Errorf("list = %q, want %q", got, wantList)
	}
	des, err := os.ReadDir(k.p(".oxy/lists"))
	if err != nil || len(des) != 1 || des[0].Name() != k.f.list {
		t.Errorf(".oxy/lists = %v, %v", des, err)
	}
}

func checkRefused(t *testing.T, k *kit) {
	sig := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	seal := storefixture.Ent(format.KindSeal, "ab12cd34", "change-1")
	obj := k.p("sig/ab/12cd34")
	create := func(p string) error {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			err = f.Close()
		}
		return err
	}
	rw := func(rwErr error) error {
		if k.ro {
			return syscall.EROFS
		}
		return rwErr
	}
	cases := []struct {
		what string
		want error
		fn   func() error
	}{
		{"rm a signature", rw(syscall.EPERM), func() error { return os.Remove(k.srv.path(sig)) }},
		{"rm an index entry", rw(syscall.EPERM), func() error { return os.Remove(k.srv.path(seal)) }},
		{"rmdir an object", rw(syscall.EPERM), func() error { return syscall.Rmdir(obj) }},
		{"rename an entry", rw(syscall.EPERM), func() error { return os.Rename(k.srv.path(sig), obj+"/mallory") }},
		{"link an entry", rw(syscall.EPERM), func() error { return os.Link(k.srv.path(sig), obj+"/mallory") }},
		{"symlink", rw(syscall.EPERM), func() error { return os.Symlink("alice", obj+"/mallory") }},
		{"mknod", rw(syscall.EPERM), func() error { return syscall.Mknod(obj+"/mallory", syscall.S_IFIFO|0o644, 0) }},
		{"create in the root", rw(syscall.EPERM), func() error { return create(k.p("mallory")) }},
		{"create under sig/ab", rw(syscall.EPERM), func() error { return create(k.p("sig/ab/mallory")) }},
		{"create under by-signer", rw(syscall.EPERM), func() error { return create(k.p("by-signer/alice/abcd")) }},
		{"mkdir under by-signer", rw(syscall.EPERM), func() error { return os.Mkdir(k.p("by-signer/mallory"), 0o755) }},
		{"mkdir in an object", rw(syscall.EPERM), func() error { return os.Mkdir(obj+"/mallory", 0o755) }},
		{"create in .oxy", syscall.EROFS, func() error { return create(k.p(".oxy/mallory")) }},
		{"write .oxy/status", syscall.EROFS, func() error { return os.WriteFile(k.p(".oxy/status"), []byte("x"), 0o644) }},
		{"set user.oxy.key", rw(syscall.EPERM), func() error { return syscall.Setxattr(k.srv.path(sig), xattrKey, []byte("x"), 0) }},
		{"set another xattr", rw(syscall.ENOTSUP), func() error { return syscall.Setxattr(k.srv.path(sig), "user.x", []byte("x"), 0) }},
		{"remove user.oxy.key", rw(syscall.EPERM), func() error { return syscall.Removexattr(k.srv.path(sig), xattrKey) }},
		{"name with a newline", rw(syscall.EINVAL), func() error { return create(obj + "/bad\nname") }},
		{"name of 256 bytes", rw(syscall.EINVAL), func() error { return create(obj + "/" + strings.Repeat("x", 256)) }},
		{"name not UTF-8", rw(syscall.EINVAL), func() error { return create(obj + "/bad\xff") }},
		{"uppercase hh", rw(syscall.EINVAL), func() error { return os.Mkdir(k.p("sig/AB"), 0o755) }},
		{"hh of 3", rw(syscall.EINVAL), func() error { return os.Mkdir(k.p("sig/abc"), 0o755) }},
		{"odd object id", rw(syscall.EINVAL), func() error { return os.Mkdir(k.p("sig/ab/123"), 0o755) }},
		{"uppercase object id", rw(syscall.EINVAL), func() error { return os.Mkdir(k.p("sig/ab/12AB"), 0o755) }},
		{"truncate a signature by name", rw(syscall.EPERM), func() error { return os.Truncate(k.srv.path(sig), 3) }},
		{"grow an index entry", rw(syscall.EINVAL), func() error { return os.Truncate(k.srv.path(seal), 3) }},
		{"chmod a signature", rw(syscall.EPERM), func() error { return os.Chmod(k.srv.path(sig), 0o600) }},
		{"chmod an index entry", rw(syscall.EPERM), func() error { return os.Chmod(k.srv.path(seal), 0o600) }},
		{"chown a signature", rw(syscall.EPERM), func() error { return os.Chown(k.srv.path(sig), 12345, 12345) }},
		{"set a signature's times", rw(syscall.EPERM), func() error { return os.Chtimes(k.srv.path(sig), time.Unix(1, 0), time.Unix(1, 0)) }},
		{"set an index entry's times to now by name", rw(syscall.EPERM), func() error { now := time.Now(); return os.Chtimes(k.srv.path(seal), now, now) }},
		{"chmod an object directory", rw(syscall.EPERM), func() error { return os.Chmod(obj, 0o700) }},
		{"chown an object directory", rw(syscall.EPERM), func() error { return os.Chown(obj, 12345, 12345) }},
		{"set a directory's times", rw(syscall.EPERM), func() error { return os.Chtimes(k.p("sig"), time.Unix(1, 0), time.Unix(1, 0)) }},
		{"chmod the root", rw(syscall.EPERM), func() error { return os.Chmod(k.p(""), 0o700) }},
		{"chmod .oxy/status", syscall.EROFS, func() error { return os.Chmod(k.p(".oxy/status"), 0o600) }},
		{"bytes into an index entry", rw(syscall.EINVAL), func() error {
			f, err := os.OpenFile(k.srv.path(seal), os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.Write([]byte("x"))
			f.Close()
			return err
		}},
	}
	before := k.f.st.Counts()
	for _, c := range cases {
		if err := c.fn(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.what, err, c.want)
		}
	}
	if d := k.f.st.Counts().Sub(before); d.Put != 0 || d.Delete != 0 {
		t.Errorf("refused writes sent %v", d)
	}
	if _, err := os.Lstat(obj + "/mallory"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("mallory: %v, want ENOENT", err)
	}
	if got, err := os.ReadFile(k.srv.path(sig)); err != nil || !bytes.Equal(got, k.f.sigs[sig.Key()]) {
		t.Errorf("%s changed: %d bytes, %v", sig.Key(), len(got), err)
	}
}
