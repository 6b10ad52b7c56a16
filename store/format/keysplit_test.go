package format

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// keySamples are keys on each side of every rule of DESIGN §3.
var keySamples = []string{
	"sig/ab/cdef/alice",
	"sig/ab/cd/alice",
	"sig/ab/c/alice",
	"sig/AB/cdef/alice",
	"sig/ab/cdeF/alice",
	"sig/ab/cdef/",
	"sig/ab/cdef/.",
	"sig/ab/cdef/..",
	"sig/ab/cdef/...",
	"sig/ab/cdef/.x",
	"sig/ab/cdef/a b",
	"sig/ab/cdef/a/b",
	"sig/ab/cdef/a\x00",
	"sig/ab/cdef/a\r",
	"sig/ab/cdef/\xff",
	"sig/ab/cdef/é",
	"sig/ab/cdef/\xed\xa0\x80", // a surrogate: not UTF-8
	"sig/abcdef/x",
	"sig/a/bcdef/x",
	"sig/a//bcdef/x",
	"sig//cdef/x",
	"sig/ab//x",
	"sig/zz/x",
	"sig/ab/zz",
	"sig/zz/cd/x",
	"sigs/ab/cdef/x",
	"SIG/ab/cdef/x",
	"seal/00/0000/" + strings.Repeat("v", 255),
	"seal/00/0000/" + strings.Repeat("v", 256),
	"cert/00/" + strings.Repeat("0", 126) + "/k",
	"cert/00/" + strings.Repeat("0", 127) + "/k",
	"cert/00/" + strings.Repeat("0", 128) + "/k",
	"cert/00/" + strings.Repeat("0", 130) + "/k",
	"accepted/ff/ff/x",
	"receipt/ff/ffff/runner 1",
	"approval/12/34g6/x",
	"",
	"/",
	"sig",
	"sig/",
	"sig/ab",
	"sig/ab/",
	"sig/ab/cd",
	"sig/ab/cd/",
}

// parseKeyBefore is ParseKey as it was written before splitKey, one
// strings.Cut a segment then Entry.Validate: the oracle that says ParseKey
// still accepts, returns and refuses exactly what it did, with the same
// words.
func parseKeyBefore(key string) (Entry, error) {
	kindS, rest, ok := strings.Cut(key, "/")
	if !ok {
		return Entry{}, fmt.Errorf("%w: %q has no kind segment", ErrBadKey, clip(key))
	}
	kind, ok := ParseKind(kindS)
	if !ok {
		return Entry{}, fmt.Errorf("%w: %q: unknown kind %q", ErrBadKey, clip(key), clip(kindS))
	}
	hh, rest, ok := strings.Cut(rest, "/")
	if !ok || len(hh) != 2 {
		return Entry{}, fmt.Errorf("%w: %q: want <kind>/<hh>/<rest>/<value> with a two-character <hh>", ErrBadKey, clip(key))
	}
	tail, value, ok := strings.Cut(rest, "/")
	if !ok {
		return Entry{}, fmt.Errorf("%w: %q: missing <rest>/<value>", ErrBadKey, clip(key))
	}
	e := Entry{Kind: kind, Object: hh + tail, Value: value}
	if err := e.Validate(); err != nil {
		return Entry{}, fmt.Errorf("parse key %q: %w", clip(key), err)
	}
	return e, nil
}

