package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/fileblob"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/blobtest"
)

// Backends a run can use.
const (
	BackendMem   = "mem"   // an in-memory bucket
	BackendFile  = "file"  // a directory, bucket layout (CAS under an OS lock)
	BackendPaged = "paged" // in-memory, LIST pages of PagedPageSize keys
)

// Backends lists every backend, in the order runs cycle through them.
var Backends = []string{BackendMem, BackendFile, BackendPaged}

// PagedPageSize is the LIST page size of the paged backend: small enough
// that every listing of more than two keys spans pages.
const PagedPageSize = 2

// t0 is where every run's clock starts (2026-01-01T00:00:00Z).
const t0 = int64(1767225600000)

// Config is one run.
type Config struct {
	Seed    uint64
	Backend string // one of Backends
	Ops     int    // operations to run (the setup is not counted)
	TempDir string // parent of the file backend's directory; "" = os.TempDir()
	// Bytes runs the byte level (doc.go "Bytes"): re-signs, held readers,
	// every signature's bytes compared through the handle, serve and (with
	// MountPercent > 0) a FUSE mount of the handle.
	Bytes bool
	// MountPercent is the share of operations whose byte check also reads
	// through the mount (0: no mount). The mount needs /dev/fuse and root
	// (or fusermount3).
	MountPercent int
	// LeafIDs mounts with leaf ids (fs.Options.LeafIDs: entry files get
	// no go-fuse node).
	LeafIDs bool
	// ReadAhead has the long-lived handle fetch signatures ahead of its
	// reads, as the product does by default (index.DefaultReadAhead): the
	// fetches run beside the operations (never meeting their faults), so a
	// run replays its seed only up to their timing. Off, the handle reads only
	// what it is asked for. Vary says which a seed gets.
	ReadAhead bool
	// SmallCache gives the long-lived handle a signature cache of
	// SmallSigCacheBytes (`--sig-cache-size`), a few signatures: bytes and
	// sizes are evicted and read again between the checks, and read-ahead's
	// window shrinks to what fits. Vary says which a seed gets.
	SmallCache bool
	// TolerateSharedENODEV lets a MAP_SHARED mapping of a signature on the
	// mount fail with ENODEV (a signature changed within the hour is
	// opened with direct I/O, which refused shared mappings before kernel
	// 6.6 and the mount's fix): off by default, so it is a violation.
	TolerateSharedENODEV bool
	// TolerateOxyHold lets .oxy/journal and .oxy/retired show the text
	// rendered before a refresh (the mount held it 10 s for the stat that
	// measured it): off by default, so it is a violation.
	TolerateOxyHold bool
	// TolerateOpenESTALE lets an open through the mount beside the
	// operations fail with ESTALE (issue 37 item 8: an open must never
	// fail because a signature changed): off by default, so it is a
	// violation (E1).
	TolerateOpenESTALE bool
	// SkipOps names operations (of ops and byteOps) the run never draws:
	// to prove that a class is caught without the operation built for it
	// (the concurrent readers alone; scripts/simulate --skip-ops). An
	// unknown name is an error of Run.
	SkipOps []string
	// Mounted, if set, is told the run's mount point once, before the
	// first mount (a test registers it with its watchdog: testwatch
	// Watch.Abort, so a hang ends with the FUSE connection aborted).
	Mounted func(dir string)
}

// SmallSigCacheBytes is the signature cache of a SmallCache run: four or
// five of the sim's short signatures (sigItemOverhead each, and key and
// bytes), none of its long ones.
const SmallSigCacheBytes = 1 << 10

// Modes of a run's variant (Config.Vary): every run, none, or some seeds.
const (
	VaryOn    = "on"
	VaryOff   = "off"
	VaryMixed = "mixed"
)

// Vary sets the run's read-ahead and small cache from their modes for its
// seed. Mixed gives read-ahead to the even seeds and the small cache to
// seeds 2 and 3 of every four, so four seeds cover all four pairs.
func (c *Config) Vary(readAhead, smallCache string) error {
	var err error
	if c.ReadAhead, err = vary("read-ahead", readAhead, c.Seed%2 == 0); err != nil {
		return err
	}
	c.SmallCache, err = vary("small-cache", smallCache, c.Seed/2%2 == 1)
	return err
}

