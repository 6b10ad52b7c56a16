package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The targets of issue 38, each beside what ran with it in the same run
// (the FUSE floor, tmpfs) or against its stated bound, with what bounds a
// miss where the run measured that too. As in targets27.go, nothing here is
// a figure of its own: a target the run did not measure says "not
// measured", and a figure at a size or latency the target does not name is
// shown without a verdict.

const (
	// lsColdBound is target 2's: a cold ls -lR within 2× the floor's.
	lsColdBound = 2.0
	// cpuReadBound is target 3's: the mount's CPU per signature of a cold
	// cat within 2× the floor's.
	cpuReadBound = 2.0
	// openBoundMS and reopenBoundMS are target 4's, at openEntries.
	openBoundMS, reopenBoundMS = 3000.0, 1000.0
	openEntries                = 10_000_000
	// warmFindEntries is the size target 1's warm find is named at.
	warmFindEntries = 1_000_000
)

// lsColdLatencies are the added latencies target 2 is stated at.
var lsColdLatencies = []int{0, 20}

// row38 is one row of the table.
type row38 struct {
	target, measure, oxyfs, ref, ratio, bound, verdict string
}

// figureOnly is the verdict of a figure at a size or latency the target
// does not name.
func figureOnly(why string) string { return "figure only (" + why + ")" }

func verdict38(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}

// okRun is a browse step that ran to its end.
func okRun(b *record) bool { return b != nil && b.Status == "ok" && b.WallS > 0 }

// issue38 writes the section of issue 38's targets.
func (r *results) issue38(w io.Writer) {
	if len(r.browse) == 0 && len(r.huge) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("### Issue 38, target by target\n\n")
	p("Each figure is from this run: oxyfs beside the FUSE floor (`scripts/floorfs`, serving the same tree from memory) and tmpfs at the same added latency, or against the target's own bound (the set, the signature cache's bound and the sizes' bound as the mount's `.oxy/status` states them; 3 s, 1 s). ")
	p("CPU is a process's user + system time (`/proc/PID/stat`) over the step; requests are those `scripts/countproxy` counted at the server. ")
	p("\"What bounds a miss\" compares figures measured beside it; it says nothing the run did not measure. ")
	p("%s\n\n", r.mountFlagsLine())
	p("| target (issue 38) | measure | oxyfs | reference | ratio | what bounds a miss (measured beside it) | |\n|---|---|--:|--:|--:|---|---|\n")
	var rows []row38
	rows = append(rows, r.memoryRows38()...)
	rows = append(rows, r.warmFindRow38())
	rows = append(rows, r.lsColdRows38()...)
	rows = append(rows, r.cpuReadRows38()...)
	rows = append(rows, r.openRows38()...)
	for _, x := range rows {
		p("| %s | %s | %s | %s | %s | %s | %s |\n", x.target, x.measure, x.oxyfs, x.ref, x.ratio, x.bound, x.verdict)
	}
	p("\n")
}

// mountFlags is what scripts/bench gave every oxyfs mount beyond its own
// flags (--mount-flags), and whether the run recorded it.
func (r *results) mountFlags() (string, bool) {
	f, ok := r.machine["mount_flags"]
	return strings.TrimSpace(f), ok
}

func (r *results) mountFlagsLine() string {
	const base = "`oxyfs mount --layout bucket --read-only --cache-dir DIR`"
	f, ok := r.mountFlags()
	switch {
	case !ok:
		return "The oxyfs mounts measured here ran as " + base + " (the run recorded no `--mount-flags`: a run before the option, no other flags)."
	case f == "" && r.leafIDs():
		return "The oxyfs mounts measured here ran as " + base + ", no other flags (`--mount-flags` not given: leaf ids on, the default of the oxyfs built)."
	case f == "":
		return "The oxyfs mounts measured here ran as " + base + ", no other flags (`--mount-flags` not given: no `--leaf-ids`)."
	}
	return "The oxyfs mounts measured here ran as " + base + " with `" + f + "` (`scripts/bench --mount-flags`)."
}

// leafIDs reports whether the oxyfs mounts had leaf ids: as the run
// recorded it (machine leaf_ids, "on" or "off": from the flags, else the
// default of the oxyfs it built), or, in a run from before that record
// (when leaf ids were off by default), whether its flags asked for them.
func (r *results) leafIDs() bool {
	if v, ok := r.machine["leaf_ids"]; ok {
		return v == "on"
	}
	f, _ := r.mountFlags()
	return slices.Contains(strings.Fields(f), "--leaf-ids")
}

