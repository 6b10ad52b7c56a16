package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// zstdText compresses text as another writer might, with the zstd package
// directly.
func zstdText(t testing.TB, text string, opts ...zstd.EOption) []byte {
	t.Helper()
	if len(opts) == 0 {
		return testEncoder().EncodeAll([]byte(text), nil)
	}
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var testEncoder = sync.OnceValue(func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		panic(err)
	}
	return enc
})

// unzstd decompresses data with the zstd package directly.
func unzstd(t testing.TB, data []byte) string {
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
	return string(text)
}

func TestEncodeEntryListWritesSortedUniqueKeysUnderHeader(t *testing.T) {
	id, data, err := EncodeEntryList([]string{"sig/ab/cd/bob", "seal/00/11/x", "sig/ab/cd/bob", "sig/ab/cd/alice"})
	if err != nil {
		t.Fatal(err)
	}
	const want = "oxy-entries 1\nseal/00/11/x\nsig/ab/cd/alice\nsig/ab/cd/bob\n"
	if got := unzstd(t, data); got != want {
		t.Fatalf("list text = %q, want %q", got, want)
	}
	sum := sha256.Sum256([]byte(want))
	if wantID := hex.EncodeToString(sum[:]); id != wantID {
		t.Errorf("id = %s, want %s", id, wantID)
	}
	if id != EntryListID([]byte(want)) {
		t.Errorf("EntryListID disagrees with the id of EncodeEntryList")
	}
}

func TestEncodeEntryListOfNoKeysIsTheHeaderAlone(t *testing.T) {
	id, data, err := EncodeEntryList(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := unzstd(t, data); got != EntryListHeader+"\n" {
		t.Errorf("list text = %q", got)
	}
	keys, err := DecodeEntryListAll(data)
	if err != nil || len(keys) != 0 {
		t.Errorf("DecodeEntryListAll = %q, %v", keys, err)
	}
	if err := VerifyEntryList(EntryListName(id, true), data); err != nil {
		t.Error(err)
	}
}

func TestEncodeEntryListRefusesMalformedKeys(t *testing.T) {
	for _, k := range []string{"", "sig/ab/cd/a\nb", "sigs/ab/cd", "sig/ab/cd/a/b"} {
		_, _, err := EncodeEntryList([]string{"sig/ab/cd/ok", k})
		if !errors.Is(err, ErrBadKey) {
			t.Errorf("EncodeEntryList(%q) = %v, want ErrBadKey", k, err)
		}
	}
}

func TestEncodeEntryListSortedMatchesEncodeEntryList(t *testing.T) {
	keys := syntheticKeys(5000)
	id1, data1, err := EncodeEntryList(keys)
	if err != nil {
		t.Fatal(err)
	}
	id2, data2, err := EncodeEntryListSorted(keys)
	if err != nil {
		t.Fatal(err)
	}
	if id1 != id2 || !bytes.Equal(data1, data2) {
		t.Errorf("EncodeEntryListSorted differs from EncodeEntryList on sorted keys")
	}
}

func TestEncodeEntryListSortedRefusesWhatWouldBreakTheList(t *testing.T) {
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{"sig/ab/cd/b", "sig/ab/cd/a"}, "not strictly greater"},
		{[]string{"sig/ab/cd/a", "sig/ab/cd/a"}, "not strictly greater"},
		{[]string{"sig/ab/cd/a", ""}, "empty or holds a newline"},
		{[]string{"sig/ab/cd/a\nsig/ab/cd/b"}, "empty or holds a newline"},
	} {
		_, _, err := EncodeEntryListSorted(tc.keys)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("EncodeEntryListSorted(%q) = %v, want %q", tc.keys, err, tc.want)
		}
	}
}

// TestDecodeEntryListRoundTrips uses enough keys for the text to span many
// zstd blocks, so lines cut between blocks are joined.
func TestDecodeEntryListRoundTrips(t *testing.T) {
	keys := syntheticKeys(20000)
	id, data, err := EncodeEntryList(keys)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	n, err := DecodeEntryList(data, func(k []byte) error {
		got = append(got, string(k))
		return nil
	})
	if err != nil || n != len(keys) {
		t.Fatalf("DecodeEntryList = %d, %v; want %d keys", n, err, len(keys))
	}
	if !slices.Equal(got, keys) {
		t.Fatal("DecodeEntryList returned other keys than were encoded")
	}
	all, err := DecodeEntryListAll(data)
	if err != nil || !slices.Equal(all, keys) {
		t.Fatalf("DecodeEntryListAll = %d keys, %v", len(all), err)
	}
	if err := VerifyEntryList(EntryListName(id, false), data); err != nil {
		t.Error(err)
	}
}

