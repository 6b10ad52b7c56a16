package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/oxyfs/oxyfs/store/format"
)

// The --huge part of the report: each step at HUGE_ENTRIES entries beside
// the same step on the $ENTRIES-entry store made the same way, and the
// complete fold beside the server's own listing of every key.

// hugeStep returns the huge record of step, or nil.
func (r *results) hugeStep(step string) *record {
	for i := range r.huge {
		if r.huge[i].Step == step {
			return &r.huge[i]
		}
	}
	return nil
}

// ok reports whether the step ran to its end.
func hugeOK(h *record) bool { return h != nil && h.Status == "ok" }

// nums reads a step's result as numbers (other fields are left out).
func nums(h *record) map[string]float64 {
	m := map[string]float64{}
	if h == nil {
		return m
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(h.Result, &raw) != nil {
		return m
	}
	for k, v := range raw {
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			m[k] = f
		}
	}
	return m
}

// fuseDelta is what the mount answered during a step, from its counts
// before and after (`benchtool fuseops`): its operations by name and the
// kernel's requests by opcode, each with "total", and the listings read to
// their end.
func fuseDelta(h *record) (fuseCounts, bool) {
	if h == nil {
		return fuseCounts{}, false
	}
	var v struct {
		Before fuseCounts `json:"fuse_before"`
		After  fuseCounts `json:"fuse_after"`
	}
	if json.Unmarshal(h.Result, &v) != nil || v.Before.Ops == nil || v.After.Ops == nil {
		return fuseCounts{}, false
	}
	sub := func(after, before map[string]int64) map[string]int64 {
		if after == nil {
			return nil
		}
		d := map[string]int64{}
		for k, n := range after {
			d[k] = n - before[k]
			d["total"] += n - before[k]
		}
		return d
	}
	return fuseCounts{Ops: sub(v.After.Ops, v.Before.Ops), Requests: sub(v.After.Requests, v.Before.Requests), ListingEnds: sub(v.After.ListingEnds, v.Before.ListingEnds)}, true
}

func (h *record) open() (openResult, bool) {
	var v openResult
	if !hugeOK(h) || json.Unmarshal(h.Result, &v) != nil || v.Entries == 0 {
		return v, false
	}
	return v, true
}

// stepWall is a step's wall time, or what stopped it.
func stepWall(h *record) string {
	switch {
	case h == nil:
		return "—"
	case h.Status == "timeout":
		return fmt.Sprintf("**> %s** (cap)", secs(h.WallS))
	case h.Status != "ok":
		return h.Status
	}
	return secs(h.WallS)
}

func ratio(a, b float64) string { return ratioOf(a, b, "") }

// ratioOf is a/b as "1.23× what", or "—" if either is unknown.
func ratioOf(a, b float64, what string) string {
	if a <= 0 || b <= 0 {
		return "—"
	}
	if what != "" {
		what = " " + what
	}
	return fmt.Sprintf("%.2f×%s", a/b, what)
}

func mib(kib float64) string {
	if kib >= 1<<20 {
		return fmt.Sprintf("%.2f GiB", kib/(1<<20))
	}
	return fmt.Sprintf("%.0f MiB", kib/1024)
}

