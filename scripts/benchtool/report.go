package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// record is one line of the results scripts/bench writes (JSON lines).
type record struct {
	Kind string `json:"kind"`

	// machine
	Key   string `json:"key"`
	Value string `json:"value"`

	// browse: one operation on one system at one added latency
	System    string           `json:"system"`
	LatencyMS int              `json:"latency_ms"`
	Step      string           `json:"step"`
	Status    string           `json:"status"` // ok, timeout, failed, skipped
	WallS     float64          `json:"wall_s"`
	Runs      []float64        `json:"runs"`
	Files     int64            `json:"files"`
	Req       map[string]int64 `json:"req"`
	Note      string           `json:"note"`
	// CPUS is the CPU (user + system, /proc/PID/stat) the mount's process
	// spent during the step (the median of its runs), nil where no mount
	// process served it (tmpfs, the server) or a run before the field.
	CPUS *float64 `json:"cpu_s"`
	// ServerCPUS and ProxyCPUS are the CPU versitygw and scripts/countproxy
	// spent during a single-run step (they share the machine's cores with
	// the mount), nil in a run before the fields.
	ServerCPUS *float64 `json:"server_cpu_s"`
	ProxyCPUS  *float64 `json:"proxy_cpu_s"`

	// open, mount, fold, gen, write, roundtrip
	Entries int             `json:"entries"`
	RSSKiB  int64           `json:"rss_kib"`
	Result  json.RawMessage `json:"result"`
}

type results struct {
	machine map[string]string
	keys    []string // machine keys in order
	browse  []record
	opens   []record
	reopens []record // opens through a list cache (kind "reopen")
	mounts  []record
	folds   []record
	gens    []record
	writes  []record
	rts     []record
	huge    []record // the --huge steps (hugereport.go)
	states  []record // the oxyfs mount's state after a step (benchtool mountstate; targets27.go)
	// memory in every state (memstates.go)
	memstates []record
}

func readResults(name string) (*results, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &results{machine: map[string]string{}}
	// byKind: where each kind of record goes but "machine" (kept apart,
	// in order); a record of another kind is skipped.
	byKind := map[string]*[]record{
		"browse":     &r.browse,
		"open":       &r.opens,
		"reopen":     &r.reopens,
		"mount":      &r.mounts,
		"fold":       &r.folds,
		"gen":        &r.gens,
		"write":      &r.writes,
		"roundtrip":  &r.rts,
		"huge":       &r.huge,
		"mountstate": &r.states,
		"memstate":   &r.memstates,
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, n, err)
		}
		if rec.Kind == "machine" {
			if _, ok := r.machine[rec.Key]; !ok {
				r.keys = append(r.keys, rec.Key)
			}
			r.machine[rec.Key] = rec.Value
		} else if list := byKind[rec.Kind]; list != nil {
			*list = append(*list, rec)
		}
	}
	return r, sc.Err()
}

// Steps and systems in the order the tables show them.
var (
	stepNames = []struct{ id, name string }{
		{"find-cold", "`find -type f`, cold (fresh mount)"},
		{"find-warm", "`find -type f`, warm (same mount again)"},
		{"ls-R", "`ls -R`, warm (after the finds)"},
		{"ls-lR", "`ls -lR` (after the finds)"},
		{"ls-lR-cold", "`ls -lR`, cold (fresh mount)"},
		{"cat-warm", "`cat` of every signature (after `ls -lR`)"},
		{"cat-cold", "`cat` of every signature, cold (fresh mount, paths from a list)"},
		{"du", "`du -s` (after `cat`)"},
	}
	// server is the S3 server's own GET rate (benchtool getrate: every
	// signature, 16 in flight, in the cat rows), server-depth the same at
	// the depth oxyfs's read-ahead reached; floor is scripts/floorfs.
	systemOrder = []string{"oxyfs", "floor", "server", "server-depth", "rclone", "s3fs", "tmpfs"}
)

