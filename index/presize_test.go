package index

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

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
	decode := func() *run {
		b := newBuilder()
		r, err := b.decodeList(b.addSource("list x"), "x", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := &decode().kinds[format.KindSig]
	if k.nEntries() != n {
		t.Fatalf("%d entries, want %d", k.nEntries(), n)
	}
	// Sized for the rest of the list from the sample, 3% to spare: grown
	// by doubling, the capacity would be a power-of-two multiple.
	if c := cap(k.vals); c < n || c > n+n/16 || !k.sized {
		t.Errorf("vals: capacity %d for %d entries (sized: %v), want %d..%d (sized before it filled)", c, n, k.sized, n, n+n/16)
	}
	allocs := testing.AllocsPerRun(3, func() { decode() })
	t.Logf("decode of %d keys: %.0f allocations", n, allocs)
	// The arrays are trimmed once in the decode (kindSet.finish,
	// vtab.compact: a list's decoded copy is what the list cache writes).
	if allocs > 112 {
		t.Errorf("decode of %d keys made %.0f allocations, want ≤ 112 (the arrays and the chunks once each, not once per doubling)", n, allocs)
	}
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
