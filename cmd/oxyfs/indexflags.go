package main

import (
	"context"
	"fmt"
	"log"
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
}

func (x *indexFlags) register(f *flag.FlagSet) {
	f.DurationVar(&x.refresh, "refresh-interval", 0, "re-read the journal and lists this often (0: only on SIGHUP); on a folded store an unchanged one costs 2 GETs and no LIST")
	f.Int64Var(&x.sigCache, "sig-cache-size", 0, "bytes of signatures kept in memory (0: 64 MiB, or an eighth of GOMEMLIMIT when that is less)")
	f.IntVar(&x.readAhead, "read-ahead", 0, fmt.Sprintf("signatures fetched ahead (in parallel, in key order) once one is read or stat'ed (0: %d, negative: off)", index.DefaultReadAhead))
	f.StringVar(&x.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at this address, a loopback one unless --allow-remote (e.g. 127.0.0.1:9310)")
	f.BoolVar(&x.allowRemote, "allow-remote", false, "let a listen address (--metrics-addr, and serve's --http) be one that is not loopback, such as :9310, and let serve answer Host headers that are not loopback names (there is no authentication: put it behind one)")
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

// indexOptions are the index's options, its warnings logged.
func (x *indexFlags) indexOptions(logger *log.Logger) index.Options {
	return index.Options{SigCacheBytes: x.sigCache, ReadAhead: x.readAhead,
		Warn: func(msg string) { logger.Print("warning: ", msg) }}
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
