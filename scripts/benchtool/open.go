package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// openResult is what `benchtool open` measures.
type openResult struct {
	Entries          int          `json:"entries"`
	Repeat           int          `json:"repeat"`
	MinMS            float64      `json:"open_ms_min"`
	MedianMS         float64      `json:"open_ms_median"`
	HeapBytes        int64        `json:"heap_bytes"`     // heap the first open kept (runtime, after GC)
	SetBytes         int64        `json:"set_bytes"`      // Status.MemoryBytes: the arrays' capacities
	KeyTextBytes     int64        `json:"key_text_bytes"` // of every entry's key
	HeapPerEntry     float64      `json:"heap_bytes_per_entry"`
	KeyTextPerEntry  float64      `json:"key_text_bytes_per_entry"`
	HeapOverKeyText  float64      `json:"heap_over_key_text"`
	Requests         store.Counts `json:"requests"` // of one open
	LiveLists        int          `json:"live_lists"`
	JournalLines     int          `json:"journal_lines"`
	PeakHeapInUse    uint64       `json:"peak_heap_bytes"` // the heap in use at its highest during the first open (sampled)
	MaxRSSKiB        int64        `json:"max_rss_kib"`     // of this process, from getrusage
	GOMAXPROCS       int          `json:"gomaxprocs"`
	OpenMillisOfRuns []float64    `json:"open_ms_runs"`
	// CPUMillisOfRuns is the CPU (user + system) this process spent in
	// each open: beside its wall, how far the cores bound it.
	CPUMillisOfRuns []float64 `json:"cpu_ms_runs"`
	// With a list cache (CACHEDIR): the first open decodes the lists
	// and writes them there (its write is waited for by Close, outside
	// the time); every later one is a reopen that maps them.
	ListCache      bool    `json:"list_cache"`
	FirstMS        float64 `json:"first_open_ms,omitempty"`
	ReopenMedianMS float64 `json:"reopen_ms_median,omitempty"`
	ReopenCPUMS    float64 `json:"reopen_cpu_ms_median,omitempty"`
}

// cpuMillis is the CPU time this process has spent, user and system.
func cpuMillis() float64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// open measures an open the way the mount makes it (index.Load): time,
// the heap it keeps, and the requests it sends. OXYFS_CPUPROFILE, if set,
// names a file for a CPU profile of the opens (not of the rest);
// OXYFS_BUILD_WORKERS, if set, is index.Options.BuildWorkers.
//
// cacheDir, if not "", is a list cache (index.OpenListCache) every open
// uses, emptied first: the first open fills it, the rest are reopens.
func open(ctx context.Context, url string, repeat int, cacheDir string) error {
	st, err := openStore(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	res := openResult{Repeat: repeat, GOMAXPROCS: runtime.GOMAXPROCS(0), ListCache: cacheDir != ""}
	opts := index.Options{Warn: func(m string) { fmt.Fprintln(os.Stderr, "warning:", m) }}
	if w := os.Getenv("OXYFS_BUILD_WORKERS"); w != "" { // index.Options.BuildWorkers (0: the default)
		n, err := strconv.Atoi(w)
		if err != nil {
			return fmt.Errorf("OXYFS_BUILD_WORKERS: %w", err)
		}
		opts.BuildWorkers = n
	}
	if cacheDir != "" {
		if err := os.RemoveAll(cacheDir); err != nil {
			return err
		}
		if opts.ListCache, err = index.OpenListCache(cacheDir, 0); err != nil {
			return err
		}
	}
	var prof *os.File
	if name := os.Getenv("OXYFS_CPUPROFILE"); name != "" {
		if prof, err = os.Create(name); err != nil {
			return err
		}
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC() // the first moves pooled coders to the victim cache, the second frees them
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for i := 0; i < repeat; i++ {
		debug.FreeOSMemory()
		h0 := heap()
		before := st.Counts()
		var peak atomic.Uint64
		stop := make(chan struct{})
		var sampler sync.WaitGroup
		if i == 0 {
			sampler.Add(1)
			go func() { // sample the heap while the open runs
				defer sampler.Done()
				t := time.NewTicker(5 * time.Millisecond)
				defer t.Stop()
				for {
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > peak.Load() {
						peak.Store(ms.HeapInuse)
					}
					select {
					case <-stop:
						return
					case <-t.C:
					}
				}
			}()
		}
		ix, err := index.Open(ctx, st, opts)
		if err != nil {
			return err
		}
		if prof != nil {
			if err := pprof.StartCPUProfile(prof); err != nil {
				return err
			}
		}
		start, cpu0 := time.Now(), cpuMillis()
		if err := ix.Load(ctx); err != nil {
			return err
		}
		el := time.Since(start)
		res.CPUMillisOfRuns = append(res.CPUMillisOfRuns, cpuMillis()-cpu0)
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
			prof = nil // the first open's
		}
		close(stop)
		sampler.Wait()
		res.OpenMillisOfRuns = append(res.OpenMillisOfRuns, float64(el.Microseconds())/1000)
		if i == 0 {
			res.PeakHeapInUse = peak.Load()
			res.Requests = st.Counts().Sub(before)
			res.HeapBytes = int64(heap()) - int64(h0)
			s := ix.Status()
			res.Entries, res.SetBytes, res.LiveLists, res.JournalLines = s.Entries, s.MemoryBytes, len(s.LiveLists), s.JournalLines
			if res.KeyTextBytes, err = keyText(ctx, st, s); err != nil {
				return err
			}
		}
		runtime.KeepAlive(ix)
		ix.Close()
	}
	runs := slices.Clone(res.OpenMillisOfRuns)
	slices.Sort(runs)
	res.MinMS, res.MedianMS = runs[0], runs[len(runs)/2]
	if res.ListCache && len(res.OpenMillisOfRuns) > 1 {
		res.FirstMS = res.OpenMillisOfRuns[0]
		re, cpu := slices.Clone(res.OpenMillisOfRuns[1:]), slices.Clone(res.CPUMillisOfRuns[1:])
		slices.Sort(re)
		slices.Sort(cpu)
		res.ReopenMedianMS, res.ReopenCPUMS = re[len(re)/2], cpu[len(cpu)/2]
	}
	if res.Entries > 0 {
		res.HeapPerEntry = float64(res.HeapBytes) / float64(res.Entries)
		res.KeyTextPerEntry = float64(res.KeyTextBytes) / float64(res.Entries)
		res.HeapOverKeyText = float64(res.HeapBytes) / float64(res.KeyTextBytes)
	}
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		res.MaxRSSKiB = ru.Maxrss
	}
	return printJSON(res)
}

// keyText sums the key text of the entries an open read, each distinct key
// once (a journal line whose key a list holds is one entry): every live
// list's keys and the journal's (read again, after the measured open).
func keyText(ctx context.Context, st *store.Store, s index.Status) (int64, error) {
	journal := map[string]bool{}
	if data, err := st.Get(ctx, format.JournalKey); err == nil {
		lines, _ := format.ParseJournal(data)
		for _, l := range lines {
			journal[l.Key] = true
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return 0, err
	}
	var n int64
	for _, l := range s.LiveLists {
		data, err := st.Get(ctx, l.Name)
		if err != nil {
			return 0, err
		}
		if _, err := format.DecodeEntryList(data, func(key []byte) error {
			delete(journal, string(key)) // counted here
			n += int64(len(key))
			return nil
		}); err != nil {
			return 0, err
		}
	}
	for k := range journal {
		n += int64(len(k))
	}
	return n, nil
}
