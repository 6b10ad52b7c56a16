package index

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// openCached opens an index on st with a list cache in dir (none when
// dir is ""), and loads it.
func openCached(t testing.TB, st *store.Store, dir string, maxBytes int64) (*Index, *warnings) {
	t.Helper()
	w := &warnings{}
	opts := Options{Warn: w.add}
	if dir != "" {
		c, err := OpenListCache(dir, maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		opts.ListCache = c
	}
	ix, err := Open(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if opts.ListCache != nil {
		opts.ListCache.Wait()
	}
	return ix, w
}

// setText is every entry of an index's view with its source, the view's
// mode, sources and malformed counts: what an open built, in text.
func setText(ix *Index) []string {
	v := ix.v.Load()
	s := v.base
	out := []string{"mode " + v.mode, fmt.Sprintf("malformed %d", v.malformed), fmt.Sprintf("sources %q", s.srcNames)}
	for k := range s.kinds {
		ks := &s.kinds[k]
		for i := range ks.nObj() {
			for j := ks.first[i]; j < ks.first[i+1]; j++ {
				out = append(out, fmt.Sprintf("%s %x %s %d", format.Kinds[k], ks.obj(i), s.vt.str(ks.vals[j]), ks.srcs[j]))
			}
		}
	}
	out = append(out, fmt.Sprintf("signers %q", s.signerNames()))
	return out
}

// cacheFiles lists the list files under a cache directory.
func cacheFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	stores, _ := os.ReadDir(dir)
	for _, s := range stores {
		ents, _ := os.ReadDir(filepath.Join(dir, s.Name()))
		for _, e := range ents {
			out = append(out, filepath.Join(dir, s.Name(), e.Name()))
		}
	}
	return out
}

// cacheGenStore is a folded store of n entries (a complete list) and a journal
// of a few more lines beside it.
func cacheGenStore(t testing.TB, n int) *store.Store {
	t.Helper()
	st := storefixture.NewMem(t)
	if _, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: n, Seed: 11, Fold: true, SkipObjects: true}); err != nil {
		t.Fatal(err)
	}
	storefixture.WriteJournal(t, st, 0, storefixture.Ent(format.KindSig, objA, "journal-only"))
	return st
}

// A second open with the cache maps the list: no GET of it, and the very
// set an open without the cache builds.
func TestListCacheHitSendsNoListGET(t *testing.T) {
	st := cacheGenStore(t, 5000)
	dir := t.TempDir()
	plain, _ := openCached(t, st, "", 0)
	first, _ := openCached(t, st, dir, 0)
	if n := len(cacheFiles(t, dir)); n != 1 {
		t.Fatalf("%d files cached, want 1 (the list)", n)
	}
	var second *Index
	d := storefixture.Delta(st, func() { second, _ = openCached(t, st, dir, 0) })
	if want := (store.Counts{List: 1, Get: 2}); d != want {
		t.Fatalf("an open with the list cached sent %v, want %v (the snapshot alone)", d, want)
	}
	want := setText(plain)
	for name, ix := range map[string]*Index{"first (decoded)": first, "second (mapped)": second} {
		if got := setText(ix); !slices.Equal(got, want) {
			t.Fatalf("%s open with the cache: %d lines of set, want %d; first difference %v", name, len(got), len(want), firstDiff(got, want))
		}
		if got, w := walkEntries(t, ix), walkEntries(t, plain); !slices.Equal(got, w) {
			t.Fatalf("%s: the tree differs", name)
		}
	}
	if second.v.Load().base.pins == nil {
		t.Fatal("the second open's set does not hold the mapping it reads")
	}
}

func mustObj(t testing.TB, obj string) []byte {
	var buf [format.MaxObjectBytes]byte
	ob, ok := format.DecodeObjectID(obj, &buf)
	if !ok {
		t.Fatalf("object %q", obj)
	}
	return slices.Clone(ob)
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("at %d: %q vs %q", i, a[i], b[i])
		}
	}
	return "one is a prefix of the other"
}

