package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Memory in every state: scripts/bench runs index's BenchmarkOpen (one
// mem:// store per state: clean, right after a fold, a journal beside the
// list, partial lists, signatures only, not folded; 1e7 with --huge) and
// `benchtool memstates` turns its output into result lines, which the
// report shows as a table and as the issue-16 target "the set ≤ 0.6 × key
// text in every state".

// memState is one state BenchmarkOpen measured.
type memState struct {
	State        string  `json:"state"`
	Entries      int     `json:"entries"`
	OpenMS       float64 `json:"open_ms"`
	HeapPerEntry float64 `json:"bytes_per_entry"`     // heap the loaded index keeps, per entry
	SetPerEntry  float64 `json:"set_bytes_per_entry"` // the set's arrays (Status.MemoryBytes)
	KeyText      float64 `json:"key_text_per_entry"`
	OverKeyText  float64 `json:"mem_over_key_text"`
	Requests     float64 `json:"requests"`
	Lists        float64 `json:"lists"`
}

// memStatesCmd: benchtool memstates FILE — one {"kind":"memstate",…} line
// per BenchmarkOpen result in FILE (go test -bench output). It fails if
// FILE holds none.
func memStatesCmd(_ context.Context, args []string) error {
	need(args, 1)
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	states, err := parseMemStates(f)
	if err != nil {
		return err
	}
	if len(states) == 0 {
		return fmt.Errorf("memstates: no BenchmarkOpen result in %s", args[0])
	}
	for _, s := range states {
		data, err := json.Marshal(s)
		if err != nil {
			return err
		}
		fmt.Printf("{\"kind\":\"memstate\",\"result\":%s}\n", data)
	}
	return nil
}

// parseMemStates reads the BenchmarkOpen lines of go test -bench output:
// "BenchmarkOpen/<state>-<n>-<procs>  N  <ns> ns/op  <v> <unit> …".
// Other lines are skipped; a BenchmarkOpen line that does not parse is an
// error.
func parseMemStates(r io.Reader) ([]memState, error) {
	var out []memState
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkOpen/") {
			continue
		}
		s, err := parseMemState(f)
		if err != nil {
			return nil, fmt.Errorf("memstates: %q: %w", sc.Text(), err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseMemState(f []string) (memState, error) {
	var s memState
	name := strings.TrimPrefix(f[0], "BenchmarkOpen/")
	if i := strings.LastIndexByte(name, '-'); i > 0 { // the -GOMAXPROCS suffix
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return s, fmt.Errorf("no entry count in %q", name)
	}
	n, err := strconv.ParseFloat(name[i+1:], 64)
	if err != nil || n < 1 || n > 1e12 {
		return s, fmt.Errorf("entry count %q", name[i+1:])
	}
	s.State, s.Entries = name[:i], int(n)
	units := map[string]*float64{
		"ns/op": &s.OpenMS, "bytes/entry": &s.HeapPerEntry, "set-bytes/entry": &s.SetPerEntry,
		"key-text-bytes/entry": &s.KeyText, "mem/key-text": &s.OverKeyText,
		"requests/op": &s.Requests, "lists/op": &s.Lists,
	}
	for j := 2; j+1 < len(f); j += 2 {
		if dst, ok := units[f[j+1]]; ok {
			v, err := strconv.ParseFloat(f[j], 64)
			if err != nil {
				return s, fmt.Errorf("%s %q: %w", f[j+1], f[j], err)
			}
			*dst = v
		}
	}
	if s.KeyText <= 0 || s.HeapPerEntry <= 0 {
		return s, fmt.Errorf("no bytes/entry or key-text-bytes/entry")
	}
	s.OpenMS /= 1e6
	return s, nil
}

// memStateNotes say what each state of BenchmarkOpen is.
var memStateNotes = map[string]string{
	"clean":         "a clean folded store: one complete list, an empty journal",
	"after-fold":    "right after a complete fold: the list, and the journal's lines marked folded (they stay an hour; at 1e7 the last 1e6)",
	"journal-1000":  "1,000 unfolded journal lines no list holds, beside the list",
	"journal-half":  "half the entries in unfolded journal lines, half in the list",
	"partial-lists": "10 partial lists beside a complete one",
	"sig-only":      "signatures only, 16 signers",
	"not-folded":    "not folded: the journal's own set (lookups list prefixes)",
}

func (r *results) memStates() []memState {
	var out []memState
	for _, rec := range r.memstates {
		var s memState
		if json.Unmarshal(rec.Result, &s) == nil && s.Entries > 0 {
			out = append(out, s)
		}
	}
	return out
}

// memStatesSection is the table of the heap an open keeps in each state.
func (r *results) memStatesSection(w io.Writer) {
	states := r.memStates()
	if len(states) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("### Memory in every state\n\n")
	p("`go test -bench BenchmarkOpen ./index` (index/memory_bench_test.go): an open of a mem:// store in each state, the heap the loaded index keeps per entry after a GC (beside the store's own bytes), the set's arrays, and that heap over the key text of the set's entries.\n\n")
	p("| state | entries | open | heap kept per entry | set's arrays per entry | key text per entry | heap ÷ key text | requests of the open |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range states {
		note := memStateNotes[s.State]
		if note == "" {
			note = s.State
		}
		p("| %s | %s | %s | %.1f B | %.1f B | %.1f B | %.2f | %.0f |\n", note, count(int64(s.Entries)), secs(s.OpenMS/1000),
			s.HeapPerEntry, s.SetPerEntry, s.KeyText, s.OverKeyText, s.Requests)
	}
	p("\n")
}

// memStateTargets is the issue-16 target, state by state.
func (r *results) memStateTargets(w io.Writer, mark func(bool) string) {
	for _, s := range r.memStates() {
		fmt.Fprintf(w, "| the set ≤ 0.6 × its key text: %s, %s entries | %.1f B for %.1f B of key text: %.2f× | %s |\n",
			s.State, count(int64(s.Entries)), s.HeapPerEntry, s.KeyText, s.OverKeyText, mark(s.OverKeyText <= 0.6))
	}
}