// flagsNote is the memory rows' word on the flags the mount ran with.
func (r *results) flagsNote() string {
	f, _ := r.mountFlags()
	const without = " (a go-fuse node for each entry file the kernel holds)"
	switch {
	case r.leafIDs() && slices.Contains(strings.Fields(f), "--leaf-ids"):
		return "mounted with `" + f + "`"
	case r.leafIDs() && f == "":
		return "mounted with leaf ids (the default)"
	case r.leafIDs():
		return "mounted with `" + f + "` and leaf ids (the default)"
	case f == "":
		return "mounted without `--leaf-ids`" + without
	}
	return "mounted with `" + f + "`, without `--leaf-ids`" + without
}

// budget38 is target 1's bound for a mount state: the set, the signature
// cache's bound and the sizes' bound where the mount states it, and 64 MiB
// (as target4 counts it), in KiB, and its parts as text.
func budget38(st mountState) (float64, string) {
	kib := float64(st.MemoryBytes+st.SigCacheBound+st.SigSizesBound)/1024 + 64*1024
	parts := fmt.Sprintf("set %s + cache bound %s", mib(float64(st.MemoryBytes)/1024), mib(float64(st.SigCacheBound)/1024))
	if st.SigSizesBound > 0 {
		parts += " + sizes bound " + mib(float64(st.SigSizesBound)/1024)
	}
	return kib, parts + " + 64 MiB"
}

// memoryRow38 fills a target-1 row from a mount state: its RSS against
// budget38, and what the RSS holds beside the set and the cache.
func (r *results) memoryRow38(x row38, st mountState) row38 {
	budget, parts := budget38(st)
	x.oxyfs = mib(float64(st.RSSKiB))
	x.ref = fmt.Sprintf("%s (%s)", mib(budget), parts)
	x.ratio = fmt.Sprintf("%.2f×", float64(st.RSSKiB)/budget)
	rest := float64(st.RSSKiB) - float64(st.MemoryBytes+st.SigCacheBytes)/1024
	why := []string{fmt.Sprintf("beside the set and the %s the cache holds: %s", mib(float64(st.SigCacheBytes)/1024), mib(rest))}
	if st.RSSAnonKiB > 0 || st.RSSFileKiB > 0 {
		why = append(why, fmt.Sprintf("the RSS is %s anonymous (heap, go-fuse's nodes, buffers) and %s file pages (the mapped list cache)", mib(float64(st.RSSAnonKiB)), mib(float64(st.RSSFileKiB))))
	}
	if q := st.FuseRequests; q != nil {
		why = append(why, fmt.Sprintf("the kernel sent the mount %s LOOKUP, %s READDIRPLUS and %s FORGET", count(q["LOOKUP"]), count(q["READDIRPLUS"]), count(q["FORGET"])))
	}
	why = append(why, r.flagsNote())
	x.bound = strings.Join(why, "; ")
	x.verdict = verdict38(float64(st.RSSKiB) <= budget)
	return x
}

// hugeState is the mount state a huge step recorded.
func hugeState(h *record) (mountState, bool) {
	var st mountState
	if !hugeOK(h) || json.Unmarshal(h.Result, &st) != nil || st.RSSKiB == 0 {
		return st, false
	}
	return st, true
}

// walkSteps are the steps of the --huge walk (bench-huge.sh huge_walk)
// whose end the walk-state follows.
var walkSteps = []string{"walk-find", "walk-ls-lR", "walk-cat", "walk-du"}