func TestDecodeEntryListAllocatesNothingPerKey(t *testing.T) {
	const n = 20000
	_, data, err := EncodeEntryList(syntheticKeys(n))
	if err != nil {
		t.Fatal(err)
	}
	count := func([]byte) error { return nil }
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := DecodeEntryList(data, count); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > n/100 {
		t.Errorf("DecodeEntryList of %d keys made %.0f allocations", n, allocs)
	}
}

// TestDecodeEntryListRefusesCorruptLists checks each rule of an entry list:
// the error is ErrCorrupt and names the rule and, where there is one, the line.
func TestDecodeEntryListRefusesCorruptLists(t *testing.T) {
	const h = EntryListHeader + "\n"
	good := zstdText(t, h+"sig/ab/cd/a\nsig/ab/cd/b\n")
	for _, tc := range []struct {
		rule string
		data []byte
		want string
	}{
		{"not zstd", []byte(h + "sig/ab/cd/a\n"), "zstd: "},
		{"truncated stream", good[:len(good)-3], "zstd: "},
		{"garbage after the stream", append(slices.Clip(good), "junk!"...), "zstd: "},
		{"no data", nil, `line 1 "": no header line`},
		{"empty text", zstdText(t, ""), `line 1 "": no header line`},
		{"wrong header", zstdText(t, "oxy-entries 2\nsig/ab/cd/a\n"), `line 1 "oxy-entries 2": first line is not the header`},
		{"header with CR", zstdText(t, "oxy-entries 1\r\n"), `line 1 "oxy-entries 1\x0d": first line is not the header`},
		{"header without newline", zstdText(t, EntryListHeader), `line 1 "oxy-entries 1": last line does not end in "\n"`},
		{"last line without newline", zstdText(t, h+"sig/ab/cd/a\nsig/ab/cd/b"), `line 3 "sig/ab/cd/b": last line does not end in "\n"`},
		{"empty line", zstdText(t, h+"sig/ab/cd/a\n\nsig/ab/cd/b\n"), `line 3 "": empty line`},
		{"duplicate key", zstdText(t, h+"sig/ab/cd/a\nsig/ab/cd/a\n"), `line 3 "sig/ab/cd/a": key is not strictly greater than the previous key`},
		{"keys out of order", zstdText(t, h+"sig/ab/cd/b\nsig/ab/cd/a\n"), `line 3 "sig/ab/cd/a": key is not strictly greater`},
		{"line too long", zstdText(t, h+strings.Repeat("x", MaxEntryListLine+1)+"\n"), "line 2 \"xxx"},
		{"unterminated long line", zstdText(t, h+strings.Repeat("x", 3*MaxEntryListLine)), fmt.Sprintf("line longer than %d bytes", MaxEntryListLine)},
		{"window too large", rawFrame(17<<3|1, h), "frame declares a window of 150994944 bytes, over the cap of 134217728"}, // 144 MiB
		{"window of a later frame too large", append(zstdText(t, h), rawFrame(17<<3|1, "sig/ab/cd/a\n")...), "window size exceeded"},
	} {
		n, err := DecodeEntryList(tc.data, func([]byte) error { return nil })
		if err == nil {
			t.Errorf("%s: DecodeEntryList succeeded with %d keys", tc.rule, n)
			continue
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v is not ErrCorrupt", tc.rule, err)
		}
		if !strings.HasPrefix(err.Error(), "decode entry list: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want %q", tc.rule, err, tc.want)
		}
	}
}

// rawFrame builds a zstd frame by hand: the window descriptor wd (exponent
// in the high 5 bits: 1<<(10+exponent) bytes, plus eighths in the low 3), no
// checksum, and text as one raw block.
func rawFrame(wd byte, text string) []byte {
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, wd}
	bh := 1 | len(text)<<3 // last block, raw
	frame = append(frame, byte(bh), byte(bh>>8), byte(bh>>16))
	return append(frame, text...)
}

func TestDecodeEntryListAcceptsAWindowOf128MiB(t *testing.T) {
	const text = EntryListHeader + "\nsig/ab/cd/a\n"
	keys, err := DecodeEntryListAll(rawFrame(17<<3, text))
	if err != nil || !slices.Equal(keys, []string{"sig/ab/cd/a"}) {
		t.Errorf("DecodeEntryListAll = %q, %v", keys, err)
	}
}

func TestDecodeEntryListDoesNotValidateKeys(t *testing.T) {
	data := zstdText(t, EntryListHeader+"\nnot a key\nsig/ab/cd/a/b\n")
	keys, err := DecodeEntryListAll(data)
	if err != nil || !slices.Equal(keys, []string{"not a key", "sig/ab/cd/a/b"}) {
		t.Errorf("DecodeEntryListAll = %q, %v", keys, err)
	}
}

