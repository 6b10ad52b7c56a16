package format

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestLegacyListsAreIndexedByKind(t *testing.T) {
	if len(LegacyLists()) != NumKinds {
		t.Fatalf("%d legacy lists, want %d", len(LegacyLists()), NumKinds)
	}
	want := map[Kind]string{KindSig: "sigs/", KindSeal: "seals/", KindReceipt: "receipts/",
		KindApproval: "approvals/", KindCert: "certs/", KindAccepted: "accepted-lists/"}
	for i, l := range LegacyLists() {
		if l.Kind != Kind(i) || l.Prefix != want[l.Kind] {
			t.Errorf("LegacyLists()[%d] = %+v", i, l)
		}
	}
}

func TestLegacyKeyRoundTrips(t *testing.T) {
	for _, k := range Kinds {
		key := LegacyKey(k, "abcdef")
		kind, obj, ok := ParseLegacyKey(key)
		if !ok || kind != k || obj != "abcdef" {
			t.Errorf("ParseLegacyKey(%q) = %v, %q, %v", key, kind, obj, ok)
		}
	}
	if got := LegacyKey(KindSig, "abcdef"); got != "sigs/ab/cdef" {
		t.Errorf("LegacyKey(sig) = %q", got)
	}
	if got := LegacyKey(KindAccepted, "0011"); got != "accepted-lists/00/11" {
		t.Errorf("LegacyKey(accepted) = %q", got)
	}
	if got := LegacyKey(NumKinds, "abcd"); got != "" {
		t.Errorf("LegacyKey(unknown kind) = %q", got)
	}
}

func TestParseLegacyKeyRefuses(t *testing.T) {
	for _, key := range []string{
		"sig/ab/cd/alice",    // an entry key, not a legacy one
		"sigs/ab",            // no <rest>
		"sigs/a/bcd",         // hh of one character
		"sigs/ab/c",          // object too short
		"sigs/ab/cde",        // odd object
		"sigs/AB/cd",         // upper case
		"sigs/ab/cd/alice",   // a value segment
		"accepted/ab/cd",     // the entry kind, not the legacy prefix
		"pack-legacy-folded", // the marker
		"",
	} {
		if kind, obj, ok := ParseLegacyKey(key); ok {
			t.Errorf("ParseLegacyKey(%q) = %v, %q, true", key, kind, obj)
		}
	}
}

func TestParseLegacySigsRoundTrips(t *testing.T) {
	data := "alice AAEC\n" +
		"bob smith /w==\n" + // the signer may hold a space: split at the last one
		"\n" + // a blank line carries nothing
		"carol AA==" // a final line without "\n" counts
	sigs, bad := ParseLegacySigs([]byte(data))
	if bad.Count != 0 {
		t.Fatalf("bad lines: %v", bad)
	}
	want := []LegacySig{{"alice", []byte{0, 1, 2}}, {"bob smith", []byte{0xff}}, {"carol", []byte{0}}}
	if !reflect.DeepEqual(sigs, want) {
		t.Fatalf("ParseLegacySigs = %+v, want %+v", sigs, want)
	}
	if got, want := string(LegacySigs(sigs)), "alice AAEC\nbob smith /w==\ncarol AA==\n"; got != want {
		t.Errorf("LegacySigs = %q, want %q", got, want)
	}
}

func TestParseLegacySigsSkipsAndReportsBadLines(t *testing.T) {
	const good = "alice AAEC"
	for _, tc := range []struct {
		rule, line, want string
		badKey           bool
	}{
		{"no space", "aliceAAEC", "no space between the signer and the signature", false},
		{"empty signer", " AAEC", "signer: malformed entry key: empty value", true},
		{"signer with slash", "a/b AAEC", "signer: malformed entry key: value \"a/b\" contains '/'", true},
		{"signer dot dot", ".. AAEC", `value ".." is not allowed`, true},
		{"empty signature", "alice ", "empty signature", false},
		{"not base64", "alice A*EC", "signature is not standard base64", false},
		{"URL base64", "alice _-8=", "signature is not standard base64", false},
		{"unpadded base64", "alice AA", "signature is not standard base64", false},
		{"CRLF ending", "alice AAEC\r", `line ends in "\r"`, false},
	} {
		sigs, bad := ParseLegacySigs([]byte(good + "\n" + tc.line + "\n" + good + "\n"))
		if len(sigs) != 2 || bad.Count != 1 {
			t.Errorf("%s: %d sigs, %d bad, want 2 and 1", tc.rule, len(sigs), bad.Count)
			continue
		}
		msg := bad.First[0].Error()
		if bad.First[0].Line != 2 || !strings.HasPrefix(msg, "line 2 ") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q, want line 2 and %q", tc.rule, msg, tc.want)
		}
		if !errors.Is(bad.First[0], ErrCorrupt) || errors.Is(bad.First[0], ErrBadKey) != tc.badKey {
			t.Errorf("%s: %v: ErrCorrupt %v, ErrBadKey %v", tc.rule, bad.First[0], errors.Is(bad.First[0], ErrCorrupt), errors.Is(bad.First[0], ErrBadKey))
		}
	}
}

