package main

import (
	"fmt"
	"io"
)

// issue16 quotes the latency and floor targets, each as a ratio to what ran
// beside it in the same run: the mount's cold cat against the server's own
// parallel GET rate and against rclone at every latency, the browsing
// steps against the FUSE floor, and ls -lR at 20 ms against 0 ms.
func (r *results) issue16(w io.Writer, mark func(bool) string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	ok := func(b *record) bool { return b != nil && b.Status == "ok" && b.WallS > 0 }
	for _, l := range r.latencies() {
		o, s := r.find("browse", "oxyfs", "cat-cold", l), r.find("browse", "server", "cat-cold", l)
		if ok(o) && ok(s) {
			ratio := o.WallS / s.WallS
			p("| `cat` of every signature on a fresh mount within 2× the server's own GET rate (16 in flight), %d ms | %s vs %s: %.2f× | %s |\n", l, secs(o.WallS), secs(s.WallS), ratio, mark(ratio <= 2))
		}
		for _, st := range []string{"cat-cold", "cat-warm"} {
			rc := r.find("browse", "rclone", st, l)
			o := r.find("browse", "oxyfs", st, l)
			if !ok(o) || rc == nil || (rc.Status != "ok" && rc.Status != "timeout") {
				continue
			}
			ratio := rc.WallS / o.WallS
			bound := ""
			if rc.Status == "timeout" {
				bound = "> " // rclone was stopped at the cap: a lower bound
			}
			p("| `%s` ≥ 10× faster than rclone mount, %d ms | %s vs rclone %s: %s%.1f× | %s |\n", st, l, secs(o.WallS), wall(rc), bound, ratio, mark(ratio >= 10))
		}
		for _, st := range []string{"find-cold", "find-warm", "ls-R"} {
			o, f := r.find("browse", "oxyfs", st, l), r.find("browse", "floor", st, l)
			if ok(o) && ok(f) {
				ratio := o.WallS / f.WallS
				p("| `%s` within 1.2× the FUSE floor (scripts/floorfs), %d ms | %s vs %s: %.2f× | %s |\n", st, l, secs(o.WallS), secs(f.WallS), ratio, mark(ratio <= 1.2))
			}
		}
	}
	if a, b := r.find("browse", "oxyfs", "ls-lR", 0), r.find("browse", "oxyfs", "ls-lR", 20); ok(a) && ok(b) {
		ratio := b.WallS / a.WallS
		p("| `ls -lR` at 20 ms within 1.5× of 0 ms | %s vs %s: %.2f× | %s |\n", secs(b.WallS), secs(a.WallS), ratio, mark(ratio <= 1.5))
	}
}