// A cache file that is not the list (corrupt, cut short, of another store
// or list, of another version) is never believed: the list is read from
// the store, the file reported once and written afresh.
func TestListCacheBadFileIgnoredAndRebuilt(t *testing.T) {
	st := cacheGenStore(t, 3000)
	plain, _ := openCached(t, st, "", 0)
	want := setText(plain)
	for _, tc := range []struct {
		name string
		harm func(t *testing.T, path string)
		warn string
	}{
		{"a flipped byte", func(t *testing.T, path string) { flipByte(t, path, -100) }, "checksum"},
		{"a flipped header byte", func(t *testing.T, path string) { flipByte(t, path, listFileFixed+20) }, "checksum"},
		{"cut short", func(t *testing.T, path string) {
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, "truncated"},
		{"empty", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}, "empty"},
		{"another version", func(t *testing.T, path string) { flipByte(t, path, 8) }, "version"},
		{"another store's", func(t *testing.T, path string) {
			rewrite(t, path, func(d *decodedList, k listFileKey) listFileKey { k.store = cacheStoreID("mem://elsewhere"); return k })
		}, "another store"},
		{"another list's", func(t *testing.T, path string) {
			rewrite(t, path, func(d *decodedList, k listFileKey) listFileKey {
				k.name = format.EntryListName(strings.Repeat("0", 64), true)
				return k
			})
		}, "of list"},
		{"another size (the listing's differs)", func(t *testing.T, path string) {
			rewrite(t, path, func(d *decodedList, k listFileKey) listFileKey { k.size++; return k })
		}, "of list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			openCached(t, st, dir, 0)
			files := cacheFiles(t, dir)
			if len(files) != 1 {
				t.Fatalf("%d files", len(files))
			}
			tc.harm(t, files[0])
			var ix *Index
			var w *warnings
			d := storefixture.Delta(st, func() { ix, w = openCached(t, st, dir, 0) })
			if want := (store.Counts{List: 1, Get: 3}); d != want {
				t.Fatalf("open sent %v, want %v (the list read from the store)", d, want)
			}
			if got := setText(ix); !slices.Equal(got, want) {
				t.Fatalf("set differs: %v", firstDiff(got, want))
			}
			if !hasWarning(w.all(), "list cache: ignored") || !hasWarning(w.all(), tc.warn) {
				t.Fatalf("warnings %q, want one that the file was ignored (%s)", w.all(), tc.warn)
			}
			// Written afresh: the next open maps it.
			d = storefixture.Delta(st, func() { ix, _ = openCached(t, st, dir, 0) })
			if want := (store.Counts{List: 1, Get: 2}); d != want {
				t.Fatalf("the open after sent %v, want %v (the file rebuilt)", d, want)
			}
			if got := setText(ix); !slices.Equal(got, want) {
				t.Fatalf("set differs after the rebuild: %v", firstDiff(got, want))
			}
		})
	}
}

func flipByte(t *testing.T, path string, at int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if at < 0 {
		at += len(data)
	}
	data[at] ^= 0x40
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// rewrite writes the file again, whole and summed, under another key.
func rewrite(t *testing.T, path string, change func(*decodedList, listFileKey) listFileKey) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	k := keyOfFile(t, data)
	d, err := parseListFile(data, k)
	if err != nil {
		t.Fatal(err)
	}
	k2 := change(d, k)
	d.name = k2.name
	if err := os.WriteFile(path, encodeListFile(k2, d), 0o600); err != nil {
		t.Fatal(err)
	}
}

// keyOfFile reads the key a file names from its header.
func keyOfFile(t testing.TB, data []byte) listFileKey {
	k, ok := headerKey(data)
	if !ok {
		t.Fatal("no header")
	}
	return k
}