func secs(s float64) string {
	switch {
	case s < 1:
		return fmt.Sprintf("%.0f ms", s*1000)
	case s < 10:
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}

func count(n int64) string {
	s := fmt.Sprint(n)
	if n < 10000 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// wall formats a browse result: the median of its runs, the range if
// there were several, or what stopped it.
func wall(r *record) string {
	if r == nil {
		return "—"
	}
	switch r.Status {
	case "timeout":
		return fmt.Sprintf("**> %s** (cap)", secs(r.WallS))
	case "skipped":
		return "not run"
	case "failed":
		return "failed"
	}
	s := secs(r.WallS)
	if len(r.Runs) > 1 {
		lo, hi := slices.Min(r.Runs), slices.Max(r.Runs)
		s += fmt.Sprintf(" (%s–%s, %d runs)", secs(lo), secs(hi), len(r.Runs))
	}
	return s
}

func reqs(r *record) string {
	if r == nil || r.Status == "skipped" {
		return "—"
	}
	if r.System == "tmpfs" || r.System == "floor" {
		return "—"
	}
	s := fmt.Sprintf("%s / %s / %s", count(r.Req["LIST"]), count(r.Req["GET"]), count(r.Req["HEAD"]))
	if r.Status == "timeout" {
		s += " (until stopped)"
	}
	return s
}

func (r *results) find(kind, system, step string, lat int) *record {
	for i := range r.browse {
		b := &r.browse[i]
		if b.System == system && b.Step == step && b.LatencyMS == lat {
			return b
		}
	}
	return nil
}

func (r *results) latencies() []int {
	var ls []int
	for _, b := range r.browse {
		if !slices.Contains(ls, b.LatencyMS) {
			ls = append(ls, b.LatencyMS)
		}
	}
	slices.Sort(ls)
	return ls
}

func report(name string, w io.Writer) error {
	r, err := readResults(name)
	if err != nil {
		return err
	}
	m := r.machine
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }

	if m["only"] == "huge" {
		p("## Run of %s: the --huge steps only\n\n", m["date"])
	} else {
		p("## Run of %s: %s entries\n\n", m["date"], m["entries"])
	}
	p("`%s`\n\n", m["command"])
	p("**Machine.** %s CPUs (%s), %s of memory, Linux %s, %s; versitygw %s (posix backend) on 127.0.0.1, %s, %s. ",
		m["nproc"], m["model"], m["memory"], m["kernel"], m["go"], m["versitygw"], m["rclone"], m["s3fs"])
	p("Load average at the start %s, at the end %s (other work shared the machine: see the notes).\n\n", m["load_start"], m["load_end"])
	for _, rt := range r.rts {
		var v map[string]float64
		json.Unmarshal(rt.Result, &v)
		if x, ok := v["same_cpu_us"]; ok {
			p("**Round trips on this machine.** A byte over a pipe and back between two processes: %.1f µs on one CPU, %.1f µs across two. ", x, v["cross_cpu_us"])
		}
		if x, ok := v["stat_us"]; ok {
			p("One FUSE request (a LOOKUP of a missing name on the oxyfs mount, from one process): %.1f µs. ", x)
		}
		if x, ok := v["sequential_keys_per_s"]; ok {
			p("versitygw lists %.0f keys/s page after page (%.0f ms a 1000-key page, as a fold lists a kind), %.0f / %.0f / %.0f / %.0f keys/s listing 1 / 2 / 4 / 8 `sig/<hh>/` prefixes at a time. ",
				x, v["sequential_ms_per_page"], v["parallel_1_keys_per_s"], v["parallel_2_keys_per_s"], v["parallel_4_keys_per_s"], v["parallel_8_keys_per_s"])
		}
		if x, ok := v["put_ms"]; ok {
			p("versitygw, one request at a time: PUT of a new 100-byte key %.1f ms, GET %.1f ms, compare-and-swap update of a small record %.1f ms; 8 concurrent writers of new keys: %.0f PUT/s. ",
				x, v["get_ms"], v["cas_update_ms"], v["put_8_writers_per_s"])
		}
	}
	p("\n\n")

	if len(r.browse) > 0 {
		r.browseSection(w)
	}
	if len(r.opens) > 0 {
		r.openSection(w)
	}
	r.memStatesSection(w)
	r.hugeSection(w)
	if len(r.writes) > 0 {
		r.writeSection(w)
	}
	r.issue27(w)
	r.issue38(w)
	r.targets(w)
	return nil
}

// browseSection is the table of the browsing steps, system by system and
// latency by latency.
func (r *results) browseSection(w io.Writer) {
	m := r.machine
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	lats := r.latencies()
	p("### Browsing the same bucket\n\n")
	p("Wall time (median of the runs where there were several) and the requests that reached the server, by kind, counted by `scripts/countproxy` on the server side of the wire, with each latency added on the wire (each byte a client sends reaches the proxy that much later: requests sent one after another see it each, parallel ones once a wave, pipelined ones once a batch). ")
	p("oxyfs and tmpfs hold the mount's tree (`sig/ seal/ receipt/ approval/ cert/ accepted/ by-signer/`; oxyfs also `.oxy/`); rclone and s3fs show the bucket (the same entry keys, and the store's `pack-` records instead of `by-signer/`). ")
	p("Each step is capped at %s s; a capped step stops the rest of that system's steps at that latency. ", m["cap"])
	p("Cold is a fresh mount (the kernel holds nothing of it); tmpfs has no cold state (its tree is the dentry cache), so its two find rows measure the same thing, and no latency reaches it. ")
	p("floor is `scripts/floorfs`, a raw go-fuse filesystem serving the tmpfs copy from memory with oxyfs's kernel caching: the FUSE transport's cost on this machine, which no latency reaches either. ")
	p("server is the S3 server itself (`benchtool getrate`): a GET of every signature, 16 in flight, through the same proxy at the same latency; server-depth the same with as many in flight as oxyfs's read-ahead reached in its cold `cat` at that latency (`.oxy/status`).\n\n")
	p("| operation | system | files |")
	for _, l := range lats {
		p(" %d ms: wall | %d ms: LIST / GET / HEAD |", l, l)
	}
	p("\n|---|---|--:|")
	for range lats {
		p("--:|--:|")
	}
	p("\n")
	for _, st := range stepNames {
		first := true
		for _, sys := range systemOrder {
			var any *record
			for _, l := range lats {
				if b := r.find("browse", sys, st.id, l); b != nil {
					any = b
				}
			}
			if any == nil {
				continue
			}
			op := ""
			if first {
				op, first = st.name, false
			}
			files := "—"
			for _, l := range lats {
				if b := r.find("browse", sys, st.id, l); b != nil && b.Status == "ok" && b.Files > 0 {
					files = count(b.Files)
				}
			}
			p("| %s | %s | %s |", op, sys, files)
			for _, l := range lats {
				b := r.find("browse", sys, st.id, l)
				p(" %s | %s |", wall(b), reqs(b))
			}
			p("\n")
		}
	}
	p("\n")
	var notes []string
	for _, b := range r.browse {
		if b.Note != "" && b.System != "server-depth" && !slices.Contains(notes, b.Note) {
			notes = append(notes, b.Note)
		}
	}
	var dropped int64
	for _, recs := range [][]record{r.browse, r.folds, r.writes} {
		for _, b := range recs {
			dropped += b.Req["UPSTREAM_DROPPED"]
		}
	}
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("versitygw dropped %d connections in the measured steps (it answers a failed conditional PUT before reading the body, then closes); the proxy dropped the client's connection each time, as the server would have.", dropped))
	}
	for _, n := range notes {
		p("- %s\n", n)
	}
	if len(notes) > 0 {
		p("\n")
	}
}