// memoryRows38 is target 1's memory: after browsing at --entries (each
// latency), after the --huge walk of the fold's store (find, ls -lR, cat,
// du), and after the --huge-mount finds (find only).
func (r *results) memoryRows38() []row38 {
	const measure = "VmRSS of the mount's process against the set (`memory_bytes`), the signature cache's bound (`sig_cache_bound`), the sizes' bound (`sig_sizes_bound`) and 64 MiB"
	entries := r.machine["entries"]
	var rows []row38
	for _, l := range r.latencies() {
		x := row38{target: fmt.Sprintf("1. mount memory after find, ls -R, ls -lR, cat and du of every entry ≤ the set + the cache's bound + 64 MiB, %s entries, %d ms", entries, l), measure: measure}
		st, has := r.state("oxyfs", l, "after-browse")
		if !has {
			rows = append(rows, notMeasured38(x, ""))
			continue
		}
		rows = append(rows, r.memoryRow38(x, st))
	}
	if ws := r.hugeStep("walk-state"); ws != nil || r.hugeStep("walk-find") != nil {
		n := int64(0)
		for _, h := range []*record{r.hugeStep("walk-find"), ws} {
			if h != nil && n == 0 {
				n = int64(h.Entries)
			}
		}
		x := row38{target: fmt.Sprintf("1. mount memory after find, ls -lR, cat and du of every entry ≤ the set + the cache's bound + 64 MiB, %s entries (the fold's store, fresh mount)", count(n)), measure: measure}
		var cut, walls []string
		var gets, lists int64
		for _, s := range walkSteps {
			h := r.hugeStep(s)
			name := strings.TrimPrefix(s, "walk-")
			if !hugeOK(h) {
				cut = append(cut, name+": "+stepWall(h))
				continue
			}
			walls = append(walls, name+" "+secs(h.WallS))
			gets, lists = gets+h.Req["GET"], lists+h.Req["LIST"]
		}
		st, has := hugeState(ws)
		switch {
		case !has:
			rows = append(rows, notMeasured38(x, "no mount state after the walk"))
		case len(cut) == 0:
			x = r.memoryRow38(x, st)
			x.bound = fmt.Sprintf("the walk: %s (%s GET, %s LIST); ", strings.Join(walls, ", "), count(gets), count(lists)) + x.bound
			rows = append(rows, x)
		default:
			// A walk cut short: an RSS over the bound already misses it;
			// one under it says nothing of the whole walk.
			x = r.memoryRow38(x, st)
			x.bound = "the walk did not finish (" + strings.Join(cut, ", ") + "): the RSS is after part of it; " + x.bound
			if x.verdict == "met" {
				x.verdict = notMeasured
			}
			rows = append(rows, x)
		}
	}
	if h := r.hugeStep("huge-find-state"); h != nil {
		x := row38{target: fmt.Sprintf("1. mount memory after a cold and a warm `find` of every entry ≤ the set + the cache's bound + 64 MiB, %s entries (`--huge-mount`: a list without signatures' bytes, so no ls -lR, cat or du)", count(int64(h.Entries))), measure: measure}
		if st, has := hugeState(h); has {
			rows = append(rows, r.memoryRow38(x, st))
		} else {
			rows = append(rows, notMeasured38(x, stepWall(h)))
		}
	}
	return rows
}

// warmFindRow38 is target 1's warm find: faster than the cold one at
// 1,000,000 entries (the --huge-mount finds).
func (r *results) warmFindRow38() row38 {
	c, wm := r.hugeStep("huge-find-cold"), r.hugeStep("huge-find-warm")
	x := row38{target: "1. a warm `find` of 1,000,000 entries faster than the cold one", measure: "wall of `find` on a fresh mount (cold), then again on the same mount (warm)"}
	if c == nil {
		return notMeasured38(x, "no `--huge-mount` or `--huge` steps in this run (`--huge-entries 1000000`)")
	}
	x.target = fmt.Sprintf("1. a warm `find` of %s entries faster than the cold one", count(int64(c.Entries)))
	if !hugeOK(c) || !hugeOK(wm) || c.WallS <= 0 || wm.WallS <= 0 {
		return notMeasured38(x, "cold "+stepWall(c)+", warm "+stepWall(wm))
	}
	x.oxyfs, x.ref = "warm "+secs(wm.WallS), "cold "+secs(c.WallS)
	x.ratio = fmt.Sprintf("%.2f×", wm.WallS/c.WallS)
	var why []string
	dc, okc := fuseDelta(c)
	dw, okw := fuseDelta(wm)
	if okc && okw && dc.Requests != nil && dw.Requests != nil {
		why = append(why, fmt.Sprintf("the kernel sent the warm find %s requests (%s READDIRPLUS, %s LOOKUP, %s GETATTR), the cold one %s (%s READDIRPLUS, %s LOOKUP)",
			count(dw.Requests["total"]), count(dw.Requests["READDIRPLUS"]), count(dw.Requests["LOOKUP"]), count(dw.Requests["GETATTR"]),
			count(dc.Requests["total"]), count(dc.Requests["READDIRPLUS"]), count(dc.Requests["LOOKUP"])))
		if f := dc.Requests["FORGET"] + dw.Requests["FORGET"]; f > 0 {
			why = append(why, fmt.Sprintf("it dropped %s nodes during the two (FORGET): what it dropped the warm find asks for again", count(f)))
		}
	}
	if d := nums(c)["dirs"]; d > 0 {
		why = append(why, fmt.Sprintf("%s directories", count(int64(d))))
	}
	why = append(why, r.flagsNote())
	x.bound = strings.Join(why, "; ")
	x.verdict = verdict38(wm.WallS < c.WallS)
	if c.Entries < warmFindEntries {
		x.verdict = figureOnly("the target is at 1,000,000 entries")
	}
	return x
}