// hugeSection renders the huge steps, if the run had them.
func (r *results) hugeSection(w io.Writer) {
	if len(r.huge) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	gl := r.hugeStep("genlist")
	bigN, smallN := int64(0), int64(0)
	for _, h := range r.huge {
		if !strings.HasPrefix(h.Step, "small-") {
			bigN = int64(h.Entries)
			break
		}
	}
	if so := r.hugeStep("small-open"); so != nil {
		smallN = int64(so.Entries)
	}
	p("### %s entries\n\n", count(bigN))
	p("Each step on a folded store of %s entries, beside the same step on the folded store of %s entries, both made by `benchtool genlist` (the complete list and nothing else: the generator's mix, 1–2 entries an object, about 70%% signatures, 16 signers), in the same run, each on a fresh mount where it says so and capped at %s s. ",
		count(bigN), count(smallN), r.machine["huge_cap"])
	p("A ratio is the %s-entry figure over the one beside it, per entry (per file found, for find) where the work grows with the entries: 1.00× is linear. ", count(bigN))
	p("A find's FUSE operations are the mount's counts (`.oxy/status`): a lookup there includes each directory a READDIRPLUS hands the kernel, a listing is one directory's, however many READDIR requests it took. ")
	p("A lookup of an existing entry stats a path drawn from the lists (5,000 of them, no signatures: a signature's stat reads its bytes); a missing object's is one FUSE LOOKUP answered from the set, every time.\n\n")
	p("| step | %s entries | %s entries (beside it) | ratio |\n|---|--:|--:|--:|\n", count(bigN), count(smallN))
	if hugeOK(gl) {
		v := nums(gl)
		p("| the list written (`benchtool genlist`, one PUT) | %s (%.0f entries/s) | — | |\n", secs(gl.WallS), v["entries"]/gl.WallS)
	} else if gl != nil {
		p("| the list written (`benchtool genlist`, one PUT) | %s | — | |\n", stepWall(gl))
	}
	bo, bok := r.hugeStep("huge-open").open()
	so, sok := r.hugeStep("small-open").open()
	if bok || sok {
		cell := func(v openResult, ok bool) string {
			if !ok {
				return stepWall(r.hugeStep("huge-open"))
			}
			return fmt.Sprintf("%s / %s", secs(v.MedianMS/1000), secs(v.MinMS/1000))
		}
		perEntry := func(v openResult) float64 { return v.MedianMS / float64(max(v.Entries, 1)) }
		p("| open (median / best of 3) | %s | %s | %s |\n", cell(bo, bok), cell(so, sok), ratioOf(perEntry(bo), perEntry(so), "per entry"))
		p("| requests of one open | %s | %s | |\n", countsString(bo.Requests.List, bo.Requests.Get, bo.Requests.Head), countsString(so.Requests.List, so.Requests.Get, so.Requests.Head))
		p("| heap kept per entry (× its key text) | %.1f B (%.2f×) | %.1f B (%.2f×) | %s |\n", bo.HeapPerEntry, bo.HeapOverKeyText, so.HeapPerEntry, so.HeapOverKeyText, ratio(bo.HeapPerEntry, so.HeapPerEntry))
		p("| peak heap in use during the open; the process's peak RSS | %s; %s | %s; %s | %s |\n",
			mib(float64(bo.PeakHeapInUse)/1024), mib(float64(bo.MaxRSSKiB)), mib(float64(so.PeakHeapInUse)/1024), mib(float64(so.MaxRSSKiB)),
			ratioOf(float64(bo.PeakHeapInUse)/float64(max(bo.Entries, 1)), float64(so.PeakHeapInUse)/float64(max(so.Entries, 1)), "per entry"))
	}
	rss := func(step string, n int64) (string, float64) {
		h := r.hugeStep(step)
		kib := nums(h)["rss_kib"]
		if !hugeOK(h) || kib == 0 || n == 0 {
			return "—", 0
		}
		per := kib * 1024 / float64(n)
		return fmt.Sprintf("%s (%.0f B/entry)", mib(kib), per), per
	}
	rssRow := func(name, step string) {
		a, ap := rss("huge-"+step, bigN)
		b, bp := rss("small-"+step, smallN)
		if ap > 0 || bp > 0 {
			p("| %s | %s | %s | %s |\n", name, a, b, ratioOf(ap, bp, "per entry"))
		}
	}
	rssRow("mount RSS once serving (fresh mount)", "mount-rss")
	for _, f := range []struct{ step, name string }{
		{"find-cold", "`find -type f`, cold (fresh mount)"},
		{"find-warm", "`find -type f`, warm (same mount again)"},
	} {
		a, b := r.hugeStep("huge-"+f.step), r.hugeStep("small-"+f.step)
		if a == nil && b == nil {
			continue
		}
		cell := func(h *record) (string, float64) {
			files := nums(h)["files"]
			fuse := ""
			if d, ok := fuseDelta(h); ok {
				fuse = fmt.Sprintf("; the mount answered %s FUSE operations: %s lookups, %s listings", count(d.Ops["total"]), count(d.Ops["lookup"]), count(d.Ops["readdir"]))
				if q := d.Requests; q != nil {
					fuse += fmt.Sprintf("; the kernel sent %s requests: %s READDIRPLUS (%s of them empty, a listing's end), %s LOOKUP, %s GETATTR", count(q["total"]), count(q["READDIRPLUS"]), count(d.ListingEnds["READDIRPLUS"]), count(q["LOOKUP"]), count(q["GETATTR"]))
				}
				if dirs := nums(h)["dirs"]; dirs > 0 {
					fuse += fmt.Sprintf("; %s directories", count(int64(dirs)))
				}
			}
			if !hugeOK(h) || files == 0 {
				return stepWall(h) + strings.TrimPrefix(fuse, ";"), 0
			}
			return fmt.Sprintf("%s (%s files; %s LIST%s)", secs(h.WallS), count(int64(files)), count(h.Req["LIST"]), fuse), h.WallS / files
		}
		ac, ap := cell(a)
		bc, bp := cell(b)
		p("| %s | %s | %s | %s |\n", f.name, ac, bc, ratioOf(ap, bp, "per file"))
	}
	rssRow("mount RSS after the finds", "find-rss")
	la, lb := r.hugeStep("huge-lookups"), r.hugeStep("small-lookups")
	if la != nil || lb != nil {
		a, b := nums(la), nums(lb)
		cell := func(h *record, v map[string]float64, which string) string {
			if !hugeOK(h) {
				return stepWall(h)
			}
			return fmt.Sprintf("%.1f µs (%.2f FUSE LOOKUPs a path)", v[which+"_us"], v[which+"_fuse_lookups_per_path"])
		}
		p("| stat of an existing entry, cold (fresh mount) | %s | %s | %s |\n", cell(la, a, "cold"), cell(lb, b, "cold"), ratio(a["cold_us"], b["cold_us"]))
		p("| stat of an existing entry, warm (the same paths again) | %s | %s | %s |\n", cell(la, a, "warm"), cell(lb, b, "warm"), ratio(a["warm_us"], b["warm_us"]))
	}
	ma, mb := r.hugeStep("huge-lookup-missing"), r.hugeStep("small-lookup-missing")
	if ma != nil || mb != nil {
		cell := func(h *record) string {
			if !hugeOK(h) {
				return stepWall(h)
			}
			return fmt.Sprintf("%.1f µs", nums(h)["stat_us"])
		}
		p("| stat of a missing object (one FUSE LOOKUP into the set) | %s | %s | %s |\n", cell(ma), cell(mb), ratio(nums(ma)["stat_us"], nums(mb)["stat_us"]))
	}
	p("\n")
	r.hugeFold(w)
}