func vary(what, mode string, mixed bool) (bool, error) {
	switch mode {
	case VaryOn:
		return true, nil
	case VaryOff:
		return false, nil
	case VaryMixed, "":
		return mixed, nil
	}
	return false, fmt.Errorf("%s mode %q: want %s, %s or %s", what, mode, VaryOn, VaryOff, VaryMixed)
}

// Variants tallies the variants of many runs (Config.Vary) and what they
// did: read-ahead's GETs, the small caches' evictions.
type Variants struct {
	ReadAheadRuns  int
	ReadAheadSent  int64
	SmallCacheRuns int
	Evictions      int64
}

// Add counts one run.
func (v *Variants) Add(r *Result) {
	if r.Config.ReadAhead {
		v.ReadAheadRuns++
		v.ReadAheadSent += r.ReadAheadSent
	}
	if r.Config.SmallCache {
		v.SmallCacheRuns++
		v.Evictions += r.CacheEvictions
	}
}

func (v Variants) String() string {
	return fmt.Sprintf("%d runs with read-ahead, %d GETs it sent; %d with a small signature cache, %d evictions", v.ReadAheadRuns, v.ReadAheadSent, v.SmallCacheRuns, v.Evictions)
}

// Violation is one way a reader's view, or a safety rule, disagreed with
// the model.
type Violation struct {
	Kind   string // e.g. "fresh-view", "handle-refresh", "journal-line-lost"
	Op     int    // the operation after which it was found (1-based; 0 = setup)
	Detail string
	Class  string // which known defect it looks like ("D1", ...) or "NEW"
}

func (v Violation) String() string {
	return fmt.Sprintf("[%s %s] after op %d: %s", v.Class, v.Kind, v.Op, v.Detail)
}

// Result is what a run did and found. A run stops at the first operation
// after which a violation was found (every violation found then is listed).
type Result struct {
	Config   Config
	Ops      int                      // operations run
	OpCounts map[string]int           // per operation name
	OpTime   map[string]time.Duration // wall time per operation name ("check": the checks)
	Faults   int                      // operations run with a fault that fired
	// Byte mode: operations that read through the mount, and the bytes
	// compared with the model (every reader's, summed).
	MountOps      int
	BytesCompared int64
	// ReadAheadSent is how many GETs the long-lived handles' read-ahead
	// sent (Config.ReadAhead).
	ReadAheadSent int64
	// CacheEvictions is how many signatures the long-lived handles'
	// caches evicted (SmallCache makes it many).
	CacheEvictions int64
	// ConcurrentReads is how many reads the concurrent reader made
	// (concurrent.go), ConcurrentNotFound how many of them found no entry.
	ConcurrentReads    int64
	ConcurrentNotFound int64
	ConcurrentESTALE   int64 // opens through the mount that failed with ESTALE, let pass (Config.TolerateOpenESTALE)
	// ConcurrentBesideWrite is how many of its reads through the mount a
	// write through the mount of their key overlapped: not checked.
	ConcurrentBesideWrite int64
	// FullChecks is how many checks were full ones (check.go "Cadence":
	// the bucket listed, the records read, a fresh index opened);
	// FreshChecks how many opened a fresh index.
	FullChecks  int
	FreshChecks int
	Violations  []Violation
	Log         []string // one line per operation
}

// Failed reports whether the run found a violation.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Reproduce is the command that runs this run again (with read-ahead on,
// up to its fetches' timing: Config.ReadAhead).
func (r *Result) Reproduce() string {
	return fmt.Sprintf("go test ./testkit/sim -run %s -seed %d -backend %s -ops %d", r.Config.testName(), r.Config.Seed, r.Config.Backend, r.Ops)
}

