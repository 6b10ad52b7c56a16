package index

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/oxyfs/oxyfs/store/format"
)

// The arrays of the kind whose keys sort last (sig) are sized from the
// text the list's frame declares and a sample of its keys before they
// fill (lastKindSizer): decoding a list of signatures allocates them for
// the sample and once more for the rest, not once per doubling, and the
// finished set holds them with at most a sixteenth to spare (tight).
func TestListArraysAreSizedBeforeTheyFill(t *testing.T) {
	const n = 200_000
	_, data, err := format.EncodeEntryList(listKeys(n, 3))
	if err != nil {
		t.Fatal(err)
	}
	decode := func(data []byte) *run {
		b := newBuilder()
		r, err := b.decodeList(b.addSource("list x"), "x", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := &decode(data).kinds[format.KindSig]
	if k.nEntries() != n {
		t.Fatalf("%d entries, want %d", k.nEntries(), n)
	}
	// Sized for the rest of the list from the sample, 3% to spare: grown
	// by doubling, the capacity would be a power-of-two multiple.
	if c := cap(k.vals); c < n || c > n+n/16 || !k.sized {
		t.Errorf("vals: capacity %d for %d entries (sized: %v), want %d..%d (sized before it filled)", c, n, k.sized, n, n+n/16)
	}
	// The same list in a frame that declares no size is grown by append
	// (lastKindSizer.begin); what sizing saves is counted against that,
	// in this run: the allocations of the decode depend on the build (the
	// race detector adds its own) and on how its goroutines were woken.
	unsizedData := withoutDeclaredSize(t, data)
	if u := &decode(unsizedData).kinds[format.KindSig]; u.sized || u.nEntries() != n {
		t.Fatalf("the frame without a declared size: %d entries, sized %v; want %d, grown by append", u.nEntries(), u.sized, n)
	}
	// The fewest of five runs each: a collection during a run empties the
	// decode's buffer pools, whose refills are not what sizing saves (the
	// package's race run once counted 3 more in the sized decode).
	sized := fewestAllocs(5, func() { decode(data) })
	unsized := fewestAllocs(5, func() { decode(unsizedData) })
	// One array of n entries grown by append, from empty: its
	// allocations. Sizing saves that for vals and srcs (n entries each)
	// and for the objects' arrays, less the sample's reservation and the
	// one for the rest: at least twice it, less those.
	var grown []uint32
	growth := testing.AllocsPerRun(1, func() {
		grown = grown[:0:0]
		for i := range n {
			grown = append(grown, uint32(i))
		}
	})
	t.Logf("decode of %d keys: %.0f allocations sized, %.0f grown by append; one array grown by append: %.0f", n, sized, unsized, growth)
	if want := 2*growth - 4; unsized-sized < want {
		t.Errorf("sizing saved %.0f allocations (%.0f sized, %.0f grown by append), want ≥ %.0f (vals and srcs not grown by append: %.0f allocations each)", unsized-sized, sized, unsized, want, growth)
	}
}

// fewestAllocs is the fewest allocations f made in n runs.
func fewestAllocs(n int, f func()) float64 {
	fewest := testing.AllocsPerRun(1, f)
	for range n - 1 {
		fewest = min(fewest, testing.AllocsPerRun(1, f))
	}
	return fewest
}

// withoutDeclaredSize is data's list again in a zstd frame that does not
// declare its content size.
func withoutDeclaredSize(t *testing.T, data []byte) []byte {
	t.Helper()
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	text, err := dec.DecodeAll(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc, err := zstd.NewWriter(&out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write(text); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// intern gives one id per distinct value, met again in any order.
func TestInternOneIDPerValue(t *testing.T) {
	b := newBuilder()
	var vals []string
	for i := range 600 {
		vals = append(vals, strings.Repeat("s", i%40+1)+fmt.Sprint(i%300))
	}
	ids := map[string]uint32{}
	for round := range 3 {
		for i, v := range vals {
			if round == 1 {
				v = vals[len(vals)-1-i]
			}
			id := b.intern([]byte(v))
			if old, ok := ids[v]; ok && old != id {
				t.Fatalf("%q: id %d, earlier %d", v, id, old)
			}
			ids[v] = id
			if got := b.vt.str(id); got != v {
				t.Fatalf("intern(%q) = %d, which is %q", v, id, got)
			}
		}
	}
	if b.vt.n() != len(ids) {
		t.Fatalf("%d values in the table for %d distinct", b.vt.n(), len(ids))
	}
}