func headerKey(data []byte) (listFileKey, bool) {
	r := &listFileReader{b: data, at: listFileFixed + 2*8}
	for range 4 {
		r.u64()
	}
	size := int64(r.u64())
	r.u64()
	st, name := r.str(), r.str()
	return listFileKey{store: st, name: name, size: size}, !r.bad
}

// sumFile sets a file's checksum to its bytes'.
func sumFile(data []byte) {
	binary.NativeEndian.PutUint32(data[16:], crc32.Checksum(data[20:], crcTable))
}

// A list retired (a complete fold wrote a new one) has its file removed
// by the open that sees it retired; the open with the cache builds what
// one without does, then and after a partial list is added.
func TestListCacheRetireDropsFileAndAnswersAsWithout(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	a := storefixture.Ent(format.KindSig, objA, "alice")
	b := storefixture.Ent(format.KindSig, objB, "bob")
	c := storefixture.Ent(format.KindSig, objC, "carol")
	seal := storefixture.Ent(format.KindSeal, objA, strings.Repeat("ab", 32))
	storefixture.PutEntries(t, st, a, b, c, seal)
	old := storefixture.WriteEntryList(t, st, true, a, b, seal)
	dir := t.TempDir()
	cache, err := OpenListCache(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	cached, err := Open(ctx, st, Options{ListCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	plain, _ := openIndex(t, st)
	same := func(when string) {
		t.Helper()
		for _, ix := range []*Index{cached, plain} {
			if err := ix.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
		}
		cache.Wait()
		if got, want := setText(cached), setText(plain); !slices.Equal(got, want) {
			t.Fatalf("%s: the set with the cache differs: %v", when, firstDiff(got, want))
		}
		if got, want := walkEntries(t, cached), walkEntries(t, plain); !slices.Equal(got, want) {
			t.Fatalf("%s: the tree with the cache differs", when)
		}
	}
	same("first open")
	if _, err := os.Stat(filepath.Join(dir, cacheStoreID(st.URL()), old)); err != nil {
		t.Fatalf("the list is not cached: %v", err)
	}
	// A complete fold: a new complete list, the old one retired.
	fresh := storefixture.WriteEntryList(t, st, true, a, b, c, seal)
	storefixture.Retire(t, st, old)
	same("after the fold")
	if _, err := os.Stat(filepath.Join(dir, cacheStoreID(st.URL()), old)); !os.IsNotExist(err) {
		t.Fatalf("the retired list's file is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, cacheStoreID(st.URL()), fresh)); err != nil {
		t.Fatalf("the new list is not cached: %v", err)
	}
	// A partial list added, then a fresh open of both with the cache.
	d := storefixture.Ent(format.KindSig, objD, "dave")
	storefixture.PutEntries(t, st, d)
	storefixture.WriteEntryList(t, st, false, d)
	storefixture.WriteJournal(t, st, time.Now().UnixMilli(), d) // its writer folded its line
	same("after a partial list")
	if n := len(cacheFiles(t, dir)); n != 2 {
		t.Fatalf("%d files cached, want 2 (the complete list and the partial one)", n)
	}
	again, _ := openCached(t, st, dir, 0)
	fresh2, _ := openCached(t, st, "", 0)
	if got, want := setText(again), setText(fresh2); !slices.Equal(got, want) {
		t.Fatalf("a fresh open of two cached lists differs: %v", firstDiff(got, want))
	}
	if !slices.Contains(setText(again), fmt.Sprintf("sig %x dave 2", mustObj(t, objD))) {
		t.Fatalf("the partial list's entry is missing: %q", setText(again))
	}
}

// The cache is bounded: the files used longest ago go first.
func TestListCacheEvictsOldest(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenListCache(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	sid := cacheStoreID("mem://x")
	var paths []string
	var size int64
	for i := range 4 {
		keys := []string{storefixture.Ent(format.KindSig, objA, fmt.Sprintf("signer-%d", i)).Key()}
		id, data, err := format.EncodeEntryList(keys)
		if err != nil {
			t.Fatal(err)
		}
		name := format.EntryListName(id, true)
		d, err := decodeEntryList(1, name, strings.NewReader(string(data)), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		k := listFileKey{store: sid, name: name, size: int64(len(data))}
		c.put(k, d, func(m string) { t.Error(m) }, nil)
		c.Wait()
		path, _ := c.listPath(sid, name)
		old := time.Now().Add(time.Duration(i-10) * time.Minute) // file 0 the oldest
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(path)
		size = fi.Size()
		paths = append(paths, path)
	}
	// Files that are not the cache's are left alone, however old: a
	// folder beside the stores' (the demo store's) and a stray file.
	foreign := []string{filepath.Join(dir, "demo-store", "journal"), filepath.Join(dir, sid, "notes.txt")}
	for _, f := range foreign {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, make([]byte, 4*size), 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	c.maxBytes = 2*size + size/2 // room for two
	c.evict()
	for _, f := range foreign {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("eviction touched %s, not the cache's: %v", f, err)
		}
	}
	for i, p := range paths {
		_, err := os.Stat(p)
		if gone := os.IsNotExist(err); gone != (i < 2) {
			t.Errorf("file %d (of 4, oldest first): gone=%v, want %v", i, gone, i < 2)
		}
	}
}

// Directories are made 0700 and files 0600; a directory others may write,
// or another user's, is refused.
func TestListCachePermissions(t *testing.T) {
	st := cacheGenStore(t, 100)
	dir := filepath.Join(t.TempDir(), "a", "cache")
	openCached(t, st, dir, 0)
	for _, p := range append([]string{dir, filepath.Join(dir, cacheStoreID(st.URL()))}, cacheFiles(t, dir)...) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenListCache(open, 0); err == nil || !strings.Contains(err.Error(), "others may write") {
		t.Errorf("a world-writable directory: %v, want refused", err)
	}
	if err := os.Chmod(open, 0o770); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenListCache(open, 0); err == nil {
		t.Error("a group-writable directory was taken")
	}
	if os.Geteuid() == 0 {
		theirs := t.TempDir()
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenListCache(theirs, 0); err == nil || !strings.Contains(err.Error(), "not this user") {
			t.Errorf("another user's directory: %v, want refused", err)
		}
	}
}

// FuzzListFile: parseListFile never panics, and a file it takes builds a
// set whose every lookup stays in range.
func FuzzListFile(f *testing.F) {
	keys := listKeys(200, 3)
	keys = append(keys, storefixture.Ent(format.KindSeal, objA, strings.Repeat("cd", 32)).Key())
	slices.Sort(keys)
	id, data, err := format.EncodeEntryList(keys)
	if err != nil {
		f.Fatal(err)
	}
	name := format.EntryListName(id, true)
	d, err := decodeEntryList(1, name, strings.NewReader(string(data)), 0, 0)
	if err != nil {
		f.Fatal(err)
	}
	k := listFileKey{store: "s", name: name, size: int64(len(data))}
	good := encodeListFile(k, d)
	back, err := parseListFile(good, k)
	if err != nil || !sameDecoded(back, d) {
		f.Fatalf("a file read back: %v", err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		// Aligned, as a mapping is.
		buf := make([]uint64, (len(b)+7)/8)
		data := asBytes(buf)[:len(b)]
		copy(data, b)
		if len(data) >= listFileFixed {
			// Re-sum, so the fuzzer reaches the checks behind the sum.
			sumFile(data)
		}
		key := k
		if hk, ok := headerKey(data); ok {
			key = hk
		}
		d, err := parseListFile(data, key)
		if err != nil {
			return
		}
		bl := newBuilder()
		s := bl.set(bl.adopt(d, bl.addSource("list "+d.name)))
		for _, kind := range format.Kinds {
			for _, hh := range s.hhNames(kind) {
				for _, rest := range s.restNames(kind, hh) {
					s.values(kind, hh+rest)
				}
			}
		}
		s.signerNames()
	})
}