// openSection is the table of the opens and the folds.
func (r *results) openSection(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("### Opening, memory, fold\n\n")
	p("| store | latency | entries | open (median / min of runs) | requests of one open | heap kept per entry | × key text | mount RSS |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, o := range r.opens {
		var v openResult
		if err := json.Unmarshal(o.Result, &v); err != nil {
			continue
		}
		rss := "—"
		for _, mr := range r.mounts {
			if mr.Entries == v.Entries && mr.Note == o.Note && mr.LatencyMS == o.LatencyMS {
				rss = fmt.Sprintf("%.0f MiB (%.0f B/entry)", float64(mr.RSSKiB)/1024, float64(mr.RSSKiB)*1024/float64(v.Entries))
			}
		}
		p("| %s | %d ms | %s | %s / %s | %s | %.1f B (of %.1f B key text) | %.2f | %s |\n", o.Note, o.LatencyMS, count(int64(v.Entries)),
			secs(v.MedianMS/1000), secs(v.MinMS/1000), countsString(v.Requests.List, v.Requests.Get, v.Requests.Head), v.HeapPerEntry, v.KeyTextPerEntry, v.HeapOverKeyText, rss)
	}
	p("\n")
	if len(r.reopens) > 0 {
		p("| store, through a list cache (`--cache-dir`) | entries | first open (decodes, then writes the cache) | reopen (maps it; median) | reopen CPU |\n|---|--:|--:|--:|--:|\n")
		for _, o := range r.reopens {
			var v openResult
			if err := json.Unmarshal(o.Result, &v); err != nil {
				continue
			}
			p("| %s | %s | %s | %s | %s |\n", o.Note, count(int64(v.Entries)), secs(v.FirstMS/1000), secs(v.ReopenMedianMS/1000), secs(v.ReopenCPUMS/1000))
		}
		p("\n")
	}
	if len(r.gens)+len(r.folds) > 0 {
		p("| step | entries | wall | requests (LIST / GET / HEAD / PUT) | note |\n|---|--:|--:|--:|---|\n")
		for _, g := range r.gens {
			p("| `oxyfs gen` (straight to versitygw, not counted) | %s | %s | — | %s |\n", count(int64(g.Entries)), secs(g.WallS), g.Note)
		}
		for _, f := range r.folds {
			st := secs(f.WallS)
			if f.Status == "timeout" {
				st = fmt.Sprintf("**> %s** (cap)", secs(f.WallS))
			}
			p("| `oxyfs fold` (complete) | %s | %s | %s / %s / %s / %s | %s |\n", count(int64(f.Entries)), st,
				count(f.Req["LIST"]), count(f.Req["GET"]), count(f.Req["HEAD"]), count(f.Req["PUT"]), f.Note)
		}
		p("\n")
	}
}