// Report formats the violations and the operation log for a failure.
func (r *Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d backend %s: %d violations after %d ops\n", r.Config.Seed, r.Config.Backend, len(r.Violations), r.Ops)
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  %s\n", v)
	}
	fmt.Fprintf(&b, "reproduce: %s\n", r.Reproduce())
	b.WriteString("operations:\n")
	for _, l := range r.Log {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	return b.String()
}

func (c Config) testName() string {
	onOff := func(b bool) string {
		if b {
			return VaryOn
		}
		return VaryOff
	}
	flags := fmt.Sprintf("-read-ahead %s -small-cache %s", onOff(c.ReadAhead), onOff(c.SmallCache))
	if c.TolerateSharedENODEV {
		flags += " -tolerate-shared-enodev"
	}
	if c.TolerateOxyHold {
		flags += " -tolerate-oxy-hold"
	}
	if c.TolerateOpenESTALE {
		flags += " -tolerate-open-estale"
	}
	if len(c.SkipOps) > 0 {
		flags += " -skip-ops " + strings.Join(c.SkipOps, ",")
	}
	if c.Bytes {
		return fmt.Sprintf("TestByteSimulation -mount-percent %d %s", c.MountPercent, flags)
	}
	return "TestSimulation " + flags
}

// sim is one run: the real store and handles, the model, the checks' memory.
type sim struct {
	ctx   context.Context
	cfg   Config
	rng   *rand.Rand
	clk   *store.FakeClock
	inner *blob.Bucket // the bucket itself: HEADs and listings the checks make, uncounted and never faulty
	st    *store.Store // the store operations use, through the fault injector
	hst   *store.Store // the long-lived handle's: the same faults, but its failed reads are not the operation's (injector.handleHooks)
	clean *store.Store // the same bucket without faults: fresh readers, snapshots
	inj   *injector
	dir   string // file backend's directory

	m   *model
	h   *index.Index // the long-lived handle (on st)
	hs  handleState
	obs observed // what the checks saw after the previous operation
	// sn and lastE: the snapshot the checks last read, and E as the
	// bucket was last held to (check.go "Cadence").
	sn    *store.Snapshot
	lastE map[string]bool
	// freshAt: the clock when the checks last opened a fresh index.
	freshAt int64

	op         int
	opName     string
	opFault    *fault
	opFired    int
	attempted  map[string]int           // journal lines this operation tried to add, per key
	forgetting map[string][]format.Kind // objects (and kinds) this operation forgets
	forgotOK   bool                     // the forgetting succeeded: their lines must be gone
	log        []string
	res        *Result
	sigN       int

	exactHandle  string          // the handle was refreshed or opened: the check compares it exactly
	lastDeferred int             // the last operation whose fold was deferred
	forgotten    map[string]bool // every key a collection was asked to forget, ever
	ownEver      map[string]bool // every key the long-lived handles wrote
	liveNow      map[string]bool // the live lists the check's snapshot showed
	failedForget bool            // a forgetting failed since the last complete fold
	// quietList: lagging keys that a failed fold's list (written, neither
	// record changed after it) covers. A long-lived handle whose refresh
	// trusts the unchanged records may not see that list until a record
	// changes (index/refresh.go, the case of a fold that wrote its list and
	// did not retire or mark): it may show these keys or not. Cleared by the
	// next complete fold, which changes a record.
	quietList map[string]bool

	table       []opDef // ops, and byteOps in byte mode
	totalWeight int
	bs          byteState    // byte mode (bytes.go); bs.hist is nil otherwise
	web         http.Handler // serve's handler on h (byte mode)

	// The concurrent reader (byte mode, concurrent.go). handleMu is held
	// for writing while h, web and the mount are replaced (openHandle) and
	// for reading by each of the reader's reads; conc guards what the
	// reader reads of the model.
	handleMu sync.RWMutex
	conc     concState
	rd       *concReader
	// faultMu is held for writing while a fault is armed or disarmed, and
	// for reading by each of the reader's reads: it reads through the
	// mount only while faultArmed is false, and an error it meets while
	// one is armed (a flight the operation started and a fault failed) is
	// not a violation. faultArmed is guarded by faultMu.
	faultMu    sync.RWMutex
	faultArmed bool
}

