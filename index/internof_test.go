package index

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/store/format"
)

// A seal's attestation id is added to the value table without the map
// (builder.internOf): two lists naming one still make one entry, found by
// its text, and a signer that is a hex fingerprint keeps one id however
// many signatures it made.
func TestInternOfDigestsAcrossLists(t *testing.T) {
	obj := "ab" + strings.Repeat("c", 62)
	digest := strings.Repeat("0123456789abcdef", 4) // 64 hex characters
	fpr := strings.Repeat("fe", 20)                 // a 40-character signer
	seal := format.Entry{Kind: format.KindSeal, Object: obj, Value: digest}.Key()
	keys := []string{seal}
	for i := range 3 {
		o := "ab" + strings.Repeat(string(rune('d'+i)), 62)
		keys = append(keys, format.Entry{Kind: format.KindSig, Object: o, Value: fpr}.Key())
	}
	b := newBuilder()
	var runs []*run
	for i, ks := range [][]string{keys, {seal}} {
		name, data, err := format.EncodeEntryList(ks)
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.decodeList(b.addSource(name), name, bytes.NewReader(data))
		if err != nil {
			t.Fatalf("list %d: %v", i, err)
		}
		runs = append(runs, r)
	}
	s := b.set(b.mergeRuns(runs))
	if n := s.entries(); n != 4 {
		t.Errorf("%d entries, want 4 (the seal once)", n)
	}
	if vals := s.values(format.KindSeal, obj); len(vals) != 1 || vals[0].val != digest {
		t.Errorf("the seal's values: %+v, want one, %s", vals, digest)
	}
	if _, ok := s.lookup(format.KindSeal, obj, digest); !ok {
		t.Error("the seal is not found by its text")
	}
	if ids := s.signerIDs(fpr); len(ids) != 1 {
		t.Errorf("the hex signer has %d ids, want 1 (interned)", len(ids))
	}
	if got := s.signerNames(); len(got) != 1 || got[0] != fpr {
		t.Errorf("signers %q, want [%s]", got, fpr)
	}
}