// sigs is the number of signatures the run's cold cat reads (0: not
// recorded).
func (r *results) sigs() int64 {
	n, _ := strconv.ParseInt(r.machine["sigs"], 10, 64)
	return n
}

// cpuNote is "the mount's CPU a s, the floor's b s (c×)", empty where
// either is not recorded.
func cpuNote(o, f *record) string {
	if o == nil || f == nil || o.CPUS == nil || f.CPUS == nil {
		return ""
	}
	return fmt.Sprintf("the mount's process used %s of CPU during it, the floor's %s (%s)", secs(*o.CPUS), secs(*f.CPUS), ratioOf(*o.CPUS, *f.CPUS, ""))
}

// sharedCPUNote says what the CPU of the mount, the server and the
// counting proxy during step o, all on this machine's cores, bound its
// wall at: their sum over the cores is a least wall, given as a ratio to
// the floor's wall floorWall; and the same for the server and the proxy
// alone, which no mount can cut. Empty in a run that did not record them.
func (r *results) sharedCPUNote(o *record, floorWall float64) string {
	cores, _ := strconv.Atoi(r.machine["nproc"])
	if o.CPUS == nil || o.ServerCPUS == nil || o.ProxyCPUS == nil || cores < 1 || floorWall <= 0 {
		return ""
	}
	srv := *o.ServerCPUS + *o.ProxyCPUS
	all := srv + *o.CPUS
	c := float64(cores)
	return fmt.Sprintf("the server (versitygw) used %s of CPU and the counting proxy %s, on the same %d cores as the mount: the three processes' CPU alone takes %s of wall on %d cores (%.2f× the floor's wall), the server's and the proxy's alone %s (%.2f×)",
		secs(*o.ServerCPUS), secs(*o.ProxyCPUS), cores, secs(all/c), cores, all/c/floorWall, secs(srv/c), srv/c/floorWall)
}

// lsColdRows38 is target 2: a cold ls -lR within 2× the floor's, with no
// LIST request, at each latency (verdicts at 0 and 20 ms).
func (r *results) lsColdRows38() []row38 {
	var rows []row38
	entries := r.machine["entries"]
	for _, l := range r.latencies() {
		o, f, t := r.find("browse", "oxyfs", "ls-lR-cold", l), r.find("browse", "floor", "ls-lR-cold", l), r.find("browse", "tmpfs", "ls-lR", l)
		x := row38{target: fmt.Sprintf("2. cold `ls -lR` ≤ %.0f× the floor's, with 0 LIST requests, %s entries, %d ms", lsColdBound, entries, l),
			measure: "wall of `ls -lR` of everything on a fresh mount; the LIST and GET requests the server saw during it"}
		if !okRun(f) || (o == nil || (!okRun(o) && o.Status != "timeout")) {
			rows = append(rows, notMeasured38(x, "oxyfs "+wall(o)+", floor "+wall(f)))
			continue
		}
		x.oxyfs = fmt.Sprintf("%s, %s LIST, %s GET", wall(o), count(o.Req["LIST"]), count(o.Req["GET"]))
		x.ref = "floor " + secs(f.WallS)
		if okRun(t) {
			x.ref += fmt.Sprintf("; tmpfs %s (after the finds)", secs(t.WallS))
		}
		ratio := o.WallS / f.WallS
		x.ratio = fmt.Sprintf("%.2f×", ratio)
		var why []string
		if n := r.sigs(); n > 0 {
			why = append(why, fmt.Sprintf("%s GETs for %s signatures (%.2f a signature)", count(o.Req["GET"]), count(n), float64(o.Req["GET"])/float64(n)))
		}
		if c := cpuNote(o, f); c != "" {
			why = append(why, c)
		}
		if sd := r.find("browse", "server-depth", "cat-cold", l); okRun(sd) && sd.Req["GET"] > 0 {
			// The server's own time for as many GETs, at the depth the
			// mount's read-ahead reached in the cold cat (getrate).
			g := float64(o.Req["GET"]) / float64(sd.Req["GET"])
			why = append(why, fmt.Sprintf("the server alone answers as many GETs in %s at the depth read-ahead reached in the cold `cat` (%s: %.2f× the floor's wall)", secs(sd.WallS*g), sd.Note, sd.WallS*g/f.WallS))
		}
		if c := r.sharedCPUNote(o, f.WallS); c != "" {
			why = append(why, c)
		}
		met := ratio <= lsColdBound && o.Req["LIST"] == 0
		if o.Status == "timeout" {
			// Stopped at the cap: the ratio is a lower bound.
			x.ratio = "> " + x.ratio
			why = append([]string{"oxyfs stopped at the cap: its requests are until then"}, why...)
			met = false
		}
		x.bound = strings.Join(why, "; ")
		x.verdict = verdict38(met)
		if o.Status == "timeout" && ratio <= lsColdBound && o.Req["LIST"] == 0 {
			x.verdict = notMeasured
		}
		if !slices.Contains(lsColdLatencies, l) {
			x.verdict = figureOnly("the target is at 0 and 20 ms")
		}
		rows = append(rows, x)
	}
	return rows
}