// Run runs one simulation.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	s, err := newSim(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.close()
	s.table = ops
	if cfg.Bytes {
		s.table = append(slices.Clone(ops), byteOps...)
		s.bs.init()
		s.conc.init()
		s.m.onWrite = s.noteWrite
		if cfg.MountPercent > 0 {
			dir, err := os.MkdirTemp(cfg.TempDir, "oxyfs-sim-mnt-")
			if err != nil {
				return nil, fmt.Errorf("sim: %w", err)
			}
			defer os.Remove(dir)
			s.bs.mntDir = dir
			if cfg.Mounted != nil {
				cfg.Mounted(dir)
			}
		}
	}
	if s.table, err = skipOps(s.table, cfg.SkipOps); err != nil {
		return nil, err
	}
	for _, o := range s.table {
		s.totalWeight += o.weight
	}
	s.res = &Result{Config: cfg, OpCounts: map[string]int{}, OpTime: map[string]time.Duration{}}
	if err := s.setup(); err != nil {
		return nil, err
	}
	if cfg.Bytes {
		s.startReader()
	}
	for s.op = 1; s.op <= cfg.Ops; s.op++ {
		s.step()
		s.res.Ops = s.op
		if s.res.Failed() {
			break
		}
	}
	s.op = s.res.Ops
	s.stopReader()
	s.res.Log = s.log
	return s.res, nil
}

func newSim(ctx context.Context, cfg Config) (*sim, error) {
	s := &sim{ctx: ctx, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x51a7e5)),
		clk: store.NewFakeClock(t0), m: newModel(), inj: &injector{}, forgotten: map[string]bool{}, ownEver: map[string]bool{}}
	opts := store.Options{Layout: store.LayoutBucket, Clock: s.clk, StoreClock: s.clk} // the simulated store keeps the simulated time
	backend := "mem"
	switch cfg.Backend {
	case BackendMem:
		s.inner = memblob.OpenBucket(nil)
	case BackendPaged:
		s.inner = memblob.OpenBucket(nil)
		opts.PageSize = PagedPageSize
	case BackendFile:
		dir, err := os.MkdirTemp(cfg.TempDir, "oxyfs-sim-")
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		s.dir, backend = dir, "file"
		b, err := fileblob.OpenBucket(dir, nil) // the file:// driver store.Open uses
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("sim: open %s: %w", dir, err)
		}
		s.inner = b
	default:
		return nil, fmt.Errorf("sim: unknown backend %q (want one of %v)", cfg.Backend, Backends)
	}
	drv := blobtest.New(s.inner)
	drv.SetHooks(s.inj.hooks())
	s.st = store.New(blob.NewBucket(drv), backend, s.dir, opts)
	hdrv := blobtest.New(s.inner)
	hdrv.SetHooks(s.inj.handleHooks())
	s.hst = store.New(blob.NewBucket(hdrv), backend, s.dir, opts)
	s.clean = store.New(s.inner, backend, s.dir, opts)
	return s, nil
}

