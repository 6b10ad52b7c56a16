package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/oxyfs/oxyfs/fs"
	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
)

// genlist writes what an open reads of a folded store (its complete list),
// without the per-object keys an open never reads: a 1,000,000-entry store
// for the open and memory figures in one PUT.
func genlist(ctx context.Context, url string, n int, seed int64) error {
	st, err := openStore(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := storegen.Generate(ctx, st, storegen.Options{Entries: n, Seed: seed, Fold: true, SkipObjects: true})
	if err != nil {
		return err
	}
	return printJSON(map[string]any{"entries": rep.Entries, "key_text_bytes": rep.KeyTextBytes, "list": rep.List, "elapsed_s": rep.Elapsed.Seconds()})
}

// genfolded writes a store as a complete fold of N generated entries leaves
// it: the complete list, and a journal holding the last LINES entries (all
// when LINES <= 0) as lines the fold marked folded (such lines stay an
// hour), without the per-object keys an open never reads. The journal is
// capped at format.MaxRecordBytes: about 2,500,000 lines.
func genfolded(ctx context.Context, url string, n int, seed int64, keep int) error {
	st, err := openStore(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now().UnixMilli()
	var lines []format.JournalLine
	rep, err := storegen.Generate(ctx, st, storegen.Options{Entries: n, Seed: seed, Fold: true, SkipObjects: true,
		OnEntry: func(e format.Entry, _ string) { lines = append(lines, format.JournalLine{FoldedAt: now, Key: e.Key()}) }})
	if err != nil {
		return err
	}
	if keep > 0 && keep < len(lines) {
		lines = lines[len(lines)-keep:]
	}
	data := format.Journal(lines)
	if _, err := st.UpdateRecord(ctx, format.JournalKey, func([]byte, bool) ([]byte, error) { return data, nil }); err != nil {
		return err
	}
	return printJSON(map[string]any{"entries": rep.Entries, "journal_lines": len(lines), "journal_bytes": len(data),
		"key_text_bytes": rep.KeyTextBytes, "list": rep.List, "elapsed_s": rep.Elapsed.Seconds()})
}

// memReport is the memory of this process at one step of mountmem.
type memReport struct {
	Step    string `json:"step"`
	Entries int    `json:"entries"`
	// From /proc/self/status: resident, of which anonymous (heap, stacks,
	// runtime) and file-backed (the binary's pages).
	RSSKiB     int64 `json:"rss_kib"`
	RSSAnonKiB int64 `json:"rss_anon_kib"`
	RSSFileKiB int64 `json:"rss_file_kib"`
	// From runtime.MemStats (after a GC): the heap's spans in use, free
	// spans not yet returned to the OS, and what the runtime holds beside
	// the heap.
	HeapAlloc      uint64 `json:"heap_alloc"`
	HeapInuse      uint64 `json:"heap_inuse"`
	HeapIdleKept   uint64 `json:"heap_idle_unreleased"`
	StackInuse     uint64 `json:"stack_inuse"`
	MSpanMCache    uint64 `json:"mspan_mcache_inuse"`
	GCSys          uint64 `json:"gc_sys"`
	OtherSys       uint64 `json:"other_sys"`
	NextGC         uint64 `json:"next_gc"`
	Goroutines     int    `json:"goroutines"`
	SetBytes       int64  `json:"set_bytes"`       // Status.MemoryBytes
	SigCacheBytes  int64  `json:"sig_cache_bytes"` // Status.SigCacheBytes
	SigCacheBound  int64  `json:"sig_cache_bound"`
	MemoryLimit    int64  `json:"memory_limit"` // debug.SetMemoryLimit(-1); math.MaxInt64 when none
	GCPercent      int    `json:"gc_percent"`
	StepSeconds    float64
	LeafIDs        bool    `json:"leaf_ids"`     // mounted with fs.Options.LeafIDs (OXYFS_LEAF_IDS=1)
	OutputLines    int64   `json:"output_lines"` // what the step's command printed (find: the files found), counted and dropped
	RSSOverSetHeap float64 `json:"rss_over_set"`
}

// mountmem mounts STORE at DIR in this process the way `oxyfs mount` does
// (index.Open with the mount's defaults, index.Load, index.SettleMemory,
// fs.Mount), then reports this process's memory (JSON, one line per step)
// once it serves ("mount"), after `find DIR -type f` ("find"), and after
// `ls -lR DIR` ("ls-lR": every signature's size, which reads each one),
// after `du -s DIR` ("du": a stat of every file),
// and after "churn" (listings that leave garbage and no new node: the GC's
// headroom) when STEPS (comma-separated) names them. PROFILE, if not "", is a prefix for a heap profile
// per step (PROFILE-STEP.pprof). With OXYFS_LEAF_IDS=1 the mount has
// leaf ids (fs.Options.LeafIDs, oxyfs mount --leaf-ids).
func mountmem(ctx context.Context, url, dir, steps, profile string) error {
	st, err := openStore(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	ix, err := index.Open(ctx, st, index.Options{Warn: func(m string) { fmt.Fprintln(os.Stderr, "warning:", m) }})
	if err != nil {
		return err
	}
	defer ix.Close()
	began := time.Now()
	if err := ix.Load(ctx); err != nil {
		return err
	}
	index.SettleMemory(ix)
	leafIDs := os.Getenv("OXYFS_LEAF_IDS") == "1" // oxyfs mount --leaf-ids
	m, err := fs.Mount(dir, ix, fs.Options{ReadOnly: true, LeafIDs: leafIDs, Logf: func(string, ...any) {}})
	if err != nil {
		return err
	}
	defer m.Unmount()
	report := func(step string, since time.Time, lines int64) error {
		r := memNow(step, ix)
		r.StepSeconds = time.Since(since).Seconds()
		r.OutputLines = lines
		r.LeafIDs = leafIDs
		if profile != "" {
			f, err := os.Create(profile + "-" + step + ".pprof")
			if err != nil {
				return err
			}
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
		return printJSON(r)
	}
	if err := report("mount", began, 0); err != nil {
		return err
	}
	for _, step := range strings.Split(steps, ",") {
		var cmd *exec.Cmd
		switch step {
		case "":
			continue
		case "churn":
			// Garbage and no new nodes: the listings of 16 <hh>
			// directories, read 20 times (the kernel keeps no listing).
			script := `for i in $(seq 20); do for h in 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f; do ls -f "$1/sig/$h" >/dev/null || exit 1; done; done`
			cmd = exec.Command("sh", "-c", script, "sh", dir)
		case "find":
			cmd = exec.Command("find", dir, "-type", "f")
		case "ls-lR":
			cmd = exec.Command("ls", "-lR", dir)
		case "du":
			cmd = exec.Command("du", "-s", dir)
		default:
			return fmt.Errorf("unknown step %q (churn, find, ls-lR, du)", step)
		}
		start := time.Now()
		lines, err := runStep(cmd)
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		if err := report(step, start, lines); err != nil {
			return err
		}
	}
	return nil
}

// runStep runs a step's command and returns how many lines it printed. The
// output is counted, not kept: this process is the one measured, and
// find's 1e6 paths (~90 MB, in a buffer grown by doubling) were 168–233 MB
// of its live heap during the walk and 316–332 MB of idle heap after it,
// none of it the mount's. An error carries the last tailBytes of stderr.
func runStep(cmd *exec.Cmd) (int64, error) {
	var lines lineCount
	var errTail tailWriter
	cmd.Stdout, cmd.Stderr = &lines, &errTail
	if err := cmd.Run(); err != nil {
		return int64(lines), fmt.Errorf("%w: %s", err, errTail.b)
	}
	return int64(lines), nil
}

// lineCount counts the lines written to it and keeps none.
type lineCount int64

func (c *lineCount) Write(p []byte) (int, error) {
	*c += lineCount(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// tailWriter keeps the last tailBytes written to it.
type tailWriter struct{ b []byte }

const tailBytes = 500

func (w *tailWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	if len(w.b) > tailBytes {
		w.b = append(w.b[:0], w.b[len(w.b)-tailBytes:]...)
	}
	return len(p), nil
}

// memNow reads this process's memory after a GC (the heap's live part, not
// what the last GC cycle had not yet freed).
func memNow(step string, ix *index.Index) memReport {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := ix.Status()
	r := memReport{
		Step: step, Entries: s.Entries,
		HeapAlloc: ms.HeapAlloc, HeapInuse: ms.HeapInuse, HeapIdleKept: ms.HeapIdle - ms.HeapReleased,
		StackInuse: ms.StackInuse, MSpanMCache: ms.MSpanInuse + ms.MCacheInuse, GCSys: ms.GCSys,
		OtherSys: ms.OtherSys + ms.BuckHashSys, NextGC: ms.NextGC, Goroutines: runtime.NumGoroutine(),
		SetBytes: s.MemoryBytes, SigCacheBytes: s.SigCacheBytes, SigCacheBound: s.SigCacheBound,
		MemoryLimit: debug.SetMemoryLimit(-1), GCPercent: debug.SetGCPercent(-1),
	}
	debug.SetGCPercent(r.GCPercent) // SetGCPercent(-1) read it by turning the GC off
	r.RSSKiB, r.RSSAnonKiB, r.RSSFileKiB = procRSS()
	if s.MemoryBytes > 0 {
		r.RSSOverSetHeap = float64(r.RSSKiB*1024) / float64(s.MemoryBytes)
	}
	return r
}

// procRSS reads VmRSS, RssAnon and RssFile (KiB) of this process.
func procRSS() (rss, anon, file int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "RssAnon":
			anon = n
		case "RssFile":
			file = n
		}
	}
	return rss, anon, file
}