// cpuReadRows38 is target 3: the mount's CPU per signature of a cold cat
// of every signature within 2× the floor's, at each latency.
func (r *results) cpuReadRows38() []row38 {
	var rows []row38
	n := r.sigs()
	for _, l := range r.latencies() {
		o, f := r.find("browse", "oxyfs", "cat-cold", l), r.find("browse", "floor", "cat-cold", l)
		x := row38{target: fmt.Sprintf("3. the mount's CPU for a cold read of a signature ≤ %.0f× the floor's, %d ms", cpuReadBound, l),
			measure: "CPU of the mount's process during `cat` of every signature on a fresh mount, per signature"}
		switch {
		case !okRun(o) || !okRun(f):
			rows = append(rows, notMeasured38(x, "oxyfs "+wall(o)+", floor "+wall(f)))
			continue
		case o.CPUS == nil || f.CPUS == nil:
			rows = append(rows, notMeasured38(x, "the run recorded no process CPU for the steps"))
			continue
		case n == 0:
			rows = append(rows, notMeasured38(x, "the run recorded no count of signatures"))
			continue
		case *f.CPUS <= 0:
			rows = append(rows, notMeasured38(x, "the floor's CPU rounded to 0 (a clock tick is 10 ms): too few signatures"))
			continue
		}
		per := func(s float64) float64 { return s * 1e6 / float64(n) }
		x.oxyfs = fmt.Sprintf("%.0f µs (%s for %s)", per(*o.CPUS), secs(*o.CPUS), count(n))
		x.ref = fmt.Sprintf("floor %.0f µs (%s)", per(*f.CPUS), secs(*f.CPUS))
		ratio := *o.CPUS / *f.CPUS
		x.ratio = fmt.Sprintf("%.2f×", ratio)
		var why []string
		if g := o.Req["GET"]; g > 0 {
			why = append(why, fmt.Sprintf("the mount sent %s GETs (%.2f a signature): %.0f µs of its CPU a GET; the floor sends none (it serves from memory)", count(g), float64(g)/float64(n), *o.CPUS*1e6/float64(g)))
		}
		if w := r.find("browse", "oxyfs", "cat-warm", l); okRun(w) && w.CPUS != nil {
			why = append(why, fmt.Sprintf("a warm `cat` of every signature (no GET: the FUSE requests and the mount's own work) cost the mount %.0f µs a signature, so the GET path %.0f µs", per(*w.CPUS), per(*o.CPUS)-per(*w.CPUS)))
		}
		why = append(why, fmt.Sprintf("wall: oxyfs %s, floor %s", secs(o.WallS), secs(f.WallS)))
		if o.ServerCPUS != nil && o.ProxyCPUS != nil && n > 0 {
			why = append(why, fmt.Sprintf("the server used %.0f µs of CPU a signature and the counting proxy %.0f µs, on the same cores", per(*o.ServerCPUS), per(*o.ProxyCPUS)))
		}
		if st, has := r.state("oxyfs", l, "cat-cold"); has {
			why = append(why, fmt.Sprintf("read-ahead reached %d GETs in flight (cap %d)", st.ReadAhead.Peak, st.ReadAhead.Max))
		}
		x.bound = strings.Join(why, "; ")
		x.verdict = verdict38(ratio <= cpuReadBound)
		rows = append(rows, x)
	}
	return rows
}

