// Command simtool runs the model-based simulation of testkit/sim for many
// seeds (scripts/simulate is its wrapper), or checks that a deliberate
// mutation of the code is caught by it.
//
//	scripts/simulate [OPS]                 run at least OPS operations (default 1,000,000)
//	scripts/simulate --mutate NAME [OPS]   apply mutations/NAME.patch to a temporary copy
//	                                       of the tree and expect a violation there
//	scripts/simulate --mutate all [OPS]    every mutation in turn
//
// Flags: --seed (first seed, default 1), --per-run (operations per seed,
// default 2000), --backends (default mem,file,paged), --quiet, --bytes (the
// byte level, testkit/sim doc "Bytes"), --mount-percent (with --bytes: the
// share of operations read through a FUSE mount, default 25), --tempdir
// (where the file backend's bucket and the mount go; default /dev/shm when
// it is a writable tmpfs: the file driver's fsyncs cost most of the wall
// time on a disk, and the simulation checks nothing fsync does),
// --cpuprofile FILE (a CPU profile for go tool pprof), -j N (runs at once),
// --skip-ops a,b (operations never drawn: to show a class is caught without
// the operation built for it).
// It prints the operations run, the seeds, the operations per second and
// the violations by class and kind, with the command that reproduces the
// first of each; it exits 1 if any violation was found (--mutate: if the
// mutation was NOT caught).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oxyfs/oxyfs/testkit/mapcopy"
	"github.com/oxyfs/oxyfs/testkit/sim"
)

func main() {
	mapcopy.MaybeChild() // this executable is the simulation's mapping child too (testkit/mapcopy)
	seed := flag.Uint64("seed", 1, "first seed")
	perRun := flag.Int("per-run", 2000, "operations per seed (a run stops early at its first violation)")
	backends := flag.String("backends", strings.Join(sim.Backends, ","), "backends to cycle through")
	mutate := flag.String("mutate", "", "name of a patch in scripts/simtool/mutations (or \"all\") to apply to a copy of the tree and expect caught")
	quiet := flag.Bool("quiet", false, "print only the summary")
	jobs := flag.Int("j", 1, "runs at once")
	flag.BoolVar(&printRuns, "print-runs", false, "print one RUN line per run (seed, backend, ops, first violation), and a VIOLATION line for each violation a failed run found (its message)")
	flag.BoolVar(&byteMode, "bytes", false, "the byte level: re-signs, held readers, bytes compared through the handle, serve and a FUSE mount")
	flag.StringVar(&readAhead, "read-ahead", sim.VaryMixed, "the long-lived handle's read-ahead (the product's default): on, off, or mixed (the even seeds)")
	flag.StringVar(&smallCache, "small-cache", sim.VaryMixed, "the long-lived handle's signature cache of sim.SmallSigCacheBytes: on, off, or mixed (seeds 2 and 3 of every four)")
	flag.BoolVar(&tolerateENODEV, "tolerate-shared-enodev", false, "with -bytes: let a MAP_SHARED mapping on the mount fail with ENODEV (sim.Config.TolerateSharedENODEV; a violation by default)")
	flag.BoolVar(&tolerateOxyHold, "tolerate-oxy-hold", false, "with -bytes: let .oxy/journal and .oxy/retired show the text from before a refresh (sim.Config.TolerateOxyHold; a violation by default)")
	flag.BoolVar(&tolerateESTALE, "tolerate-open-estale", false, "with -bytes: let an open through the mount beside the operations fail with ESTALE (sim.Config.TolerateOpenESTALE; a violation by default)")
	flag.BoolVar(&leafIDs, "leaf-ids", false, "with -bytes: mount with leaf ids (fs.Options.LeafIDs: entry files get no go-fuse node)")
	flag.StringVar(&skipOps, "skip-ops", "", "comma-separated operations the runs never draw (sim.Config.SkipOps): to prove a class is caught without the operation built for it")
	flag.IntVar(&mountPercent, "mount-percent", 25, "with -bytes: share of operations read through a FUSE mount too (0: no mount; needs /dev/fuse)")
	flag.StringVar(&tempDir, "tempdir", defaultTempDir(), "where the file backend's bucket and the mount go (default: /dev/shm when it is a writable memory filesystem, else the system's temporary directory)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	flag.Parse()
	stopProfile := func() {}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "simulate:", err)
			os.Exit(2)
		}
		stopProfile = stop
	}
	ops := 1_000_000
	if flag.NArg() > 0 {
		n, err := strconv.Atoi(strings.ReplaceAll(flag.Arg(0), "_", ""))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "simulate: bad operation count %q\n", flag.Arg(0))
			os.Exit(2)
		}
		ops = n
	}
	if *mutate != "" {
		os.Exit(runMutations(*mutate, ops))
	}
	code := simulate(*seed, ops, *perRun, strings.Split(*backends, ","), *quiet, *jobs)
	stopProfile()
	os.Exit(code)
}