// checkSplitKey holds ParseKey to the oracle, and SplitKey on a string and
// on bytes to ParseKey; and the checks of one piece to Validate's rules.
func checkSplitKey(t *testing.T, key string) {
	t.Helper()
	want, wantErr := parseKeyBefore(key)
	got, err := ParseKey(key)
	if got != want || fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("ParseKey(%q) = %+v, %v; before: %+v, %v", key, got, err, want, wantErr)
	}
	var b1, b2 [MaxObjectBytes]byte
	kind, id, val, ok := SplitKey(key, &b1)
	bkind, bid, bval, bok := SplitKey([]byte(key), &b2)
	if ok != (err == nil) || bok != ok {
		t.Fatalf("SplitKey(%q) ok=%v, on bytes ok=%v; ParseKey: %v", key, ok, bok, err)
	}
	if ok {
		split := Entry{Kind: kind, Object: hex.EncodeToString(id), Value: val}
		if split != want || bkind != kind || !bytes.Equal(bid, id) || string(bval) != val {
			t.Fatalf("SplitKey(%q) = %+v, on bytes %v %x %q; want %+v", key, split, bkind, bid, bval, want)
		}
		if pre := string(AppendObjectPrefix(nil, kind, id)); pre != kind.ObjectPrefix(want.Object) || pre+val != key {
			t.Fatalf("AppendObjectPrefix for %q = %q, ObjectPrefix %q", key, pre, kind.ObjectPrefix(want.Object))
		}
	}
	// The pieces: every '/'-separated segment, as a value, an object id and an <hh>.
	for _, seg := range append(strings.Split(key, "/"), key) {
		if ValidValue(seg) != (ValidateValue(seg) == nil) || ValidValue([]byte(seg)) != ValidValue(seg) {
			t.Fatalf("ValidValue(%q) = %v, ValidateValue: %v", seg, ValidValue(seg), ValidateValue(seg))
		}
		var buf [MaxObjectBytes]byte
		id, ok := DecodeObjectID(seg, &buf)
		if ok != (ValidateObject(seg) == nil) || ValidObjectID(seg) != ok || ok && hex.EncodeToString(id) != seg {
			t.Fatalf("DecodeObjectID(%q) = %x %v, ValidateObject: %v", seg, id, ok, ValidateObject(seg))
		}
		b, ok := ParseHH(seg)
		wantHH := len(seg) == 2 && ValidateObject(seg+seg) == nil
		if ok != wantHH || ok && hex.EncodeToString([]byte{b}) != seg {
			t.Fatalf("ParseHH(%q) = %x %v, want ok=%v", seg, b, ok, wantHH)
		}
	}
}

func TestSplitKeyAgreesWithParseKey(t *testing.T) {
	for _, k := range keySamples {
		checkSplitKey(t, k)
	}
}

func FuzzSplitKey(f *testing.F) {
	for _, k := range keySamples {
		f.Add(k)
	}
	f.Fuzz(checkSplitKey)
}

// TestSplitKeyAllocatesNothing: on a string and on bytes, valid or not,
// ASCII or not.
func TestSplitKeyAllocatesNothing(t *testing.T) {
	var obj [MaxObjectBytes]byte
	var n int
	for _, key := range []string{
		"sig/ab/" + strings.Repeat("cd", 31) + "/signer-01",
		"cert/ab/cdef/é…",
		"sig/ab/cdef/a\xffb",
		"sig/AB/cdef/x",
		"nope",
	} {
		b := []byte(key)
		if a := testing.AllocsPerRun(100, func() {
			_, id, v, _ := SplitKey(key, &obj)
			n += len(id) + len(v)
			_, id, bv, _ := SplitKey(b, &obj)
			n += len(id) + len(bv)
		}); a != 0 {
			t.Errorf("SplitKey(%q): %v allocations, want 0", key, a)
		}
	}
	_ = n
}

func BenchmarkSplitKey(b *testing.B) {
	key := []byte("sig/ab/" + strings.Repeat("cd", 31) + "/signer-01")
	var obj [MaxObjectBytes]byte
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, ok := SplitKey(key, &obj); !ok {
			b.Fatal("refused")
		}
	}
}

func BenchmarkParseKey(b *testing.B) {
	key := "sig/ab/" + strings.Repeat("cd", 31) + "/signer-01"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseKey(key); err != nil {
			b.Fatal(err)
		}
	}
}

// TestObjectPrefixIsTheKeyLessItsValue, also for ids too short to split.
func TestObjectPrefixIsTheKeyLessItsValue(t *testing.T) {
	for _, obj := range []string{"", "a", "ab", "abc", "abcd"} {
		e := Entry{Kind: KindSeal, Object: obj, Value: "v"}
		if got, want := KindSeal.ObjectPrefix(obj)+"v", e.Key(); got != want {
			t.Errorf("ObjectPrefix(%q) + value = %q, Key %q", obj, got, want)
		}
	}
}