func TestParseLegacyValuesRoundTrips(t *testing.T) {
	values, bad := ParseLegacyValues([]byte("v1\n\na value\nv3"))
	if bad.Count != 0 {
		t.Fatalf("bad lines: %v", bad)
	}
	if want := []string{"v1", "a value", "v3"}; !reflect.DeepEqual(values, want) {
		t.Fatalf("ParseLegacyValues = %q, want %q", values, want)
	}
	if got := string(LegacyValues(values)); got != "v1\na value\nv3\n" {
		t.Errorf("LegacyValues = %q", got)
	}
}

func TestParseLegacyValuesSkipsAndReportsBadLines(t *testing.T) {
	for _, tc := range []struct{ rule, line, want string }{
		{"slash", "a/b", "contains '/'"},
		{"dot", ".", `value "." is not allowed`},
		{"too long", strings.Repeat("v", 256), "longer than 255"},
		{"NUL", "a\x00", `contains '\x00'`},
		{"not UTF-8", "\xff", "not valid UTF-8"},
		{"CRLF ending", "v\r", `line ends in "\r"`},
	} {
		values, bad := ParseLegacyValues([]byte("ok\n" + tc.line + "\nok\n"))
		if len(values) != 2 || bad.Count != 1 {
			t.Errorf("%s: %d values, %d bad, want 2 and 1", tc.rule, len(values), bad.Count)
			continue
		}
		msg := bad.First[0].Error()
		if bad.First[0].Line != 2 || !strings.Contains(msg, tc.want) || !errors.Is(bad.First[0], ErrCorrupt) {
			t.Errorf("%s: error %q, want line 2 and %q", tc.rule, msg, tc.want)
		}
	}
}

// FuzzParseLegacySigs: no panic; every non-blank line is parsed or reported;
// a parsed list formats and parses back to the same signatures.
func FuzzParseLegacySigs(f *testing.F) {
	for _, s := range []string{
		"", "alice AAEC\n", "bob smith /w==", "a\n", "a A*\n", "\n\n", " AA==\n", "a/b AA==\n",
		"alice AAEC\r\n", "alice QR==\n", "é Zm9v\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sigs, bad := ParseLegacySigs(data)
		if n := countLines(data) - blankLines(data); len(sigs)+bad.Count != n {
			t.Fatalf("%d sigs + %d bad of %d", len(sigs), bad.Count, n)
		}
		again, bad2 := ParseLegacySigs(LegacySigs(sigs))
		if bad2.Count != 0 || len(again) != len(sigs) {
			t.Fatalf("round trip: %v, %v; want %v", again, bad2, sigs)
		}
		for i := range sigs {
			if again[i].Signer != sigs[i].Signer || !bytes.Equal(again[i].Sig, sigs[i].Sig) {
				t.Fatalf("round trip: %+v, want %+v", again[i], sigs[i])
			}
		}
	})
}

// FuzzParseLegacyValues: no panic; every non-blank line is parsed or
// reported; a parsed list formats and parses back to the same values.
func FuzzParseLegacyValues(f *testing.F) {
	for _, s := range []string{"", "v\n", "a b\nc", "\n", "a/b\n", ".\n", "v\r\n", "\xff\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		values, bad := ParseLegacyValues(data)
		if n := countLines(data) - blankLines(data); len(values)+bad.Count != n {
			t.Fatalf("%d values + %d bad of %d", len(values), bad.Count, n)
		}
		for _, v := range values {
			if err := ValidateValue(v); err != nil {
				t.Fatalf("accepted %q: %v", v, err)
			}
		}
		again, bad2 := ParseLegacyValues(LegacyValues(values))
		if bad2.Count != 0 || !slices.Equal(again, values) {
			t.Fatalf("round trip: %q, %v; want %q", again, bad2, values)
		}
	})
}

// blankLines counts the empty lines of a record.
func blankLines(data []byte) int {
	n := 0
	eachLine(string(data), func(_ int, line string) {
		if line == "" {
			n++
		}
	})
	return n
}
