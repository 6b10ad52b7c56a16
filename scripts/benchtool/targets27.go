package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The targets of issue 27, each a ratio to what ran beside it in the same
// run, with what bounds it where the run measured that too. Nothing here is
// a figure of its own: a target whose figures the run did not measure says
// "not measured".

// state is the mountstate record of system at lat after step, if any.
func (r *results) state(system string, lat int, step string) (mountState, bool) {
	for _, s := range r.states {
		if s.System == system && s.LatencyMS == lat && s.Step == step {
			var v mountState
			if json.Unmarshal(s.Result, &v) == nil {
				return v, true
			}
		}
	}
	return mountState{}, false
}

// statusReadLookups is the LOOKUPs the first read of .oxy/status on a mount
// sends itself, counted in the text it reads: one, of status (the mount
// gives .oxy/ a node in the root's READDIRPLUS, its files none).
const statusReadLookups = 1

// notMeasured is a target's verdict and figure when the run has none for it.
const notMeasured = "not measured"

// maxNamedPerDir is target 5's bound on the READDIRPLUS that carry names,
// per directory: one, and a few more for the directories whose names fill
// more than one reply (128 KiB, ~800 names).
const maxNamedPerDir = 1.05

// issue27 writes the section of issue 27's six targets.
func (r *results) issue27(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	ok := func(b *record) bool { return b != nil && b.Status == "ok" && b.WallS > 0 }
	verdict := func(met bool) string {
		if met {
			return "met"
		}
		return "**missed**"
	}
	row := func(target, measured, bound, v string) {
		p("| %s | %s | %s | %s |\n", target, measured, bound, v)
	}
	if len(r.browse) == 0 && len(r.huge) == 0 {
		return
	}
	p("### Issue 27, target by target\n\n")
	p("Each figure is from this run, beside what ran with it: the FUSE floor (`scripts/floorfs`), tmpfs, and the server's own GETs (`benchtool getrate`) at the depth oxyfs's read-ahead reached in the same `cat` (`.oxy/status`, `read_ahead.peak`). ")
	p("\"What bounds it\" compares those figures; it says nothing the run did not measure.\n\n")
	p("| target (issue 27) | measured in this run | what bounds it (measured beside it) | |\n|---|---|---|---|\n")

	entries := r.machine["entries"]
	// 1. Latency hidden: cat of every signature on a fresh mount.
	for _, l := range r.latencies() {
		o, f := r.find("browse", "oxyfs", "cat-cold", l), r.find("browse", "floor", "cat-cold", l)
		bound := 1.5
		if l >= 100 {
			bound = 2
		}
		target := fmt.Sprintf("1. `cat` of every signature on a fresh mount within %.1f× the floor's, %d ms", bound, l)
		if !ok(o) || !ok(f) {
			row(target, notMeasured, "", notMeasured)
			continue
		}
		ratio := o.WallS / f.WallS
		why := ""
		sd := r.find("browse", "server-depth", "cat-cold", l)
		st, hasState := r.state("oxyfs", l, "cat-cold")
		if hasState {
			why = fmt.Sprintf("read-ahead reached %d GETs in flight (its cap %d)", st.ReadAhead.Peak, st.ReadAhead.Max)
			if st.ReadAhead.Peak >= st.ReadAhead.Max {
				why += ": the cap on requests in flight (`--max-requests`) bounds the depth"
			}
		}
		if ok(sd) {
			sr := o.WallS / sd.WallS
			who := "the mount (its CPU and FUSE requests), not the server"
			if sr <= 1.25 {
				who = "the server at that depth"
			}
			why += fmt.Sprintf("; the server alone at the same depth: %s (oxyfs %.2f× it): %s", secs(sd.WallS), sr, who)
			// The mount, the proxy and the server share the machine's
			// CPUs: the floor's cat and the server's GETs one after the
			// other is what the two cost where neither hides the other.
			sum := f.WallS + sd.WallS
			why += fmt.Sprintf("; the floor's cat and the server's GETs at that depth one after the other: %s (oxyfs %.2f× it; the mount, the proxy and the server share %s CPUs)", secs(sum), o.WallS/sum, r.machine["nproc"])
		}
		if s16 := r.find("browse", "server", "cat-cold", l); ok(s16) {
			why += fmt.Sprintf("; at 16 in flight: %s", secs(s16.WallS))
		}
		row(target, fmt.Sprintf("%s vs %s: %.2f×", secs(o.WallS), secs(f.WallS), ratio), why, verdict(ratio <= bound))
	}

	// 2. Warm re-reads: cat again within 3× tmpfs, du within 1.0× the floor.
	for _, l := range r.latencies() {
		o, t, f := r.find("browse", "oxyfs", "cat-warm", l), r.find("browse", "tmpfs", "cat-warm", l), r.find("browse", "floor", "cat-warm", l)
		target := fmt.Sprintf("2. a second read of every signature within 3× tmpfs, %d ms", l)
		if !ok(o) || !ok(t) {
			row(target, notMeasured, "", notMeasured)
		} else {
			why := ""
			if ok(f) {
				why = fmt.Sprintf("the FUSE floor's own re-read: %s, %.2f× tmpfs; oxyfs %.2f× the floor", secs(f.WallS), f.WallS/t.WallS, o.WallS/f.WallS)
			}
			if o.Req["GET"] > 0 {
				why += fmt.Sprintf("; %s GETs reached the server", count(o.Req["GET"]))
			}
			row(target, fmt.Sprintf("%s vs %s: %.2f×", secs(o.WallS), secs(t.WallS), o.WallS/t.WallS), why, verdict(o.WallS/t.WallS <= 3))
		}
		o, f, t = r.find("browse", "oxyfs", "du", l), r.find("browse", "floor", "du", l), r.find("browse", "tmpfs", "du", l)
		target = fmt.Sprintf("2. `du -s` within 1.0× the floor, %d ms", l)
		if !ok(o) || !ok(f) {
			row(target, notMeasured, "", notMeasured)
		} else {
			why := ""
			if ok(t) {
				why = fmt.Sprintf("tmpfs: %s", secs(t.WallS))
			}
			if o.Req["GET"] > 0 {
				why += fmt.Sprintf("; %s GETs reached the server", count(o.Req["GET"]))
			}
			row(target, fmt.Sprintf("%s vs %s: %.2f×", secs(o.WallS), secs(f.WallS), o.WallS/f.WallS), why, verdict(o.WallS/f.WallS <= 1.0))
		}
	}

	// 3. Warm means warm: find warm within 1.2× tmpfs.
	for _, l := range r.latencies() {
		o, t, f := r.find("browse", "oxyfs", "find-warm", l), r.find("browse", "tmpfs", "find-warm", l), r.find("browse", "floor", "find-warm", l)
		target := fmt.Sprintf("3. `find` warm over %s entries within 1.2× tmpfs, %d ms", entries, l)
		if !ok(o) || !ok(t) {
			row(target, notMeasured, "", notMeasured)
			continue
		}
		why := ""
		if ok(f) {
			why = fmt.Sprintf("the FUSE floor's warm find: %s, %.2f× tmpfs", secs(f.WallS), f.WallS/t.WallS)
		}
		row(target, fmt.Sprintf("%s vs %s: %.2f×", secs(o.WallS), secs(t.WallS), o.WallS/t.WallS), why, verdict(o.WallS/t.WallS <= 1.2))
	}

	// 4. Memory that does not grow with lookups.
	for _, l := range r.latencies() {
		target := fmt.Sprintf("4. mount RSS after find, ls, cat and du of every entry ≤ the set + the signature cache's bound + 64 MiB, %s entries, %d ms", entries, l)
		st, has := r.state("oxyfs", l, "after-browse")
		if !has {
			row(target, notMeasured, "", notMeasured)
			continue
		}
		m, why, v := target4(st)
		row(target, m, why, v)
	}
	if h := r.hugeStep("huge-find-state"); h != nil {
		target := fmt.Sprintf("4. mount RSS after a cold and a warm `find` of every entry ≤ the set + the signature cache's bound + 64 MiB, %s entries (a list without signatures' bytes: no cat, grep or du)", count(int64(h.Entries)))
		var st mountState
		if !hugeOK(h) || json.Unmarshal(h.Result, &st) != nil || st.RSSKiB == 0 {
			row(target, notMeasured+": "+stepWall(h), "", notMeasured)
		} else {
			m, why, v := target4(st)
			why += growthPerDir(r.hugeStep("huge-mount-rss"), r.hugeStep("huge-find-cold"), st.RSSKiB)
			row(target, m, why, v)
		}
	}

	// 5. Fewer kernel round trips: the kernel's requests per directory of a cold find.
	if l := r.latencies(); len(l) > 0 {
		target := fmt.Sprintf("5. a cold `find` over %s entries: one READDIRPLUS per directory, no LOOKUP of a name it returned", entries)
		st, has := r.state("oxyfs", l[0], "find-cold")
		dirs, _ := strconv.ParseFloat(r.machine["dirs"], 64)
		switch {
		case !has || dirs == 0:
			row(target, notMeasured, "", notMeasured)
		case st.FuseRequests == nil || st.FuseListingEnds == nil:
			row(target, notMeasured+": the mount's status has no `fuse_requests` (a mount older than the kernel's request counts)", "", notMeasured)
		default:
			// The status read itself looks .oxy/status up (no READDIRPLUS
			// gives it a node) before it renders the counts.
			m, why, v := target5(dirs, st.FuseRequests, st.FuseListingEnds, statusReadLookups)
			row(target, m, why, v)
		}
	}
	if h := r.hugeStep("huge-find-cold"); h != nil {
		target := fmt.Sprintf("5. a cold `find` over %s entries: one READDIRPLUS per directory, no LOOKUP of a name it returned", count(int64(h.Entries)))
		d, okd := fuseDelta(h)
		dirs := nums(h)["dirs"]
		switch {
		case !hugeOK(h):
			row(target, notMeasured+": "+stepWall(h), "", notMeasured)
		case !okd || d.Requests == nil || dirs == 0:
			row(target, notMeasured+": the step recorded no kernel request counts or no directory count", "", notMeasured)
		default:
			// Counted between two reads of .oxy/status on one mount: the
			// first read's LOOKUP is before the count; the second finds
			// the name cached unless the walk pushed its dentry out, so
			// one LOOKUP is the status read's, as on a fresh mount.
			m, why, v := target5(dirs, d.Requests, d.ListingEnds, statusReadLookups)
			row(target, m, why, v)
		}
	}

	// 6. 10,000,000 entries open in ≤ 3 s.
	target := "6. 10,000,000 entries open in ≤ 3 s from a local S3 server"
	if h := r.hugeStep("huge-open"); h != nil {
		if v, okv := h.open(); okv {
			why := ""
			if len(v.CPUMillisOfRuns) == len(v.OpenMillisOfRuns) && len(v.CPUMillisOfRuns) > 0 {
				i := slices.Index(v.OpenMillisOfRuns, v.MedianMS)
				if i >= 0 {
					why = fmt.Sprintf("the median open used %s of CPU in %s (%.2f cores of %s, %d GOMAXPROCS)", secs(v.CPUMillisOfRuns[i]/1000), secs(v.MedianMS/1000), v.CPUMillisOfRuns[i]/v.MedianMS, r.machine["nproc"], v.GOMAXPROCS)
				}
			}
			if la := r.machine["load_start"]; la != "" {
				why = strings.TrimPrefix(why+"; load average at the run's start "+la, "; ")
			}
			row(fmt.Sprintf("6. %s entries open in ≤ 3 s from a local S3 server", count(int64(v.Entries))), fmt.Sprintf("%s median, %s best of %d", secs(v.MedianMS/1000), secs(v.MinMS/1000), max(len(v.OpenMillisOfRuns), v.Repeat)), why, verdict(v.MedianMS <= 3000))
		} else {
			row(target, stepWall(h), "", verdict(false))
		}
	} else {
		row(target, notMeasured+" in this run (`scripts/bench --huge-open` or `--huge`)", "", notMeasured)
	}
	p("\n")
}