func (s *sim) close() {
	s.stopReader()
	if err := s.unmount(); err != nil {
		s.res.Violations = append(s.res.Violations, Violation{Kind: "unmount", Op: s.op, Detail: err.Error(), Class: "NEW"})
	}
	s.closeMaps()
	s.closeHandle()
	s.inner.Close()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// setup opens the long-lived handle on the empty store and takes the first
// observation.
func (s *sim) setup() error {
	if err := s.openHandle(); err != nil {
		return err
	}
	obs, err := s.observe()
	if err != nil {
		return fmt.Errorf("sim: first look at the store: %w", err)
	}
	s.obs = obs
	return nil
}

func (s *sim) openHandle() error {
	s.inj.slow.releaseAll() // a slow read holds handleMu read-locked
	s.handleMu.Lock()       // the concurrent reader's reads wait
	defer s.handleMu.Unlock()
	if err := s.unmount(); err != nil {
		return err
	}
	s.closeHandle()
	ra := -1
	if s.cfg.ReadAhead {
		ra = 0 // the default window
	}
	var cache int64
	if s.cfg.SmallCache {
		cache = SmallSigCacheBytes
	}
	h, err := index.Open(s.ctx, s.hst, index.Options{Warn: func(string) {}, ReadAhead: ra, SigCacheBytes: cache})
	if err != nil {
		return fmt.Errorf("sim: open handle: %w", err)
	}
	if err := h.Load(s.ctx); err != nil {
		return fmt.Errorf("sim: load handle: %w", err)
	}
	s.h = h
	if s.cfg.Bytes {
		s.newWeb()
		if s.bs.mntDir != "" {
			if err := s.mount(); err != nil {
				return err
			}
		}
	}
	view, _, err := walk(s.ctx, h)
	if err != nil {
		return fmt.Errorf("sim: walk handle: %w", err)
	}
	s.hs = handleState{snap: view, sure: map[string]bool{}, maybe: map[string]bool{}}
	return nil
}

// closeHandle closes the long-lived handle, counting its read-ahead.
func (s *sim) closeHandle() {
	if s.h == nil {
		return
	}
	s.h.Close()
	st := s.h.Status()
	s.res.ReadAheadSent += st.ReadAhead.Sent
	s.res.CacheEvictions += st.SigCache.Evictions
	s.h = nil
}

// ops is the operation table: name, weight, and whether a fault may be
// armed for it (dry-run comparisons and the clock run clean).
type opDef struct {
	name   string
	weight int
	faulty bool
	run    func(*sim) error
}

var ops = []opDef{
	{"put", 22, true, (*sim).opPut},
	{"put-append", 8, true, (*sim).opPutAppend},
	{"older-put", 10, true, (*sim).opOlderPut},
	{"partial", 5, true, (*sim).opPartial},
	{"append-bulk", 1, false, (*sim).opAppendBulk},
	{"fold", 6, true, (*sim).opFold},
	{"fold-dry", 4, false, (*sim).opFoldDry},
	{"gc", 4, true, (*sim).opGC},
	{"gc-dry", 3, false, (*sim).opGCDry},
	{"gc-forget", 4, true, (*sim).opGCForget},
	{"clock", 9, false, (*sim).opClock},
	{"refresh", 10, true, (*sim).opRefresh},
	{"reopen", 2, false, (*sim).opReopen},
	{"forget-journal-only", 1, false, (*sim).opForgetJournalOnly},
}

// skipOps returns table without the operations named in skip.
func skipOps(table []opDef, skip []string) ([]opDef, error) {
	out := slices.Clone(table)
	for _, name := range skip {
		i := slices.IndexFunc(out, func(o opDef) bool { return o.name == name })
		if i < 0 {
			return nil, fmt.Errorf("sim: skip operation %q: no such operation in this mode", name)
		}
		out = slices.Delete(out, i, i+1)
	}
	return out, nil
}

// FaultPercent is the share of faultable operations run with a fault armed.
const FaultPercent = 15

// step runs one operation and checks everything after it.
func (s *sim) step() {
	r := s.rng.IntN(s.totalWeight)
	i := 0
	for r >= s.table[i].weight {
		r -= s.table[i].weight
		i++
	}
	o := s.table[i]
	if s.cfg.Bytes {
		// Real clocks move: no two operations in one millisecond, so a
		// re-sign is never folded at the folded-at of the fold before it.
		s.clk.Advance(time.Millisecond)
		clear(s.bs.own)
		s.bs.mountOp = s.bs.mnt != nil && s.rng.IntN(100) < s.cfg.MountPercent
	}
	s.opName, s.opFault, s.opFired = o.name, nil, 0
	s.attempted, s.forgetting, s.forgotOK, s.exactHandle = map[string]int{}, map[string][]format.Kind{}, false, ""
	s.res.OpCounts[o.name]++
	if o.faulty && s.rng.IntN(100) < FaultPercent {
		s.opFault = randomFault(s.rng)
	}
	// The concurrent reader's reads through the mount carry no mark the
	// fault injector could tell from the operation's (the kernel's
	// requests): none runs while a fault is armed (concurrent.go).
	s.conc.opNow.Store(int64(s.op))
	s.faultMu.Lock()
	s.inj.arm(s.opFault)
	s.faultArmed = s.opFault != nil
	if s.faultArmed {
		s.conc.armSeq.Add(1)
	}
	s.faultMu.Unlock()
	began := time.Now()
	err := o.run(s)
	if err == nil && s.exactHandle == "handle-refresh" && s.bs.mnt != nil {
		s.bs.mnt.Invalidate() // as the mount's refresh loop does after each refresh
	}
	s.res.OpTime[o.name] += time.Since(began)
	defer func(t time.Time) { s.res.OpTime["check"] += time.Since(t) }(time.Now())
	fired, badDelete, _ := s.inj.disarm()
	if fired == 0 {
		s.opFault = nil // armed but never met: the operation ran clean
	}
	s.opFired = fired
	if s.opFault != nil {
		s.res.Faults++
		s.logf("   fault %s fired %d×", s.opFault, fired)
	}
	if s.cfg.Bytes {
		t := time.Now()
		s.afterOp() // the concurrent reader's moment (concheld.go)
		s.checkTime("after-op", &t)
	}
	defer s.drainReader()
	defer s.unpend()
	if len(badDelete) > 0 {
		s.violate("delete-after-failed-read", "DELETE sent after a read or listing failed for good: %v", badDelete)
	}
	if err != nil {
		s.logf("   error: %v", err)
		if s.opFault == nil {
			s.violate("unexpected-error", "%s failed with no fault injected: %v", o.name, err)
		}
	}
	s.check()
}

// faulty reports whether the current operation had a fault fire so far.
func (s *sim) faulty() bool {
	fired, _ := s.peekFired()
	return fired
}

func (s *sim) peekFired() (bool, int) {
	s.inj.mu.Lock()
	defer s.inj.mu.Unlock()
	return s.inj.fired > 0, s.inj.fired
}

func (s *sim) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
	if traceOps {
		fmt.Fprintln(os.Stderr, s.log[len(s.log)-1])
	}
}