// writeSection is the table of the write runs.
func (r *results) writeSection(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("### Writes: 8 concurrent writers\n\n")
	p("| store | writer | latency | signatures | wall | signatures/s | PUT | GET | journal updates (PUT of `pack-entries`) | per entry | errors |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, wr := range r.writes {
		var v writeResult
		json.Unmarshal(wr.Result, &v)
		var how string
		switch {
		case v.Batch > 1:
			how = fmt.Sprintf("`oxyfs put --batch` (%d per process)", v.Batch)
		case v.How == "oxyfs put":
			how = "`oxyfs put` (one process per signature)"
		case v.How == "index.Put":
			how = "index.Put in one process (the mount's write path without FUSE)"
		default:
			how = "**through the mount** (mkdir, create, write, close)"
		}
		per := float64(wr.Req["JOURNAL_PUT"]) / float64(max(v.Count, 1))
		errs := fmt.Sprint(v.Errors)
		if v.FirstEr != "" {
			errs += " (" + strings.ReplaceAll(v.FirstEr, "|", "/") + ")"
		}
		wall := secs(v.WallS)
		if v.PerS == 0 {
			wall = "> " + wall
		}
		p("| %s | %s | %d ms | %s | %s | %.0f | %s | %s | %s | %.3f | %s |\n", wr.Note, how, wr.LatencyMS, count(int64(v.Count)), wall, v.PerS,
			count(wr.Req["PUT"]), count(wr.Req["GET"]), count(wr.Req["JOURNAL_PUT"]), per, errs)
	}
	p("\n")
}

func countsString(l, g, h int64) string {
	return fmt.Sprintf("%s LIST + %s GET + %s HEAD", count(l), count(g), count(h))
}