// target4 is target 4's row for one mount state: its RSS against the set,
// the signature cache's bound and 64 MiB, and the bound of the table of
// signature sizes when the mount states it (.oxy/status sig_sizes_bound,
// part of its memory_bound).
func target4(st mountState) (measured, why, verdict string) {
	budget := float64(st.MemoryBytes+st.SigCacheBound+st.SigSizesBound)/1024 + 64*1024
	rest := float64(st.RSSKiB) - float64(st.MemoryBytes+st.SigCacheBytes)/1024
	sizes := ""
	if st.SigSizesBound > 0 {
		sizes = ", sizes bound " + mib(float64(st.SigSizesBound)/1024)
	}
	measured = fmt.Sprintf("%s vs %s (set %s, cache bound %s%s): %.2f×", mib(float64(st.RSSKiB)), mib(budget), mib(float64(st.MemoryBytes)/1024), mib(float64(st.SigCacheBound)/1024), sizes, float64(st.RSSKiB)/budget)
	why = fmt.Sprintf("beside the set and the %s the cache holds: %s (the Go runtime, go-fuse's nodes, buffers)", mib(float64(st.SigCacheBytes)/1024), mib(rest))
	verdict = "**missed**"
	if float64(st.RSSKiB) <= budget {
		verdict = "met"
	}
	return measured, why, verdict
}