func TestDecodeEntryListReportsADecompressionBomb(t *testing.T) {
	data := zstdText(t, EntryListHeader+"\n"+strings.Repeat("sig/ab/cd/a\n", 1000))
	s := listScanner{limit: 4096}
	err := s.decode(data)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "decompresses to more than") {
		t.Errorf("decode over the size cap = %v", err)
	}
}

func TestDecodeEntryListStopsAtTheCallbacksError(t *testing.T) {
	_, data, err := EncodeEntryList([]string{"sig/ab/cd/a", "sig/ab/cd/b", "sig/ab/cd/c"})
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	var seen []string
	n, err := DecodeEntryList(data, func(k []byte) error {
		seen = append(seen, string(k))
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || errors.Is(err, ErrCorrupt) {
		t.Errorf("err = %v, want the callback's error and not ErrCorrupt", err)
	}
	if !strings.Contains(err.Error(), "line 3") {
		t.Errorf("err = %v, want the line of the key", err)
	}
	if n != 1 || len(seen) != 2 {
		t.Errorf("n = %d after %d calls, want 1 after 2", n, len(seen))
	}
}

func TestDecodeEntryListConcurrently(t *testing.T) {
	var lists [][]byte
	var want [][]string
	for i := range 8 {
		keys := syntheticKeys(3000 + 500*i)
		_, data, err := EncodeEntryList(keys)
		if err != nil {
			t.Fatal(err)
		}
		lists, want = append(lists, data), append(want, keys)
	}
	var wg sync.WaitGroup
	for i := range lists {
		wg.Go(func() {
			for range 3 {
				got, err := DecodeEntryListAll(lists[i])
				if err != nil || !slices.Equal(got, want[i]) {
					t.Errorf("list %d: %d keys, %v", i, len(got), err)
				}
			}
		})
	}
	wg.Wait()
}

func TestEntryListNames(t *testing.T) {
	id := strings.Repeat("0f", 32)
	if got := EntryListName(id, true); got != "pack-"+id+".entries" {
		t.Errorf("EntryListName(complete) = %q", got)
	}
	if got := EntryListName(id, false); got != "pack-"+id+".entries-part" {
		t.Errorf("EntryListName(partial) = %q", got)
	}
	for _, tc := range []struct {
		key          string
		complete, ok bool
	}{
		{"pack-" + id + ".entries", true, true},
		{"pack-" + id + ".entries-part", false, true},
		{"pack-" + id + ".pack", false, false},
		{"pack-" + id + ".entries-partial", false, false},
		{"pack-" + id[:62] + ".entries", false, false},
		{"pack-" + id + "00.entries", false, false},
		{"pack-" + strings.ToUpper(id) + ".entries", false, false},
		{"pack-" + id[:63] + "g.entries", false, false},
		{"pack-entries", false, false},
		{"x/pack-" + id + ".entries", false, false},
	} {
		gotID, complete, ok := ParseEntryListName(tc.key)
		if ok != tc.ok || complete != tc.complete || (ok && gotID != id) {
			t.Errorf("ParseEntryListName(%q) = %q, %v, %v", tc.key, gotID, complete, ok)
		}
	}
}

func TestVerifyEntryList(t *testing.T) {
	id, data, err := EncodeEntryList([]string{"sig/ab/cd/a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyEntryList(EntryListName(id, true), data); err != nil {
		t.Errorf("VerifyEntryList of a good list: %v", err)
	}
	other := strings.Repeat("0", 64)
	if err := VerifyEntryList(EntryListName(other, true), data); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), id) {
		t.Errorf("VerifyEntryList under another id = %v, want ErrCorrupt naming %s", err, id)
	}
	if err := VerifyEntryList(EntryListName(id, true), data[:len(data)-1]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("VerifyEntryList of a truncated list = %v, want ErrCorrupt", err)
	}
	if err := VerifyEntryList("pack-entries", data); err == nil || !strings.Contains(err.Error(), "not an entry list name") {
		t.Errorf("VerifyEntryList of a bad name = %v", err)
	}
}

// scanChunks feeds text to a listScanner in chunks of size k, as zstd blocks
// would arrive, and returns the keys and the error decode would return.
func scanChunks(text []byte, k int) ([]string, error) {
	var keys []string
	s := listScanner{fn: func(key []byte) error {
		keys = append(keys, string(key))
		return nil
	}}
	var err error
	for len(text) > 0 && err == nil {
		c := text[:min(k, len(text))]
		text = text[len(c):]
		_, err = s.Write(c)
	}
	return keys, s.finish(err)
}

// referenceKeys decodes list text by the rules, the slow and obvious way.
func referenceKeys(text string) ([]string, bool) {
	lines, last, ok := strings.Cut(text, "\n")
	if !ok || lines != EntryListHeader || !strings.HasSuffix(last, "\n") && last != "" {
		return nil, false
	}
	keys := strings.Split(strings.TrimSuffix(last, "\n"), "\n")
	if last == "" {
		keys = nil
	}
	for i, k := range keys {
		if k == "" || len(k) > MaxEntryListLine || i > 0 && k <= keys[i-1] {
			return nil, false
		}
	}
	return keys, true
}

// FuzzDecodeEntryListText checks the line rules on any text: cut into chunks
// of any size or compressed whole, the decoder agrees with referenceKeys.
func FuzzDecodeEntryListText(f *testing.F) {
	const h = EntryListHeader + "\n"
	for _, s := range []string{
		h, h + "a\nb\n", h + "a\nb", h + "b\na\n", h + "a\na\n", h + "\n", "", EntryListHeader,
		"oxy-entries 2\n", h + "sig/ab/cd/a b\nsig/ab/cd/a/b\n", h + strings.Repeat("y", MaxEntryListLine+1) + "\n",
	} {
		f.Add([]byte(s), uint16(7))
	}
	f.Fuzz(func(t *testing.T, text []byte, k uint16) {
		want, ok := referenceKeys(string(text))
		got, err := scanChunks(text, int(k)%(MaxEntryListLine+100)+1)
		if ok != (err == nil) || ok && !slices.Equal(got, want) {
			t.Fatalf("chunks of %d: keys %q, err %v; reference %q, %v", k, got, err, want, ok)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v is not ErrCorrupt", err)
		}
		all, err := DecodeEntryListAll(zstdText(t, string(text)))
		if ok != (err == nil) || ok && !slices.Equal(all, want) {
			t.Fatalf("compressed: keys %q, err %v; reference %q, %v", all, err, want, ok)
		}
	})
}

// FuzzDecodeEntryList: no panic on any input; what decodes encodes again to a
// list that decodes to the same keys and verifies under its name.
func FuzzDecodeEntryList(f *testing.F) {
	_, good, err := EncodeEntryList([]string{"sig/ab/cd/a", "seal/00/11/x"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-2])
	f.Add(zstdText(f, EntryListHeader+"\nb\na\n"))
	f.Add(zstdText(f, EntryListHeader+"\nkey without newline"))
	f.Add(zstdText(f, "oxy-entries 2\n"))
	f.Add([]byte("not zstd"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := DecodeEntryListAll(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		id, again, err := EncodeEntryListSorted(keys)
		if err != nil {
			t.Fatalf("decoded keys do not encode: %v", err)
		}
		keys2, err := DecodeEntryListAll(again)
		if err != nil || !slices.Equal(keys2, keys) {
			t.Fatalf("round trip: %q, %v; want %q", keys2, err, keys)
		}
		if err := VerifyEntryList(EntryListName(id, true), again); err != nil {
			t.Fatal(err)
		}
	})
}

// syntheticKeys returns n sorted unique signature keys
// "sig/<hh>/<62 hex>/signer-<N>", each over an object of its own (the hard
// case for compression) and signed by one of 16 signers: about 80 bytes a
// line.
func syntheticKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		sum := sha256.Sum256(fmt.Appendf(nil, "object %d", i))
		obj := hex.EncodeToString(sum[:])
		keys[i] = "sig/" + obj[:2] + "/" + obj[2:] + "/signer-" + fmt.Sprint(i%16)
	}
	slices.Sort(keys)
	return keys
}