// hugeFold renders the complete fold beside the server's listing.
func (r *results) hugeFold(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	g := r.hugeStep("genposix")
	if g == nil {
		return
	}
	var gv genPosixResult
	if !hugeOK(g) || json.Unmarshal(g.Result, &gv) != nil {
		p("A complete fold of %s entries: the store's generation (`benchtool genposix`) %s; nothing folded.\n\n", count(int64(g.Entries)), stepWall(g))
		return
	}
	var mix []string
	for _, k := range format.Kinds {
		if n := gv.PerKind[k.String()]; n > 0 {
			mix = append(mix, fmt.Sprintf("%s %.0f%%", k, 100*float64(n)/float64(gv.Entries)))
		}
	}
	p("**A complete fold of %s entries on versitygw.** The store: %s per-object keys, %d entries an object of one kind (one directory an object; %s of the entries), signatures of 64–128 bytes, the others empty, and a journal naming the last %d keys. ",
		count(int64(gv.Entries)), count(int64(gv.Entries)), gv.PerObject, strings.Join(mix, ", "), gv.JournalLines)
	p("`benchtool genposix` wrote them straight into the bucket's directory with the attributes versitygw gives a PUT, %d workers, at %.0f entries/s (%s files and %s directories in %s; %.1f GB and %s inodes by its plan, %.1f GB and %s inodes used by the filesystem meanwhile); ",
		gv.Workers, gv.PerS, count(gv.Files), count(gv.Dirs), secs(gv.WallS), float64(gv.Bytes)/1e9, count(gv.Inodes), float64(gv.UsedBytes)/1e9, count(gv.UsedInodes))
	p("%d of the keys (an object of each kind) were checked against PUTs of the same bytes: the same attributes, and the same ETag, size, checksum and bytes in HEAD, GET and LIST. ", gv.Checked)
	p("Beside the fold, `benchtool listall` lists every key as the fold lists them (each kind's `<hh>/` directories, 16 at a time) through the same proxy: the server's listing alone, the bound under a complete fold.\n\n")
	p("| step | wall | keys/s | LIST / GET / HEAD / PUT | peak RSS |\n|---|--:|--:|--:|--:|\n")
	f, l := r.hugeStep("fold"), r.hugeStep("listall")
	reqs := func(h *record) string {
		if h == nil {
			return "—"
		}
		return fmt.Sprintf("%s / %s / %s / %s", count(h.Req["LIST"]), count(h.Req["GET"]), count(h.Req["HEAD"]), count(h.Req["PUT"]))
	}
	if f != nil {
		rate, peak := "—", "—"
		if hugeOK(f) {
			rate = fmt.Sprintf("%.0f", float64(f.Entries)/f.WallS)
			if kib := nums(f)["max_rss_kib"]; kib > 0 {
				peak = mib(kib)
			}
		}
		p("| `oxyfs fold` (complete) | %s | %s | %s | %s |\n", stepWall(f), rate, reqs(f), peak)
	}
	if l != nil {
		rate := "—"
		if hugeOK(l) {
			rate = fmt.Sprintf("%.0f", nums(l)["keys_per_s"])
		}
		p("| the server's listing of every key (`benchtool listall`) | %s | %s | %s | — |\n", stepWall(l), rate, reqs(l))
	}
	if hugeOK(f) && hugeOK(l) {
		p("| fold ÷ listing | %s | | | |\n", ratio(f.WallS, l.WallS))
	}
	if v, ok := r.hugeStep("fold-open").open(); ok {
		p("| open of the list the fold wrote (median / best of 3) | %s / %s | | %s | heap %.1f B/entry |\n", secs(v.MedianMS/1000), secs(v.MinMS/1000),
			countsString(v.Requests.List, v.Requests.Get, v.Requests.Head), v.HeapPerEntry)
	}
	p("\n")
}

