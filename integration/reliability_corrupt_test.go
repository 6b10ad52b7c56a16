package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// TestReliabilityCorruptStore: a truncated live list, a garbage live list, a
// journal with lines that do not parse and a retired record naming keys that
// are gone each give a warning and a safe fallback: `oxyfs ls -R` and a
// mount still show every entry, `oxyfs check` reports the damage (exit 1
// for what a fold cannot put right by itself), `oxyfs fold` and `oxyfs gc`
// carry on, nothing crashes, and no key the bucket held is deleted.
func TestReliabilityCorruptStore(t *testing.T) {
	t.Parallel()
	const entries = 100
	type corruption struct {
		name string
		// damage corrupts the store and returns the warning readers give
		// ("" when readers are not affected, and only check, fold and gc
		// warn) and what the check report must say.
		damage func(t *testing.T, st *store.Store, sn *store.Snapshot) (warn, report string)
		// fixedByFold: after one fold, check finds nothing.
		fixedByFold bool
	}
	ctx := context.Background()
	liveList := func(t *testing.T, sn *store.Snapshot) string {
		live := sn.LiveLists()
		if len(live) != 1 {
			t.Fatalf("want one live list after gen and fold, have %v", live)
		}
		return live[0].Name
	}
	cases := []corruption{
		{"truncated live list", func(t *testing.T, st *store.Store, sn *store.Snapshot) (string, string) {
			name := liveList(t, sn)
			data, err := st.Get(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Put(ctx, name, data[:len(data)/2]); err != nil {
				t.Fatal(err)
			}
			return "falling back to prefix listing", name
		}, true},
		{"garbage live list", func(t *testing.T, st *store.Store, _ *store.Snapshot) (string, string) {
			junk := make([]byte, 4096)
			rand.Read(junk)
			name := "pack-" + strings.Repeat("ab", 32) + ".entries"
			if err := st.Put(ctx, name, junk); err != nil {
				t.Fatal(err)
			}
			return "falling back to prefix listing", name
		}, true},
		{"journal lines that do not parse", func(t *testing.T, st *store.Store, _ *store.Snapshot) (string, string) {
			bad := "garbage line\n12x sig/ab/cdef/x\n\xff\xfe not utf-8\n0 sig/AB/cdef/upper\n0 ../../etc/passwd\n\n0\n"
			if _, err := st.UpdateRecord(ctx, format.JournalKey, func(old []byte, _ bool) ([]byte, error) {
				return append(append([]byte(nil), old...), bad...), nil
			}); err != nil {
				t.Fatal(err)
			}
			return "malformed", "garbage line"
		}, false},
		{"retired record naming missing keys", func(t *testing.T, st *store.Store, _ *store.Snapshot) (string, string) {
			now := time.Now().UnixMilli()
			old := now - 2*time.Hour.Milliseconds()
			// Also a live signature, retired "over an hour ago": a
			// collection must not delete it (the keys lost check below).
			items, _, err := st.ListPage(ctx, "sig/", "", nil, 1)
			if err != nil || len(items) == 0 {
				t.Fatalf("list sig/: %v, %v", items, err)
			}
			rec := fmt.Sprintf("%d pack-%s.entries\n%d pack-%s.entries-part\nnot a line\n%d %s\n",
				now, strings.Repeat("cd", 32), old, strings.Repeat("ef", 32), old, items[0].Key)
			if _, err := st.UpdateRecord(ctx, format.RetiredKey, func(b []byte, _ bool) ([]byte, error) {
				return append(append([]byte(nil), b...), rec...), nil
			}); err != nil {
				t.Fatal(err)
			}
			return "", "retired-key-gone: retired keys are gone already"
		}, false},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			srv, url := s3Store(t)
			genFolded(t, srv, url, entries, 4)
			st := openStore(t, url)
			sn, err := st.ReadSnapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			warn, report := c.damage(t, st, sn)
			before := readBucket(t, st)
			var outputs []result
			cli := func(args ...string) result {
				r := oxyfs(t, srv, args...)
				outputs = append(outputs, r)
				if r.code != 0 && r.code != 1 {
					t.Errorf("exit %d, want 0 or 1:\n%s", r.code, r)
				}
				return r
			}

			// Readers: every entry, and a warning.
			ls := cli("ls", "-R", url)
			if n := len(lines(ls.stdout)); ls.code != 0 || n != entries {
				t.Errorf("oxyfs ls -R on the damaged store: exit %d, %d entries, want 0 and %d\n%s", ls.code, n, entries, ls)
			}
			if warn != "" && (!strings.Contains(ls.stderr, "warning") || !strings.Contains(ls.stderr, warn)) {
				t.Errorf("oxyfs ls -R: no warning saying %q:\n%s", warn, ls.stderr)
			}
			mnt := t.TempDir()
			m := startMount(t, srv, url, mnt)
			if n := len(lines(run(t, "find", mnt, "-type", "f", "-not", "-path", "*/.oxy/*"))); n != entries {
				t.Errorf("find through a mount of the damaged store: %d entries, want %d", n, entries)
			}
			if warn != "" && !strings.Contains(m.stderr.String(), warn) {
				t.Errorf("the mount logged no warning saying %q:\n%s", warn, m.stderr)
			}

			// check reports it.
			chk := cli("check", url)
			if !strings.Contains(chk.stdout+chk.stderr, report) {
				t.Errorf("oxyfs check does not report %q:\n%s", report, chk)
			}
			// fold carries on (and, for a damaged list, puts it right);
			// gc carries on and deletes nothing it should not.
			fold := cli("fold", url)
			if fold.code != 0 {
				t.Errorf("oxyfs fold on the damaged store:\n%s", fold)
			}
			if warn == "" && !strings.Contains(fold.stderr, "warning") {
				t.Errorf("oxyfs fold gave no warning about the damage:\n%s", fold)
			}
			after := cli("check", url)
			if c.fixedByFold && after.code != 0 {
				t.Errorf("oxyfs check after a fold: want no problem left\n%s", after)
			}
			if !c.fixedByFold && (after.code != 1 || !strings.Contains(after.stdout+after.stderr, report)) {
				t.Errorf("oxyfs check after a fold: want the damage still reported (exit 1, %q)\n%s", report, after)
			}
			if r := cli("gc", url); r.code != 0 {
				t.Errorf("oxyfs gc on the damaged store:\n%s", r)
			}
			if r := cli("put", url, "seal/ab/cdef/after-damage"); r.code != 0 {
				t.Errorf("oxyfs put on the damaged store:\n%s", r)
			}
			ls = cli("ls", "-R", url)
			if n := len(lines(ls.stdout)); n != entries+1 {
				t.Errorf("oxyfs ls -R after fold, gc and a put: %d entries, want %d", n, entries+1)
			}

			// Nothing crashed; nothing the bucket held before is gone
			// (a record's content may change, never vanish).
			for _, r := range outputs {
				if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
					t.Errorf("oxyfs crashed:\n%s", r)
				}
			}
			now := readBucket(t, st)
			for k := range before.keys {
				if _, ok := now.keys[k]; !ok {
					t.Errorf("%s was in the bucket before and is gone", k)
				}
			}
			if c.name == "journal lines that do not parse" && !strings.Contains(now.journal, "garbage line\n") {
				t.Errorf("the journal lost its lines that do not parse:\n%s", clip(now.journal, 2000))
			}
			if c.name == "retired record naming missing keys" {
				// gc dropped the line of the key retired over an hour ago,
				// which it found gone, and kept the rest.
				if strings.Contains(now.retired, strings.Repeat("ef", 32)) || !strings.Contains(now.retired, strings.Repeat("cd", 32)) || !strings.Contains(now.retired, "not a line\n") {
					t.Errorf("the retired record after gc:\n%s", clip(now.retired, 2000))
				}
			}
			relFigure(t, "%s: ls -R and a mount show %d of %d entries; check exit %d before a fold, %d after; fold, gc and a put exit 0; keys lost 0",
				c.name, entries, entries, chk.code, after.code)
		})
	}
}
