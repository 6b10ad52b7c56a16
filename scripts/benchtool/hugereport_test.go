package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hugeResults are the lines scripts/bench writes for a --huge run (made up).
const hugeResults = `{"kind":"machine","key":"entries","value":"100000"}
{"kind":"machine","key":"huge_cap","value":"1800"}
{"kind":"huge","step":"genlist","status":"ok","wall_s":40,"entries":10000000,"req":{},"result":{"entries":10000000},"note":""}
{"kind":"huge","step":"huge-open","status":"ok","wall_s":20,"entries":10000000,"req":{},"result":{"entries":10000000,"repeat":3,"open_ms_min":3000,"open_ms_median":3200,"heap_bytes":390000000,"heap_bytes_per_entry":39,"key_text_bytes_per_entry":87,"heap_over_key_text":0.448,"requests":{"list":1,"get":3,"head":0,"put":0,"delete":0},"peak_heap_bytes":1073741824,"max_rss_kib":2097152},"note":""}
{"kind":"huge","step":"small-open","status":"ok","wall_s":1,"entries":100000,"req":{},"result":{"entries":100000,"repeat":3,"open_ms_min":35,"open_ms_median":40,"heap_bytes":3900000,"heap_bytes_per_entry":39,"key_text_bytes_per_entry":87,"heap_over_key_text":0.448,"requests":{"list":1,"get":3,"head":0,"put":0,"delete":0},"peak_heap_bytes":10485760,"max_rss_kib":65536},"note":""}
{"kind":"huge","step":"huge-mount-rss","status":"ok","wall_s":0,"entries":10000000,"req":{},"result":{"rss_kib":1000000},"note":""}
{"kind":"huge","step":"huge-find-cold","status":"timeout","wall_s":1800,"entries":10000000,"req":{"LIST":0},"result":{"files":0},"note":""}
{"kind":"huge","step":"small-find-cold","status":"ok","wall_s":12,"entries":100000,"req":{"LIST":0},"result":{"files":100000},"note":""}
{"kind":"huge","step":"huge-find-warm","status":"ok","wall_s":60,"entries":10000000,"req":{"LIST":0},"result":{"files":10000000,"dirs":12000,"fuse_before":{"ops":{"lookup":10,"readdir":20,"getattr":5},"requests":{"LOOKUP":2,"READDIRPLUS":0},"listing_ends":{"READDIRPLUS":0}},"fuse_after":{"ops":{"lookup":110,"readdir":12020,"getattr":5},"requests":{"LOOKUP":2,"READDIRPLUS":24000,"GETATTR":3},"listing_ends":{"READDIRPLUS":12000}}},"note":""}
{"kind":"huge","step":"small-find-warm","status":"ok","wall_s":0.5,"entries":100000,"req":{"LIST":0},"result":{"files":100000},"note":""}
{"kind":"huge","step":"huge-lookups","status":"ok","wall_s":3,"entries":10000000,"req":{},"result":{"cold_us":300,"warm_us":20,"cold_fuse_lookups_per_path":2.25,"warm_fuse_lookups_per_path":0},"note":""}
{"kind":"huge","step":"small-lookups","status":"ok","wall_s":3,"entries":100000,"req":{},"result":{"cold_us":200,"warm_us":20,"cold_fuse_lookups_per_path":2.5,"warm_fuse_lookups_per_path":0},"note":""}
{"kind":"huge","step":"genposix","status":"ok","wall_s":500,"entries":10000000,"req":{},"result":{"entries":10000000,"per_object":8,"objects":1250000,"sig_entries":1000000,"inodes":11251542,"bytes":13300000000,"per_kind":{"sig":1000000,"receipt":9000000},"files":10000000,"dirs":1251542,"workers":8,"wall_s":500,"entries_per_s":20000,"used_bytes":13400000000,"used_inodes":11251600,"journal_lines":1000,"checked_keys":56},"note":""}
{"kind":"huge","step":"fold","status":"%FOLD%","wall_s":%FOLDWALL%,"entries":10000000,"req":{"LIST":20000,"GET":3,"HEAD":0,"PUT":3},"result":{"max_rss_kib":5242880},"note":""}
{"kind":"huge","step":"listall","status":"ok","wall_s":500,"entries":10000000,"req":{"LIST":19000},"result":{"keys":10000000,"keys_per_s":20000},"note":""}
`