// targets quotes each target of DESIGN §7 beside what this run measured.
func (r *results) targets(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("### DESIGN §7, target by target\n\n| target (DESIGN §7) | measured in this run | |\n|---|---|---|\n")
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}

	// 0 LIST while browsing.
	var lists int64
	var steps int
	for _, b := range r.browse {
		if b.System == "oxyfs" && b.Status != "skipped" {
			lists += b.Req["LIST"]
			steps++
		}
	}
	if steps > 0 {
		p("| 0 LIST requests while browsing a folded store | %s LIST in %d oxyfs browsing steps (find, ls -R, ls -lR, cat; every latency) | %s |\n", count(lists), steps, mark(lists == 0 && steps > 0))
	}

	// Open cost and time and memory.
	for _, o := range r.opens {
		var v openResult
		if json.Unmarshal(o.Result, &v) != nil || o.LatencyMS != 0 {
			continue
		}
		want := int64(v.LiveLists + 2)
		p("| open = 1 LIST + (live lists + 2) GETs (%s) | %d LIST + %d GET with %d live list(s) | %s |\n", o.Note, v.Requests.List, v.Requests.Get, v.LiveLists,
			mark(v.Requests.List == 1 && v.Requests.Get == want && v.Requests.Head == 0))
		if v.Entries >= 1_000_000 {
			p("| open of a 1,000,000-entry folded store in ≤ 1 s on 2 cores | %s median, %s best (%s) | %s |\n", secs(v.MedianMS/1000), secs(v.MinMS/1000), o.Note, mark(v.MedianMS <= 1000))
			p("| resident memory for the set ≤ 0.6 × its key text | %.1f B per entry kept on the heap for %.1f B of key text: %.2f × (%s) | %s |\n", v.HeapPerEntry, v.KeyTextPerEntry, v.HeapOverKeyText, o.Note, mark(v.HeapOverKeyText <= 0.6))
		}
	}

	// find within 3× tmpfs cold, 1.5× warm.
	for _, l := range r.latencies() {
		for _, c := range []struct {
			step  string
			bound float64
			what  string
		}{{"find-cold", 3, "3× cold"}, {"find-warm", 1.5, "1.5× warm"}} {
			o, t := r.find("browse", "oxyfs", c.step, l), r.find("browse", "tmpfs", c.step, l)
			if o == nil || t == nil || o.Status != "ok" || t.Status != "ok" || t.WallS == 0 {
				continue
			}
			ratio := o.WallS / t.WallS
			p("| `find MOUNT -type f` over %s entries within %s tmpfs (%d ms added) | %s vs %s: %.1f× | %s |\n", r.machine["entries"], c.what, l, secs(o.WallS), secs(t.WallS), ratio, mark(ratio <= c.bound))
		}
	}

	r.issue16(w, mark)

	// Writes.
	for _, wr := range r.writes {
		var v writeResult
		json.Unmarshal(wr.Result, &v)
		if v.How != "mount" || wr.LatencyMS != 0 || !strings.Contains(wr.Note, "empty journal") {
			continue
		}
		per := float64(wr.Req["JOURNAL_PUT"]) / float64(max(v.Count, 1))
		p("| ≥ 500 signatures/s through the mount from 8 concurrent writers on a local S3 server, far fewer journal updates than entries | %.0f signatures/s; %s journal updates for %s entries (%.3f per entry) | %s |\n",
			v.PerS, count(wr.Req["JOURNAL_PUT"]), count(int64(v.Count)), per, mark(v.PerS >= 500 && per < 0.5))
	}

	// Fold.
	for _, f := range r.folds {
		if f.Entries < 1_000_000 {
			p("| (fold of %s entries on a local S3 server) | %s, %s LIST | |\n", count(int64(f.Entries)), secs(f.WallS), count(f.Req["LIST"]))
			continue
		}
		p("| fold of 1,000,000 entries on a local S3 server in ≤ 30 s | %s (%s LIST) | %s |\n", secs(f.WallS), count(f.Req["LIST"]), mark(f.Status == "ok" && f.WallS <= 30))
	}
	r.memStateTargets(w, mark)
	r.hugeTargets(w, mark)
	p("\n")
}