// defaultTempDir is /dev/shm when it is a writable tmpfs, else "" (the
// system's temporary directory). The file backend fsyncs every object and
// its directory, as the file:// driver does; on a disk that is most of a
// run's wall time, and the simulation checks nothing that fsync does (it
// never crashes the machine), so a memory filesystem loses no check.
func defaultTempDir() string {
	const shm = "/dev/shm"
	var st unix.Statfs_t
	if err := unix.Statfs(shm, &st); err != nil || st.Type != unix.TMPFS_MAGIC || unix.Access(shm, unix.W_OK) != nil {
		return ""
	}
	return shm
}

// startCPUProfile starts writing a CPU profile to path; stop ends it.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

var (
	tempDir      string
	printRuns    bool
	byteMode     bool
	mountPercent int
	readAhead    string
	smallCache   string
	skipOps      string

	tolerateENODEV, tolerateOxyHold, tolerateESTALE bool
	leafIDs                                         bool
)

// modeArgs are the flags a mutation's runs pass on.
func modeArgs() []string {
	args := []string{"-read-ahead", readAhead, "-small-cache", smallCache}
	if skipOps != "" {
		args = append(args, "-skip-ops", skipOps)
	}
	if !byteMode {
		return args
	}
	args = append(args, "-bytes", "-mount-percent", strconv.Itoa(mountPercent))
	if tolerateENODEV {
		args = append(args, "-tolerate-shared-enodev")
	}
	if tolerateOxyHold {
		args = append(args, "-tolerate-oxy-hold")
	}
	if tolerateESTALE {
		args = append(args, "-tolerate-open-estale")
	}
	if leafIDs {
		args = append(args, "-leaf-ids")
	}
	return args
}

type firstSeen struct {
	count int
	first sim.Violation
	res   *sim.Result
}