func benchSizes(b *testing.B, fn func(b *testing.B, keys []string)) {
	for _, n := range []int{100_000, 1_000_000} {
		keys := syntheticKeys(n)
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) { fn(b, keys) })
	}
}

func textBytes(keys []string) int64 {
	n := int64(len(EntryListHeader) + 1)
	for _, k := range keys {
		n += int64(len(k) + 1)
	}
	return n
}

func BenchmarkDecodeEntryList(b *testing.B) {
	benchSizes(b, func(b *testing.B, keys []string) {
		_, data, err := EncodeEntryListSorted(keys)
		if err != nil {
			b.Fatal(err)
		}
		count := func([]byte) error { return nil }
		b.SetBytes(textBytes(keys))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if n, err := DecodeEntryList(data, count); err != nil || n != len(keys) {
				b.Fatal(n, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(keys)), "ns/key")
		b.ReportMetric(float64(len(data))/float64(len(keys)), "zbytes/key")
	})
}

func BenchmarkEncodeEntryList(b *testing.B) {
	for _, sorted := range []bool{false, true} {
		b.Run(fmt.Sprintf("sorted=%v", sorted), func(b *testing.B) {
			benchSizes(b, func(b *testing.B, keys []string) {
				encode := EncodeEntryList
				if sorted {
					encode = EncodeEntryListSorted
				}
				b.SetBytes(textBytes(keys))
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := encode(keys); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(keys)), "ns/key")
			})
		})
	}
}
