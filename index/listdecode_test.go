package index

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// A list decoded by the pipeline (scan, split in place, build; the last
// kind's arrays sized from a sample) holds exactly what adding its keys
// one by one to a run holds: the generator's mix of every kind, large
// enough for the sample to size the rest (sizerSample), with malformed
// keys among them, which are counted and skipped.
func TestListDecodeBuildsTheSetKeyByKey(t *testing.T) {
	ctx := context.Background()
	st := storefixture.NewMem(t)
	if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: 150_000, Seed: 11, Fold: true, SkipObjects: true}); err != nil {
		t.Fatal(err)
	}
	sn, err := st.ReadSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := st.Get(ctx, sn.LiveLists()[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := format.DecodeEntryListAll(data)
	if err != nil {
		t.Fatal(err)
	}
	// Malformed keys where every kind's keys lie, and past the last.
	keys = append(keys, "accepted/ab/xyz/v", "receipt/00/0/x", "sig/ab/cdef", "sig/ff/Ab/v", "zzz/ab/cd/v")
	slices.Sort(keys)
	_, data, err = format.EncodeEntryListSorted(keys)
	if err != nil {
		t.Fatal(err)
	}

	got, err := decodeEntryList(1, "list x", bytes.NewReader(data), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !got.r.kinds[lastKind].sized {
		t.Fatalf("the last kind's arrays were not sized from a sample (%d entries)", got.r.kinds[lastKind].nEntries())
	}

	sameAsKeyByKey(t, got, keys)
	for k := range got.r.kinds {
		g := &got.r.kinds[k]
		if g.nEntries() == 0 {
			t.Errorf("kind %s: no entries; the test wants every kind", format.Kind(k))
		}
		// Sized arrays keep at most a sixteenth to spare; the others none.
		if c, n := cap(g.vals), len(g.vals); c > n+n/16 || !g.sized && c != n {
			t.Errorf("kind %s: %d entries in a capacity of %d", format.Kind(k), n, c)
		}
	}
	if got.mal.n != 5 {
		t.Errorf("%d malformed keys counted, want 5", got.mal.n)
	}
}

// sameAsKeyByKey holds a decoded list to what adding its keys one by one
// to a run makes, as a journal's are: no chunks, no sizing.
func sameAsKeyByKey(t *testing.T, got *decodedList, keys []string) {
	t.Helper()
	want := newBuilder()
	wr := &run{}
	mal := malformed{where: "list x"}
	var obj [format.MaxObjectBytes]byte
	for _, key := range keys {
		kind, ob, val, ok := format.SplitKey(key, &obj)
		if !ok {
			mal.add([]byte(key))
			continue
		}
		if !wr.kinds[kind].add(ob, want.internOf(kind, []byte(val)), 1) {
			t.Fatalf("%q out of order", key)
		}
	}
	for k := range wr.kinds {
		wr.kinds[k].finish()
	}
	if got.keys != len(keys) || got.mal.n != mal.n || got.mal.first != mal.first {
		t.Errorf("keys %d, malformed %d (first %q); want %d, %d (%q)", got.keys, got.mal.n, got.mal.first, len(keys), mal.n, mal.first)
	}
	for k := range wr.kinds {
		g, w := &got.r.kinds[k], &wr.kinds[k]
		if !bytes.Equal(g.objs, w.objs) || !slices.Equal(g.objOff, w.objOff) || !slices.Equal(g.first, w.first) ||
			!slices.Equal(g.srcs, w.srcs) || g.hh != w.hh || len(g.vals) != len(w.vals) {
			t.Fatalf("kind %s: %d objects, %d entries; one by one %d, %d, or their arrays differ",
				format.Kind(k), g.nObj(), g.nEntries(), w.nObj(), w.nEntries())
		}
		for i := range g.vals {
			if gv, wv := got.vt.str(g.vals[i]), want.vt.str(w.vals[i]); gv != wv {
				t.Fatalf("kind %s entry %d: value %q, one by one %q", format.Kind(k), i, gv, wv)
			}
		}
	}
	if got.vt.n() != want.vt.n() {
		t.Errorf("%d values, one by one %d", got.vt.n(), want.vt.n())
	}
}

// FuzzListDecode: any keys, sorted into a list, decode to what adding them
// one by one makes (split in place, malformed keys counted), or the decode
// says why not; with build workers (Options.BuildWorkers) to the same.
func FuzzListDecode(f *testing.F) {
	f.Add("sig/ab/cdef/alice\nseal/ab/cdef/0123456789abcdef0123456789abcdef01234567\nsig/ab/cdef/bob")
	f.Add("accepted/ab/xyz/v\nsig/ff/Ab/v\nsig/ab/cd\ncert/00/11/k")
	f.Fuzz(func(t *testing.T, text string) {
		keys := slices.Compact(slices.Sorted(slices.Values(strings.Split(text, "\n"))))
		keys = slices.DeleteFunc(keys, func(k string) bool { return k == "" || len(k) > format.MaxEntryListLine })
		_, data, err := format.EncodeEntryListSorted(keys)
		if err != nil {
			t.Skip(err)
		}
		got, err := decodeEntryList(1, "list x", bytes.NewReader(data), 0, 0)
		if err != nil {
			t.Fatal(err) // every key is in order: nothing a decode refuses
		}
		sameAsKeyByKey(t, got, keys)
		par, err := decodeEntryListWith(1, "list x", bytes.NewReader(data), 0, 0, 2) // Options.BuildWorkers
		if err != nil {
			t.Fatal(err)
		}
		sameDecodedList(t, got, par)
	})
}