// growthPerDir is what the mount's RSS grew by from the fresh mount
// (mountRSS's step) to after the finds (afterKiB), per directory the cold
// find listed: the kernel looked each up, and the mount keeps a node for
// each name the kernel holds. Empty when a figure is missing.
func growthPerDir(mountRSS, cold *record, afterKiB int64) string {
	before, dirs := nums(mountRSS)["rss_kib"], nums(cold)["dirs"]
	if !hugeOK(mountRSS) || !hugeOK(cold) || before == 0 || dirs == 0 {
		return ""
	}
	grew := float64(afterKiB) - before
	return fmt.Sprintf("; it grew by %s from the fresh mount's %s over the %s directories the cold find listed: %.0f B per directory (a node per name the kernel looked up)", mib(grew), mib(before), count(int64(dirs)), grew*1024/dirs)
}

// target5 is target 5's figures for a cold find over dirs directories that
// sent the kernel requests req (by opcode), ends of them READDIR(PLUS)
// answered empty, less statusLookups LOOKUPs the count's own read sent.
func target5(dirs float64, req, ends map[string]int64, statusLookups int64) (measured, why, verdict string) {
	rdp, end := req["READDIRPLUS"], ends["READDIRPLUS"]
	named := rdp - end
	lookups := max(req["LOOKUP"]-statusLookups, 0)
	per := func(n int64) float64 { return float64(n) / dirs }
	if float64(rdp+req["READDIR"]) < dirs {
		// Every directory a cold find lists takes one request at least
		// (the empty reply that ends it): counts below that did not
		// count this find.
		return fmt.Sprintf("%s: %s READDIRPLUS and %s READDIR for %s directories", notMeasured, count(rdp), count(req["READDIR"]), count(int64(dirs))),
			"the kernel's requests counted fewer listings than the find listed directories, so they say nothing of its requests", notMeasured
	}
	measured = fmt.Sprintf("%.2f READDIRPLUS per directory (%.2f with names, %.2f empty), %.2f LOOKUP, %.2f READDIR, %.2f GETATTR (%s directories; %s READDIRPLUS, %s LOOKUP)",
		per(rdp), per(named), per(end), per(lookups), per(req["READDIR"]), per(req["GETATTR"]), count(int64(dirs)), count(rdp), count(lookups))
	why = fmt.Sprintf("the kernel's requests on the mount (`.oxy/status` `fuse_requests`, less the LOOKUP of the status read itself): every listing ends with an empty READDIRPLUS, which FUSE needs (the kernel learns a listing's end only from an empty reply); a reply holds up to 128 KiB of names (~800), so a larger directory takes more (met: at most %.2f with names per directory, no LOOKUP, no READDIR)", maxNamedPerDir)
	if f := req["FORGET"]; f > 0 {
		why += fmt.Sprintf("; the kernel dropped %s nodes during the walk (FORGET), and a name it dropped and needs again is a LOOKUP", count(f))
	}
	verdict = "**missed**"
	if lookups == 0 && req["READDIR"] == 0 && per(named) <= maxNamedPerDir {
		verdict = "met"
	}
	return measured, why, verdict
}