func renderHuge(t *testing.T, foldStatus, foldWall string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "results.jsonl")
	data := strings.NewReplacer("%FOLD%", foldStatus, "%FOLDWALL%", foldWall).Replace(hugeResults)
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := report(name, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHugeReport(t *testing.T) {
	out := renderHuge(t, "ok", "600")
	for _, want := range []string{
		"### 10,000,000 entries\n",
		"| the list written (`benchtool genlist`, one PUT) | 40.0 s (250000 entries/s) | — | |\n",
		"| open (median / best of 3) | 3.20 s / 3.00 s | 40 ms / 35 ms | 0.80× per entry |\n",
		"| heap kept per entry (× its key text) | 39.0 B (0.45×) | 39.0 B (0.45×) | 1.00× |\n",
		"| peak heap in use during the open; the process's peak RSS | 1.00 GiB; 2.00 GiB | 10 MiB; 64 MiB | 1.02× per entry |\n",
		"| mount RSS once serving (fresh mount) | 977 MiB (102 B/entry) | — | — |\n",
		"| `find -type f`, cold (fresh mount) | **> 1800.0 s** (cap) | 12.0 s (100,000 files; 0 LIST) | — |\n",
		"| `find -type f`, warm (same mount again) | 60.0 s (10,000,000 files; 0 LIST; the mount answered 12,100 FUSE operations: 100 lookups, 12,000 listings; the kernel sent 24,003 requests: 24,000 READDIRPLUS (12,000 of them empty, a listing's end), 0 LOOKUP, 3 GETATTR; 12,000 directories) | 500 ms (100,000 files; 0 LIST) | 1.20× per file |\n",
		"| stat of an existing entry, cold (fresh mount) | 300.0 µs (2.25 FUSE LOOKUPs a path) | 200.0 µs (2.50 FUSE LOOKUPs a path) | 1.50× |\n",
		"| stat of an existing entry, warm (the same paths again) | 20.0 µs (0.00 FUSE LOOKUPs a path) | 20.0 µs (0.00 FUSE LOOKUPs a path) | 1.00× |\n",
		"(one directory an object; sig 10%, receipt 90% of the entries)",
		"| `oxyfs fold` (complete) | 600.0 s | 16667 | 20,000 / 3 / 0 / 3 | 5.00 GiB |\n",
		"| the server's listing of every key (`benchtool listall`) | 500.0 s | 20000 | 19,000 / 0 / 0 / 0 | — |\n",
		"| fold ÷ listing | 1.20× | | | |\n",
		"| open of a 10,000,000-entry folded store in ≤ 5 s on 2 cores | 3.20 s median, 3.00 s best | met |\n",
		"| heap kept for the set ≤ 40 B per entry at 10,000,000 entries | 39.0 B per entry | met |\n",
		"| memory for the set ≤ 0.6 × its key text at 10,000,000 entries | 39.0 B for 87.0 B of key text: 0.45× | met |\n",
		"| mount RSS ≤ 2 × the set's heap at 10,000,000 entries (fresh mount, serving) | 977 MiB for 372 MiB of heap: 2.63× | **missed** |\n",
		"| warm `find` holds at every size: per file at 10,000,000 entries within 1.5× of 100,000 | 60.0 s for 10,000,000 files vs 500 ms for 100,000: 1.20× per file | met |\n",
		"| complete fold of 10,000,000 entries on versitygw within 1.5× of the server's own listing of every key | 600.0 s vs 500.0 s: 1.20× | met |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", out)
	}
}

func TestHugeReportCappedFold(t *testing.T) {
	out := renderHuge(t, "timeout", "1800")
	for _, want := range []string{
		"| `oxyfs fold` (complete) | **> 1800.0 s** (cap) | — | 20,000 / 3 / 0 / 3 | — |\n",
		"| complete fold of 10,000,000 entries on versitygw within 1.5× of the server's own listing of every key | **> 1800.0 s** (cap) vs 500.0 s | **missed** |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(out, "fold ÷ listing") {
		t.Error("a ratio for a fold stopped at the cap")
	}
	if t.Failed() {
		t.Logf("report:\n%s", out)
	}
}

// FuzzReport: any results file renders or fails with an error, never a panic.
func FuzzReport(f *testing.F) {
	f.Add(strings.NewReplacer("%FOLD%", "ok", "%FOLDWALL%", "600").Replace(hugeResults))
	f.Add(`{"kind":"huge","step":"huge-open","status":"ok","result":{"entries":-1}}`)
	f.Add(`{"kind":"huge","step":"huge-find-warm","status":"ok","result":{"files":"x","fuse_before":{},"fuse_after":null}}`)
	f.Add(`{"kind":"huge","step":"genposix","status":"ok","entries":0,"result":{"entries":0}}`)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data string) {
		name := filepath.Join(dir, "results.jsonl")
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		report(name, &b) // an error is fine; a panic is not
	})
}