func simulate(seed uint64, ops, perRun int, backends []string, quiet bool, jobs int) int {
	ctx := context.Background()
	start := time.Now()
	total, runs, faults, failed, mounted := 0, 0, 0, 0, 0
	var compared, concurrent, concNotFound, concESTALE, concBeside int64
	fullChecks, freshChecks := 0, 0
	var vs sim.Variants
	opCounts := map[string]int{}
	opTime := map[string]time.Duration{}
	byClass := map[string]*firstSeen{}
	last := time.Now()
	type job struct {
		seed    uint64
		backend string
	}
	type done struct {
		res *sim.Result
		err error
	}
	jobCh, doneCh := make(chan job), make(chan done)
	var wg sync.WaitGroup
	for range max(1, jobs) {
		wg.Go(func() {
			for j := range jobCh {
				cfg := sim.Config{Seed: j.seed, Backend: j.backend, Ops: perRun, TempDir: tempDir, Bytes: byteMode, MountPercent: mountPercent, LeafIDs: leafIDs,
					TolerateSharedENODEV: tolerateENODEV, TolerateOxyHold: tolerateOxyHold, TolerateOpenESTALE: tolerateESTALE}
				if skipOps != "" {
					cfg.SkipOps = strings.Split(skipOps, ",")
				}
				err := cfg.Vary(readAhead, smallCache)
				var res *sim.Result
				if err == nil {
					res, err = sim.Run(ctx, cfg)
				}
				doneCh <- done{res, err}
			}
		})
	}
	// Hand out seeds until enough operations are done (each run counts
	// what it ran; runs stop early at a violation).
	s, bi, inflight := seed, 0, 0
	next := func() job {
		j := job{s, backends[bi]}
		if bi++; bi == len(backends) {
			bi, s = 0, s+1
		}
		return j
	}
	pending := next()
	// SIGINT or SIGTERM: no new run; the runs in flight end, and the
	// summary covers what ran (a long run stopped at a deadline).
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	stopping := false
	for {
		var send chan job
		if total+inflight*perRun/2 < ops && !stopping {
			send = jobCh
		} else if inflight == 0 {
			break
		}
		select {
		case <-stop:
			stopping = true
			fmt.Printf("… stopping: no new run; %d in flight\n", inflight)
			continue
		case send <- pending:
			inflight++
			pending = next()
			continue
		case d := <-doneCh:
			inflight--
			if d.err != nil {
				fmt.Fprintf(os.Stderr, "simulate: %v\n", d.err)
				return 1
			}
			res := d.res
			if printRuns {
				first := "-"
				if res.Failed() {
					v := res.Violations[0]
					first = fmt.Sprintf("%s/%s@%d", v.Class, v.Kind, v.Op)
				}
				ra := "ra-off"
				if res.Config.ReadAhead {
					ra = fmt.Sprintf("ra-sent=%d", res.ReadAheadSent)
				}
				if res.Config.SmallCache {
					ra += " small-cache"
				}
				fmt.Printf("RUN %d %s %d %s %s\n", res.Config.Seed, res.Config.Backend, res.Ops, first, ra)
				// The messages too: a timing-dependent violation may not
				// come back when its seed runs again.
				for _, v := range res.Violations {
					fmt.Printf("VIOLATION %d %s %s\n", res.Config.Seed, res.Config.Backend, v)
				}
			}
			runs++
			total += res.Ops
			faults += res.Faults
			mounted += res.MountOps
			compared += res.BytesCompared
			concurrent += res.ConcurrentReads
			concNotFound += res.ConcurrentNotFound
			concESTALE += res.ConcurrentESTALE
			concBeside += res.ConcurrentBesideWrite
			fullChecks += res.FullChecks
			freshChecks += res.FreshChecks
			vs.Add(res)
			for k, v := range res.OpCounts {
				opCounts[k] += v
			}
			for k, v := range res.OpTime {
				opTime[k] += v
			}
			if res.Failed() {
				failed++
				seen := map[string]bool{}
				for _, v := range res.Violations {
					key := v.Class + " " + v.Kind
					if seen[key] {
						continue
					}
					seen[key] = true
					if byClass[key] == nil || res.Config.Seed < byClass[key].res.Config.Seed {
						if byClass[key] == nil && !quiet {
							fmt.Printf("violation %s (seed %d, %s, op %d): %s\n", key, res.Config.Seed, res.Config.Backend, v.Op, v.Detail)
						}
						n := 0
						if byClass[key] != nil {
							n = byClass[key].count
						}
						byClass[key] = &firstSeen{count: n, first: v, res: res}
					}
					byClass[key].count++
				}
			}
		}
		if !quiet && time.Since(last) > 30*time.Second {
			last = time.Now()
			fmt.Printf("… %d operations, seeds %d..%d, %.0f ops/s\n", total, seed, s, float64(total)/time.Since(start).Seconds())
		}
	}
	close(jobCh)
	wg.Wait()
	el := time.Since(start)
	fmt.Printf("operations: %d in %d runs (seeds %d..%d, backends %s, ≤%d ops per run), %d with a fault that fired\n",
		total, runs, seed, s, strings.Join(backends, ","), perRun, faults)
	if byteMode {
		fmt.Printf("bytes: %d operations read through the mount (%d%%), %d bytes compared with the model\n", mounted, mountPercent, compared)
		fmt.Printf("concurrent reader: %d reads beside the operations (%d found no entry, %d opens ESTALE let pass, %d through the mount beside a write there unchecked)\n", concurrent, concNotFound, concESTALE, concBeside)
	}
	fmt.Printf("checks: %d full (the bucket listed, the records read, a fresh index opened), %d fresh indexes opened in all\n", fullChecks, freshChecks)
	fmt.Printf("variants (-read-ahead %s -small-cache %s): %s\n", readAhead, smallCache, vs)
	fmt.Printf("time: %.1f s, %.0f ops/s (GOMAXPROCS %d)\n", el.Seconds(), float64(total)/el.Seconds(), runtime.GOMAXPROCS(0))
	names := make([]string, 0, len(opCounts))
	for k := range opCounts {
		names = append(names, k)
	}
	slices.Sort(names)
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", k, opCounts[k]))
	}
	fmt.Printf("by operation: %s\n", strings.Join(parts, " "))
	parts = parts[:0]
	for _, k := range append(names, "check", "check-bytes") {
		parts = append(parts, fmt.Sprintf("%s=%.1fs", k, opTime[k].Seconds()))
	}
	fmt.Printf("wall time by operation: %s\n", strings.Join(parts, " "))
	// The check's parts (sim.Result.OpTime "check/..."), within check.
	parts = parts[:0]
	for _, k := range slices.Sorted(maps.Keys(opTime)) {
		if strings.HasPrefix(k, "check/") {
			parts = append(parts, fmt.Sprintf("%s=%.1fs", strings.TrimPrefix(k, "check/"), opTime[k].Seconds()))
		}
	}
	if len(parts) > 0 {
		fmt.Printf("wall time of the checks by part: %s\n", strings.Join(parts, " "))
	}
	if len(byClass) == 0 {
		fmt.Println("violations: 0")
		return 0
	}
	fmt.Printf("violations: %d runs failed\n", failed)
	keys := make([]string, 0, len(byClass))
	for k := range byClass {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f := byClass[k]
		fmt.Printf("  %-28s %5d runs  first: seed %d %s op %d — %s\n", k, f.count, f.res.Config.Seed, f.res.Config.Backend, f.first.Op, sim.Classes[f.first.Class])
		fmt.Printf("      %s\n", f.res.Reproduce())
	}
	return 1
}

