package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

const memStatesSample = `goos: linux
BenchmarkOpen/clean-1e+05-2         	       2	  50346061 ns/op	        39.20 bytes/entry	        87.08 key-text-bytes/entry	         1.000 lists/op	         0.4501 mem/key-text	         4.000 requests/op	        38.61 set-bytes/entry	46139952 B/op	   13993 allocs/op
BenchmarkOpen/journal-1000-1e+05-2  	       2	  61000000 ns/op	        39.40 bytes/entry	        87.10 key-text-bytes/entry	         1.000 lists/op	         0.4523 mem/key-text	         4.000 requests/op	        38.70 set-bytes/entry	1 B/op	1 allocs/op
BenchmarkLookup-2 	 1000000	      1106 ns/op
PASS
`

func TestParseMemStates(t *testing.T) {
	got, err := parseMemStates(strings.NewReader(memStatesSample))
	if err != nil {
		t.Fatal(err)
	}
	want := []memState{
		{State: "clean", Entries: 100000, OpenMS: 50.346061, HeapPerEntry: 39.20, SetPerEntry: 38.61, KeyText: 87.08, OverKeyText: 0.4501, Requests: 4, Lists: 1},
		{State: "journal-1000", Entries: 100000, OpenMS: 61, HeapPerEntry: 39.40, SetPerEntry: 38.70, KeyText: 87.10, OverKeyText: 0.4523, Requests: 4, Lists: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d states, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("state %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{
		"BenchmarkOpen/clean-2 1 5 ns/op 1 bytes/entry 2 key-text-bytes/entry",       // no entry count
		"BenchmarkOpen/clean-1e+05-2 1 5 ns/op x bytes/entry 2 key-text-bytes/entry", // not a number
		"BenchmarkOpen/clean-1e+05-2 1 5 ns/op",                                      // no memory figures
	} {
		if s, err := parseMemStates(strings.NewReader(bad)); err == nil {
			t.Errorf("parseMemStates(%q) = %+v, want an error", bad, s)
		}
	}
}

// TestMemStatesReport: the states' table and their targets, each state
// marked met or missed by its own ratio.
func TestMemStatesReport(t *testing.T) {
	states, err := parseMemStates(strings.NewReader(memStatesSample))
	if err != nil {
		t.Fatal(err)
	}
	states[1].OverKeyText = 0.61
	var r results
	for _, s := range states {
		r.memstates = append(r.memstates, record{Kind: "memstate", Result: mustJSON(t, s)})
	}
	var b bytes.Buffer
	r.memStatesSection(&b)
	r.memStateTargets(&b, func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	})
	out := b.String()
	for _, want := range []string{
		"| a clean folded store: one complete list, an empty journal | 100,000 | 50 ms | 39.2 B | 38.6 B | 87.1 B | 0.45 | 4 |",
		"| the set ≤ 0.6 × its key text: clean, 100,000 entries | 39.2 B for 87.1 B of key text: 0.45× | met |",
		"| the set ≤ 0.6 × its key text: journal-1000, 100,000 entries | 39.4 B for 87.1 B of key text: 0.61× | missed |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func FuzzParseMemStates(f *testing.F) {
	f.Add(memStatesSample)
	f.Add("BenchmarkOpen/-1e+05-2 1 1 ns/op")
	f.Fuzz(func(t *testing.T, s string) {
		states, err := parseMemStates(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, st := range states {
			if st.Entries < 1 || st.KeyText <= 0 || st.HeapPerEntry <= 0 {
				t.Fatalf("accepted %+v", st)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
