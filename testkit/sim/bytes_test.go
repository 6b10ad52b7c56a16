package sim

import (
	"context"
	"errors"
	"flag"
	iofs "io/fs"
	"os"
	"testing"

	"github.com/oxyfs/oxyfs/fs"
	"github.com/oxyfs/oxyfs/testkit/testdeps"
	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

var flagMountPercent = flag.Int("mount-percent", -1, "TestByteSimulation: share of operations read through the mount (-1: CIMountPercent)")

// The byte simulation's CI budget: the ciByteSeeds, each on one backend in
// turn, CIByteOps operations each, CIMountPercent of them read through the
// mount.
var ciByteSeeds = []uint64{1, 2, 3}

const (
	CIByteOps      = 200
	CIMountPercent = 25
)

// TestByteSimulation runs the byte level (doc.go "Bytes"): re-signs,
// forgets and re-puts, readers held across refreshes, every signature's
// bytes compared with the model through the handle, serve's handler and a
// real FUSE mount of the handle. -seed/-backend/-ops/-mount-percent run one
// again.
func TestByteSimulation(t *testing.T) {
	w := testwatch.Arm(t) // a hang (a FUSE request its own process never answers) fails it by name, with every goroutine
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testdeps.SkipOrFail(t, "fuse", "FUSE cannot be used here: "+err.Error())
	}
	mp := *flagMountPercent
	if mp < 0 {
		mp = CIMountPercent
	}
	ops := *flagOps
	if ops == 0 {
		ops = CIByteOps
	}
	type run struct {
		seed    uint64
		backend string
	}
	var runs []run
	if *flagSeed != 0 {
		for _, b := range Backends {
			if *flagBackend == "" || *flagBackend == b {
				runs = append(runs, run{*flagSeed, b})
			}
		}
	} else {
		for i, seed := range ciByteSeeds {
			runs = append(runs, run{seed, Backends[i%len(Backends)]})
		}
	}
	total, mounted := 0, 0
	var compared, concurrent int64
	var vs Variants
	for _, r := range runs {
		res, err := Run(context.Background(), config(t, Config{Seed: r.seed, Backend: r.backend, Ops: ops, TempDir: t.TempDir(), Bytes: true, MountPercent: mp, Mounted: w.Abort}))
		if err != nil {
			if mp > 0 && (errors.Is(err, fs.ErrNoFUSE) || errors.Is(err, iofs.ErrPermission)) {
				testdeps.SkipOrFail(t, "fuse", "FUSE cannot be used here: "+err.Error())
			}
			t.Fatalf("seed %d backend %s: %v", r.seed, r.backend, err)
		}
		total += res.Ops
		mounted += res.MountOps
		compared += res.BytesCompared
		concurrent += res.ConcurrentReads
		vs.Add(res)
		if res.Failed() {
			t.Errorf("%s", res.Report())
		}
	}
	if mp > 0 && mounted == 0 {
		t.Errorf("no operation read through the mount")
	}
	if compared == 0 {
		t.Errorf("no bytes compared")
	}
	if concurrent == 0 {
		t.Errorf("the concurrent reader read nothing")
	}
	// The CI budget must reach both variants' code; one short run again
	// (-seed) may rightly not.
	if *flagSeed == 0 && vs.ReadAheadRuns > 0 && vs.ReadAheadSent == 0 {
		t.Errorf("%d runs with read-ahead, and it sent no GET", vs.ReadAheadRuns)
	}
	if *flagSeed == 0 && vs.SmallCacheRuns > 0 && vs.Evictions == 0 {
		t.Errorf("%d runs with a small signature cache, and it evicted nothing", vs.SmallCacheRuns)
	}
	t.Logf("%d runs, %d operations, %d through the mount, %d bytes compared, %d reads beside the operations; %s", len(runs), total, mounted, compared, concurrent, vs)
}
