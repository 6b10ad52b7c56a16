package sim

import (
	"context"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

var (
	flagSeed    = flag.Uint64("seed", 0, "run only this seed (0: the CI budget of seeds); also OXYFS_SIM_SEED")
	flagBackend = flag.String("backend", "", "with -seed: run only this backend (mem, file, paged)")
	flagOps     = flag.Int("ops", 0, "operations per run (0: CIOpsPerRun); also OXYFS_SIM_OPS")
	flagRA      = flag.String("read-ahead", VaryMixed, "the long-lived handle's read-ahead: on, off, or mixed (the even seeds)")
	flagSmall   = flag.String("small-cache", VaryMixed, "the long-lived handle's signature cache of SmallSigCacheBytes: on, off, or mixed (seeds 2 and 3 of every four)")
	flagENODEV  = flag.Bool("tolerate-shared-enodev", false, "byte mode: let a MAP_SHARED mapping on the mount fail with ENODEV (Config.TolerateSharedENODEV)")
	flagESTALE  = flag.Bool("tolerate-open-estale", false, "byte mode: let an open through the mount beside the operations fail with ESTALE (Config.TolerateOpenESTALE)")
	flagSkipOps = flag.String("skip-ops", "", "comma-separated operations the runs never draw (Config.SkipOps)")
	flagLeafIDs = flag.Bool("leaf-ids", false, "byte mode: mount with leaf ids (fs.Options.LeafIDs, Config.LeafIDs)")
	flagOxyHold = flag.Bool("tolerate-oxy-hold", false, "byte mode: let .oxy/journal and .oxy/retired show the text from before a refresh (Config.TolerateOxyHold)")
)

// config is a run's Config with the read-ahead and cache -read-ahead and
// -small-cache give its seed.
func config(t *testing.T, c Config) Config {
	t.Helper()
	if err := c.Vary(*flagRA, *flagSmall); err != nil {
		t.Fatal(err)
	}
	c.TolerateSharedENODEV, c.TolerateOxyHold, c.TolerateOpenESTALE = *flagENODEV, *flagOxyHold, *flagESTALE
	c.LeafIDs = *flagLeafIDs
	if *flagSkipOps != "" {
		c.SkipOps = strings.Split(*flagSkipOps, ",")
	}
	return c
}

// The CI budget: CISeeds seeds per backend, CIOpsPerRun operations each.
const (
	CISeeds     = 4
	CIOpsPerRun = 150
)

func envUint(name string) uint64 {
	n, _ := strconv.ParseUint(os.Getenv(name), 10, 64)
	return n
}

// TestSimulation runs the model-based simulation (see doc.go) for a fixed
// budget of seeds on every backend. A failure prints the seed, the
// violations and the operation log; `go test ./testkit/sim -run
// TestSimulation -seed N -backend B` runs that one again.
func TestSimulation(t *testing.T) {
	testwatch.Arm(t) // Run mounts in byte mode only; a hang fails this test by name all the same
	seed, ops := *flagSeed, *flagOps
	if seed == 0 {
		seed = envUint("OXYFS_SIM_SEED")
	}
	if ops == 0 {
		ops = int(envUint("OXYFS_SIM_OPS"))
	}
	if ops == 0 {
		ops = CIOpsPerRun
	}
	type run struct {
		seed    uint64
		backend string
	}
	var runs []run
	if seed != 0 {
		for _, b := range Backends {
			if *flagBackend == "" || *flagBackend == b {
				runs = append(runs, run{seed, b})
			}
		}
	} else {
		for i := range uint64(CISeeds) {
			for _, b := range Backends {
				runs = append(runs, run{1 + i, b})
			}
		}
	}
	total, faults := 0, 0
	for _, r := range runs {
		res, err := Run(context.Background(), config(t, Config{Seed: r.seed, Backend: r.backend, Ops: ops, TempDir: t.TempDir()}))
		if err != nil {
			t.Fatalf("seed %d backend %s: %v", r.seed, r.backend, err)
		}
		total += res.Ops
		faults += res.Faults
		if res.Failed() {
			t.Errorf("%s", res.Report())
		}
	}
	t.Logf("%d runs, %d operations (%d with a fault that fired)", len(runs), total, faults)
}