// hugeTargets quotes the targets of the --huge steps in the targets table.
func (r *results) hugeTargets(w io.Writer, mark func(bool) string) {
	if len(r.huge) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	if h := r.hugeStep("huge-open"); h != nil {
		if v, ok := h.open(); ok {
			n := count(int64(v.Entries))
			p("| open of a %s-entry folded store in ≤ 5 s on 2 cores | %s median, %s best | %s |\n", n, secs(v.MedianMS/1000), secs(v.MinMS/1000), mark(v.MedianMS <= 5000))
			p("| heap kept for the set ≤ 40 B per entry at %s entries | %.1f B per entry | %s |\n", n, v.HeapPerEntry, mark(v.HeapPerEntry <= 40))
			p("| memory for the set ≤ 0.6 × its key text at %s entries | %.1f B for %.1f B of key text: %.2f× | %s |\n", n, v.HeapPerEntry, v.KeyTextPerEntry, v.HeapOverKeyText, mark(v.HeapOverKeyText <= 0.6))
			if kib := nums(r.hugeStep("huge-mount-rss"))["rss_kib"]; kib > 0 && v.HeapBytes > 0 {
				x := kib * 1024 / float64(v.HeapBytes)
				p("| mount RSS ≤ 2 × the set's heap at %s entries (fresh mount, serving) | %s for %s of heap: %.2f× | %s |\n", n, mib(kib), mib(float64(v.HeapBytes)/1024), x, mark(x <= 2))
			}
		} else {
			p("| open of a %s-entry folded store in ≤ 5 s on 2 cores | %s | %s |\n", count(int64(h.Entries)), stepWall(h), mark(false))
		}
	}
	a, b := r.hugeStep("huge-find-warm"), r.hugeStep("small-find-warm")
	if fa, fb := nums(a)["files"], nums(b)["files"]; hugeOK(b) && fb > 0 && a != nil {
		if hugeOK(a) && fa > 0 {
			x := (a.WallS / fa) / (b.WallS / fb)
			p("| warm `find` holds at every size: per file at %s entries within 1.5× of %s | %s for %s files vs %s for %s: %.2f× per file | %s |\n",
				count(int64(a.Entries)), count(int64(b.Entries)), secs(a.WallS), count(int64(fa)), secs(b.WallS), count(int64(fb)), x, mark(x <= 1.5))
		} else {
			p("| warm `find` holds at every size (%s entries) | %s | %s |\n", count(int64(a.Entries)), stepWall(a), mark(false))
		}
	}
	f, l := r.hugeStep("fold"), r.hugeStep("listall")
	if f != nil && hugeOK(l) {
		if hugeOK(f) {
			x := f.WallS / l.WallS
			p("| complete fold of %s entries on versitygw within 1.5× of the server's own listing of every key | %s vs %s: %.2f× | %s |\n", count(int64(f.Entries)), secs(f.WallS), secs(l.WallS), x, mark(x <= 1.5))
		} else {
			p("| complete fold of %s entries on versitygw within 1.5× of the server's own listing of every key | %s vs %s | %s |\n", count(int64(f.Entries)), stepWall(f), secs(l.WallS), mark(false))
		}
	}
}