// openRows38 is target 4: the open of 10,000,000 entries ≤ 3 s, and a
// reopen through the list cache ≤ 1 s (the --huge, --huge-mount or
// --huge-open steps).
func (r *results) openRows38() []row38 {
	const where = "no `--huge-open`, `--huge-mount` or `--huge` steps in this run"
	open := row38{target: "4. 10,000,000 entries open in ≤ 3 s", measure: "wall of `benchtool open` (as the mount opens), median of 3, from the local S3 server through the proxy", ref: "3 s"}
	reopen := row38{target: "4. a reopen of 10,000,000 entries with the list cache (`--cache-dir`) in ≤ 1 s", measure: "wall of the reopens through a list cache the first open filled (`benchtool open STORE 3 DIR`), median", ref: "1 s"}
	sized := func(x *row38, n int) {
		x.target = strings.Replace(x.target, "10,000,000", count(int64(n)), 1)
		if n < openEntries {
			x.verdict = figureOnly("the target is at 10,000,000 entries")
		}
	}
	h := r.hugeStep("huge-open")
	if h == nil {
		return []row38{notMeasured38(open, where), notMeasured38(reopen, where)}
	}
	var rows []row38
	if v, ok := h.open(); ok {
		open.oxyfs = fmt.Sprintf("%s median, %s best of %d", secs(v.MedianMS/1000), secs(v.MinMS/1000), max(len(v.OpenMillisOfRuns), v.Repeat))
		open.ratio = fmt.Sprintf("%.2f×", v.MedianMS/openBoundMS)
		why := []string{fmt.Sprintf("one open: %s", countsString(v.Requests.List, v.Requests.Get, v.Requests.Head))}
		if i := slices.Index(v.OpenMillisOfRuns, v.MedianMS); i >= 0 && i < len(v.CPUMillisOfRuns) {
			why = append(why, fmt.Sprintf("the median open used %s of CPU in %s (%.2f cores of %s, %d GOMAXPROCS): at %d cores the CPU alone takes %s", secs(v.CPUMillisOfRuns[i]/1000), secs(v.MedianMS/1000), v.CPUMillisOfRuns[i]/v.MedianMS, r.machine["nproc"], v.GOMAXPROCS, v.GOMAXPROCS, secs(v.CPUMillisOfRuns[i]/1000/float64(max(v.GOMAXPROCS, 1)))))
		}
		if la := r.machine["load_start"]; la != "" {
			why = append(why, "load average at the run's start "+la)
		}
		open.bound = strings.Join(why, "; ")
		open.verdict = verdict38(v.MedianMS <= openBoundMS)
		sized(&open, v.Entries)
		rows = append(rows, open)
	} else {
		rows = append(rows, notMeasured38(open, stepWall(h)))
	}
	rh := r.hugeStep("huge-reopen")
	if v, ok := rh.open(); ok && v.ListCache && v.ReopenMedianMS > 0 {
		reopen.oxyfs = secs(v.ReopenMedianMS / 1000)
		reopen.ratio = fmt.Sprintf("%.2f×", v.ReopenMedianMS/reopenBoundMS)
		reopen.bound = fmt.Sprintf("the reopen's CPU (median) %s in its %s of wall; the first open, which decoded the list and wrote the cache: %s", secs(v.ReopenCPUMS/1000), secs(v.ReopenMedianMS/1000), secs(v.FirstMS/1000))
		reopen.verdict = verdict38(v.ReopenMedianMS <= reopenBoundMS)
		sized(&reopen, v.Entries)
		rows = append(rows, reopen)
	} else if rh == nil {
		rows = append(rows, notMeasured38(reopen, "the run has no reopen through the list cache"))
	} else {
		rows = append(rows, notMeasured38(reopen, stepWall(rh)))
	}
	return rows
}

// notMeasured38 is x with no figure: why, if given, says what the run has.
func notMeasured38(x row38, why string) row38 {
	x.oxyfs, x.ref, x.ratio = notMeasured, "", ""
	if why != "" {
		x.oxyfs = notMeasured + ": " + why
	}
	x.verdict = notMeasured
	return x
}