// traceOps prints each operation as it is logged (OXYFS_SIM_TRACE=1): to
// find where a run that does not end is.
var traceOps = os.Getenv("OXYFS_SIM_TRACE") != ""

func (s *sim) violate(kind, format string, args ...any) {
	v := Violation{Kind: kind, Op: s.op, Detail: fmt.Sprintf(format, args...)}
	v.Class = s.classify(v)
	s.res.Violations = append(s.res.Violations, v)
	s.logf("   VIOLATION %s", v)
}

// randomKey draws a key of the universe; sig keys more often, as in a store.
func (s *sim) randomKey() (format.Entry, string) {
	kind := format.KindSig
	if s.rng.IntN(2) == 0 {
		kind = format.Kinds[s.rng.IntN(format.NumKinds)]
	}
	e := format.Entry{Kind: kind, Object: objects[s.rng.IntN(len(objects))], Value: values[s.rng.IntN(len(values))]}
	return e, e.Key()
}

// existingKey draws a key the model holds, or "" if none.
func (s *sim) existingKey() string {
	if len(s.m.e) == 0 {
		return ""
	}
	keys := make([]string, 0, len(s.m.e))
	for k := range s.m.e {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[s.rng.IntN(len(keys))]
}

// sigData returns fresh signature bytes (re-signs write new bytes).
func (s *sim) sigData(kind format.Kind) []byte {
	if kind != format.KindSig {
		return nil
	}
	s.sigN++
	return fmt.Appendf(nil, "signature %d", s.sigN)
}

// clockSteps are the jumps of the clock op: seconds, minutes, just under and
// just over the hour every grace period counts, hours.
var clockSteps = []time.Duration{time.Second, 30 * time.Second, 5 * time.Minute, 20 * time.Minute,
	59 * time.Minute, time.Hour, 61 * time.Minute, 2 * time.Hour, 5 * time.Hour}
