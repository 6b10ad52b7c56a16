package format

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestForgottenRecordRoundTrip(t *testing.T) {
	r := ForgottenRecord{At: 1700000000123, Objects: []ForgottenObject{
		{KindSig, "ab03"}, {KindSeal, "ab03"}, {KindSig, "ab03"}, {KindSig, "0011"},
	}}
	name, text, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := "oxy-forgotten 1 1700000000123\nseal ab03\nsig 0011\nsig ab03\n"
	if string(text) != want {
		t.Fatalf("text %q, want %q", text, want)
	}
	if !IsForgottenName(name) || !strings.HasSuffix(name, ForgottenSuffix) {
		t.Fatalf("name %q is not a forget record's", name)
	}
	if _, _, ok := ParseEntryListName(name); ok {
		t.Fatalf("%q parses as an entry list", name)
	}
	got, err := ParseForgottenRecord(name, text)
	if err != nil {
		t.Fatal(err)
	}
	if got.At != r.At || len(got.Objects) != 3 || got.Objects[0] != (ForgottenObject{KindSeal, "ab03"}) {
		t.Fatalf("parsed %+v", got)
	}
	if p := got.Objects[2].ObjectPrefix(); p != "sig/ab/03/" {
		t.Fatalf("prefix %q", p)
	}
	// Two forgets of the same objects at other times have other names.
	r.At++
	name2, _, err := r.Encode()
	if err != nil || name2 == name {
		t.Fatalf("second name %q (%v), first %q", name2, err, name)
	}
}

func TestForgottenRecordRefusals(t *testing.T) {
	for _, r := range []ForgottenRecord{
		{At: -1},
		{At: 1, Objects: []ForgottenObject{{Kind(NumKinds), "ab03"}}},
		{At: 1, Objects: []ForgottenObject{{KindSig, "AB03"}}},
		{At: 1, Objects: []ForgottenObject{{KindSig, "abc"}}},
	} {
		if _, _, err := r.Encode(); err == nil {
			t.Errorf("Encode(%+v) = nil error", r)
		}
	}
	for _, text := range []string{
		"",
		"oxy-forgotten 1 12",                        // no newline
		"oxy-forgotten 2 12\n",                      // version
		"oxy-forgotten 1 -3\n",                      // time
		"oxy-forgotten 1 012\n",                     // not canonical
		"oxy-forgotten 1 12\nsig ab03",              // last line open
		"oxy-forgotten 1 12\nsigs ab03\n",           // kind
		"oxy-forgotten 1 12\nsig ab0\n",             // object
		"oxy-forgotten 1 12\nsig ab03\nseal ab03\n", // order
		"oxy-forgotten 1 12\nsig ab03\nsig ab03\n",  // twice
		"oxy-forgotten 1 12\nsig\n",
		"oxy-forgotten 1 12\n\n",
	} {
		_, err := ParseForgottenRecord(ForgottenName([]byte(text)), []byte(text))
		if !errors.Is(err, ErrBadForgottenRecord) {
			t.Errorf("ParseForgottenRecord(%q) = %v, want ErrBadForgottenRecord", text, err)
		}
	}
	// A record of more objects than Encode writes is refused.
	var long strings.Builder
	long.WriteString("oxy-forgotten 1 12\n")
	for i := range MaxForgottenObjects + 1 {
		fmt.Fprintf(&long, "sig %08x\n", i)
	}
	if _, err := ParseForgottenRecord(ForgottenName([]byte(long.String())), []byte(long.String())); !errors.Is(err, ErrBadForgottenRecord) {
		t.Errorf("a record of %d objects: %v, want ErrBadForgottenRecord", MaxForgottenObjects+1, err)
	}
	// A record whose name is not its digest is refused: a store may answer
	// another key's bytes.
	_, text, _ := ForgottenRecord{At: 5}.Encode()
	other, _, _ := ForgottenRecord{At: 6}.Encode()
	if _, err := ParseForgottenRecord(other, text); !errors.Is(err, ErrBadForgottenRecord) {
		t.Fatalf("a record under another name: %v", err)
	}
	for _, k := range []string{"pack-entries", "pack-" + strings.Repeat("a", 63) + ForgottenSuffix, "pack-" + strings.Repeat("A", 64) + ForgottenSuffix, "x" + strings.Repeat("a", 64) + ForgottenSuffix} {
		if IsForgottenName(k) {
			t.Errorf("IsForgottenName(%q) = true", k)
		}
	}
}

// FuzzParseForgottenRecord: no panic; whatever parses encodes to the same
// bytes and name.
func FuzzParseForgottenRecord(f *testing.F) {
	f.Add([]byte("oxy-forgotten 1 12\nseal ab03\nsig ab03\n"))
	f.Add([]byte("oxy-forgotten 1 0\n"))
	f.Add([]byte("oxy-forgotten 1 12\nsig ab03\nsig\xff 00\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		name := ForgottenName(text)
		r, err := ParseForgottenRecord(name, text)
		if err != nil {
			return
		}
		name2, text2, err := r.Encode()
		if err != nil {
			t.Fatalf("parsed %q but cannot encode it: %v", text, err)
		}
		if string(text2) != string(text) || name2 != name {
			t.Fatalf("round trip %q → %q", text, text2)
		}
	})
}