// runMutations applies each named patch to a fresh copy of the tree and runs
// the simulation there; a mutation is caught when the run reports a violation.
func runMutations(name string, ops int) int {
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "simulate:", err)
		return 2
	}
	dir := filepath.Join(root, "scripts", "simtool", "mutations")
	var names []string
	if name == "all" {
		m, _ := filepath.Glob(filepath.Join(dir, "*.patch"))
		for _, p := range m {
			names = append(names, strings.TrimSuffix(filepath.Base(p), ".patch"))
		}
	} else {
		names = []string{name}
	}
	code := 0
	for _, n := range names {
		caught, out, err := mutation(root, filepath.Join(dir, n+".patch"), ops)
		switch {
		case err != nil:
			fmt.Printf("mutation %s: %v\n%s", n, err, out)
			code = 2
		case caught:
			fmt.Printf("mutation %s: CAUGHT\n", n)
			ls := strings.Split(out, "\n")
			fmt.Printf("  %d runs differ; first: %s\n", len(ls), ls[0])
		default:
			fmt.Printf("mutation %s: NOT caught in %d operations\n", n, ops)
			code = 1
		}
	}
	return code
}

func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("find the repository root: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// mutation copies the tree (tracked and untracked files, as git sees them)
// into a temporary directory, applies the patch there, and runs the
// simulation on it and on the unchanged tree with the same seeds. The
// mutation is caught when some run's first violation differs from the
// unchanged tree's (known defects not yet fixed fail the same way in both).
func mutation(root, patch string, ops int) (caught bool, out string, err error) {
	tmp, err := os.MkdirTemp("", "oxyfs-mutant-")
	if err != nil {
		return false, "", err
	}
	defer os.RemoveAll(tmp)
	files, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard", "-z").Output()
	if err != nil {
		return false, "", fmt.Errorf("list files: %w", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		dst := filepath.Join(tmp, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return false, "", err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return false, "", err
		}
	}
	apply := exec.Command("patch", "-p1", "--quiet", "--no-backup-if-mismatch", "-i", patch)
	apply.Dir = tmp
	if b, err := apply.CombinedOutput(); err != nil {
		return false, string(b), fmt.Errorf("apply %s: %w", filepath.Base(patch), err)
	}
	// A mutant that does not build runs nothing: go run exits 1 as the
	// simulation does when it finds violations, and no run would differ
	// ("not caught"), so it is an error here.
	build := exec.Command("go", "build", "./...")
	build.Dir = tmp
	if b, err := build.CombinedOutput(); err != nil {
		return false, string(b), fmt.Errorf("the mutant of %s does not build: %w", filepath.Base(patch), err)
	}
	runs := func(dir string) (map[string]string, string, error) {
		args := append([]string{"run", "./scripts/simtool", "-print-runs", "-quiet", "-per-run", "400"}, modeArgs()...)
		cmd := exec.Command("go", append(args, strconv.Itoa(ops))...)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
			return nil, string(b), fmt.Errorf("run in %s: %w", dir, err)
		}
		m := map[string]string{}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 5 && f[0] == "RUN" { // a small-cache run has 6
				m[f[1]+" "+f[2]] = f[3] + " " + f[4]
			}
		}
		return m, string(b), nil
	}
	mut, mout, err := runs(tmp)
	if err != nil {
		return false, mout, err
	}
	base, bout, err := runs(root)
	if err != nil {
		return false, bout, err
	}
	var found []string
	for run, res := range mut {
		if b, ok := base[run]; ok && b != res && !strings.HasSuffix(res, " -") {
			found = append(found, fmt.Sprintf("seed/backend %s: mutant %s, unchanged tree %s", run, res, b))
		}
	}
	slices.Sort(found)
	if len(found) == 0 {
		return false, mout, nil
	}
	return true, strings.Join(found, "\n"), nil
}
