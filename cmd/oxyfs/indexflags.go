package main

import (
	"context"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/oxyfs/oxyfs/index"
)

// indexFlags are the flags `oxyfs mount` and `oxyfs serve` share, beside
// commonFlags: how the index is kept and refreshed, and where metrics are
// served. Each is registered here once, with one help text and one default
// (TestSharedFlagsHaveOneHelp compares the two commands' --help).
type indexFlags struct {
	refresh     time.Duration
	sigCache    int64
	readAhead   int
	metricsAddr string
	allowRemote bool
	cacheDir    string
	cacheSize   int64
}

// DefaultRefreshInterval is how often mount and serve re-read the store
// unless told otherwise, so another writer's entries show without a SIGHUP
// (rclone's directory cache keeps 5 min). A refresh of a store nothing
// changed costs quietRefreshFolded, no LIST while refreshes come less than
// 50 minutes apart (index: trustWindow), and quietRefreshUnfolded on a store
// not folded: at one a minute, 2,880 GETs a day (and 1,440 LISTs unfolded),
// about a tenth of a cent a day on S3's prices — cheap against a view
// minutes stale. TestQuietRefreshCostsWhatHelpSays measures both figures.
const DefaultRefreshInterval = time.Minute

var (
	quietRefreshFolded   = costWords(0, 2)
	quietRefreshUnfolded = costWords(1, 2)
)

// costWords says a request count in words: "2 GETs", "1 LIST and 2 GETs".
func costWords(lists, gets int64) string {
	plural := func(n int64, what string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, what)
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	if lists == 0 {
		return plural(gets, "GET")
	}
	return plural(lists, "LIST") + " and " + plural(gets, "GET")
}

func (x *indexFlags) register(f *flag.FlagSet) {
	f.DurationVar(&x.refresh, "refresh-interval", DefaultRefreshInterval, fmt.Sprintf("re-read the journal and lists this often, so what other writers wrote shows (0: only on SIGHUP); a refresh of an unchanged store costs %s when it is folded, %s when not (oxyfs fold)", quietRefreshFolded, quietRefreshUnfolded))
	f.Int64Var(&x.sigCache, "sig-cache-size", 0, "bytes of signatures kept in memory (0: 64 MiB, or an eighth of GOMEMLIMIT when that is less)")
	f.IntVar(&x.readAhead, "read-ahead", 0, fmt.Sprintf("signatures fetched ahead (in parallel, in key order) once one is read or stat'ed (0: %d or four times the GETs read-ahead may have in flight, seven eighths of --max-requests, whichever is more; negative: off)", index.DefaultReadAhead))
	f.StringVar(&x.cacheDir, "cache-dir", defaultCacheDir(), "keep the entry lists decoded in this folder (made 0700; refused if others may write it), so the next open on this host maps them rather than GET and decode them ('': none)")
	f.Int64Var(&x.cacheSize, "cache-size", index.DefaultListCacheBytes, "bytes --cache-dir may hold (the lists used longest ago are removed first)")
	f.StringVar(&x.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at this address, a loopback one unless --allow-remote (e.g. 127.0.0.1:9310)")
	f.BoolVar(&x.allowRemote, "allow-remote", false, "let a listen address (--metrics-addr, and serve's --http) be one that is not loopback, such as :9310 (there is no authentication: put it behind one); serve on a loopback --http still refuses Host headers that are not loopback names")
}

// checkMetricsAddr refuses a --metrics-addr that is not loopback unless
// --allow-remote.
func (x *indexFlags) checkMetricsAddr() error {
	if x.metricsAddr == "" {
		return nil
	}
	_, err := checkListenAddr("--metrics-addr", x.metricsAddr, x.allowRemote, "metrics are served")
	return err
}

// indexOptions are the index's options, its warnings logged. A list
// cache that cannot be used is a warning: the open reads the lists from
// the store, as without one.
func (x *indexFlags) indexOptions(logger *log.Logger) index.Options {
	opts := index.Options{SigCacheBytes: x.sigCache, ReadAhead: x.readAhead,
		Warn: func(msg string) { logger.Print("warning: ", msg) }}
	if x.cacheDir != "" {
		c, err := index.OpenListCache(x.cacheDir, x.cacheSize)
		if err != nil {
			logger.Printf("warning: %v; the entry lists are read from the store at each open (--cache-dir '' says none)", err)
		} else {
			opts.ListCache = c
		}
	}
	return opts
}

// defaultCacheDir is --cache-dir's default: oxyfs under the user's cache
// folder, or none when there is no such folder.
func defaultCacheDir() string {
	d, err := index.DefaultListCacheDir()
	if err != nil {
		return ""
	}
	return d
}

// loadIndex reads the store into ix, then gives the open's transient back
// to the OS (GOGC for the set: index.SettleMemory); it returns how long the
// read took.
func loadIndex(ctx context.Context, ix *index.Index) (time.Duration, error) {
	began := time.Now()
	if err := ix.Load(ctx); err != nil {
		return 0, fmt.Errorf("open %s: %w", ix.Store().URL(), err)
	}
	took := time.Since(began)
	index.SettleMemory(ix)
	return took, nil
}

// listsNote says where an open's entry lists came from (index.Status's
// ListCache), for the log line after the open: "entry lists: 1 mapped
// from the list cache /c (1.2 MiB), 0 read from the store (0 B); the cache
// holds 2.3 MiB of 1 GiB". The counts are since the index was opened.
func listsNote(s index.ListCacheStats) string {
	if s.Dir == "" {
		return fmt.Sprintf("entry lists: %d read from the store (%s); no list cache", s.Misses, byteSize(s.MissBytes))
	}
	return fmt.Sprintf("entry lists: %d mapped from the list cache %s (%s), %d read from the store (%s); the cache holds %s of %s",
		s.Hits, s.Dir, byteSize(s.HitBytes), s.Misses, byteSize(s.MissBytes), byteSize(s.Bytes), byteSize(s.Bound))
}

// byteSize is n bytes in binary units: 512 B, 1.5 KiB, 38.2 MiB, 1 GiB.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + []string{"KiB", "MiB", "GiB", "TiB", "PiB"}[i]
}
