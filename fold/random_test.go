package fold

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
)

// The randomized interleaving test. Each run, from its own seed, builds a
// store (maybe with older one-list keys and an older writer's keys), then
// plays rounds: in each round a random handful of operations run at once on
// two handles of the store (writers that write their keys then Append,
// older writers that write keys only, partial folds, complete folds, at most
// one collection, fresh readers), and between rounds the store clock moves
// on by up to two hours. The invariants:
//
//   - a fresh reader finds every entry whose Append returned before it
//     started (an older writer's entry: once a complete fold that started
//     after it returned);
//   - no journal line is lost: a line is dropped only once folded more than
//     an hour ago (or when a collection forgets its object);
//   - nothing retired is deleted within its hour;
//   - in the end, after collections and a fold, exactly one complete list is
//     live and it equals the set of per-object keys, no line is unfolded, and
//     another fold writes nothing.
//
// OXYFS_FOLD_SEED sets the first seed (default 1), OXYFS_FOLD_RUNS the runs
// per backend.

var (
	randObjects   = []string{"aa01", "bb02", "cc03", "dd04"} // writers write these
	forgetObjects = []string{"ee05", "ff06"}                 // written first, then maybe forgotten
	randValues    = []string{"alice", "bob", "carol"}
	randKinds     = []format.Kind{format.KindSig, format.KindSeal, format.KindReceipt}
	clockSteps    = []time.Duration{0, 10 * time.Minute, 30 * time.Minute, 59 * time.Minute, 61 * time.Minute, 2 * time.Hour}
)

func TestRandomInterleavingsKeepEveryEntryFindable(t *testing.T) {
	seed := envInt("OXYFS_FOLD_SEED", 1)
	runs := map[string]int{"mem": envInt("OXYFS_FOLD_RUNS", 150), "file": envInt("OXYFS_FOLD_RUNS", 50), pagedMem.name: envInt("OXYFS_FOLD_RUNS", 50)}
	if testing.Short() {
		runs = map[string]int{"mem": 20, "file": 5, pagedMem.name: 5}
	}
	for _, b := range append(slices.Clone(backends), pagedMem) {
		t.Run(b.name, func(t *testing.T) {
			total := map[string]int{}
			for i := range runs[b.name] {
				s := uint64(seed + i)
				for op, n := range randomRun(t, b, s) {
					total[op] += n
				}
				if t.Failed() {
					return
				}
			}
			t.Logf("%s: %d runs, seeds %d..%d, %d operations: %v", b.name, runs[b.name], seed, seed+runs[b.name]-1, total["all"], total)
		})
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// world is what one run knows of what was done, shared by its goroutines.
type world struct {
	mu        sync.Mutex
	seq       int64            // logical time, bumped at each start and end of an operation
	appended  map[string]int64 // key -> seq at which an Append carrying it first returned
	older     map[string]int64 // older writer's key -> seq written
	promoted  map[string]int64 // older writer's key -> seq at which a complete fold covered it
	landed    map[string]int   // lines landed this round, per key
	forgotten map[string]bool  // objects whose forgetting began
	errs      []string
	log       []string
	ops       map[string]int
}

func (w *world) tick() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	return w.seq
}

func (w *world) logf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log = append(w.log, fmt.Sprintf(format, args...))
}

func (w *world) fail(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
}

// expected returns the keys every reader starting at seq must find.
func (w *world) expected(seq int64) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keys []string
	for k, s := range w.appended {
		if s < seq {
			keys = append(keys, k)
		}
	}
	for k, s := range w.promoted {
		if s < seq {
			keys = append(keys, k)
		}
	}
	return keys
}

// isForgotten reports whether the key's object is being or was forgotten.
func (w *world) isForgotten(key string) bool {
	e, err := format.ParseKey(key)
	w.mu.Lock()
	defer w.mu.Unlock()
	return err == nil && w.forgotten[e.Object]
}

func randomRun(t *testing.T, b backend, seed uint64) map[string]int {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	clk := store.NewFakeClock(t0)
	st := b.open(t, clk)
	second := secondHandle(t, b, st, clk)
	handles := []*store.Store{st, second}
	w := &world{appended: map[string]int64{}, older: map[string]int64{}, promoted: map[string]int64{},
		landed: map[string]int{}, forgotten: map[string]bool{}, ops: map[string]int{}}
	fatal := func(format string, args ...any) {
		tail := w.log[max(0, len(w.log)-80):]
		t.Fatalf("seed %d (%s): %s\nlast operations:\n  %s", seed, b.name, fmt.Sprintf(format, args...), strings.Join(tail, "\n  "))
	}

	// The store before the run: the objects that may be forgotten, written
	// the ordinary way, and maybe older lists and an older writer's keys.
	var first []string
	for _, obj := range forgetObjects {
		first = append(first, ekey(format.KindSig, obj, "alice"), ekey(format.KindSeal, obj, "bob"))
	}
	runWrite(ctx, w, st, first)
	if rng.IntN(2) == 0 {
		obj := randObjects[rng.IntN(len(randObjects))]
		putRecord(t, st, format.LegacyKey(format.KindSig, obj), "alice YWxpY2U=\ndave ZGF2ZQ==\n")
		putRecord(t, st, format.LegacyKey(format.KindReceipt, obj), "r1\n")
		for _, k := range []string{ekey(format.KindSig, obj, "alice"), ekey(format.KindSig, obj, "dave"), ekey(format.KindReceipt, obj, "r1")} {
			w.appended[k] = 0 // findable from the start: in the older lists, then copied
		}
	}
	if rng.IntN(2) == 0 {
		runOlder(ctx, w, st, []string{ekey(format.KindCert, randObjects[rng.IntN(len(randObjects))], "k1")})
	}

	prevJournal := storefixture.ReadJournal(t, st)
	rounds := 6 + rng.IntN(5)
	for round := range rounds {
		now := clk.NowMs()
		w.logf("-- round %d, clock +%dm", round, (now-t0)/60000)
		clear(w.landed)
		var wg sync.WaitGroup
		collecting := false
		for range 1 + rng.IntN(4) {
			h := handles[rng.IntN(2)]
			op := rng.IntN(100)
			keys := randomKeys(rng)
			var forget string
			if op >= 80 && op < 90 {
				if collecting {
					op = 0 // one collection at a time
				} else if collecting = true; rng.IntN(3) == 0 {
					forget = forgetObjects[rng.IntN(len(forgetObjects))]
				}
			}
			wg.Go(func() {
				switch {
				case op < 40:
					runWrite(ctx, w, h, keys)
				case op < 48:
					runOlder(ctx, w, h, keys[:1])
				case op < 58:
					runPartial(ctx, w, h)
				case op < 80:
					runFold(ctx, w, h, func() (*Report, error) { r, err := Complete(ctx, h, Options{}); return &r, err })
				case op < 90:
					runCollect(ctx, w, h, forget)
				default:
					runReader(ctx, w, h)
				}
			})
		}
		wg.Wait()
		if len(w.errs) > 0 {
			fatal("%s", strings.Join(w.errs, "\n"))
		}
		runReader(ctx, w, handles[rng.IntN(2)])
		prevJournal = checkJournalKept(w, storefixture.ReadJournal(t, st), prevJournal, now)
		checkRetiredKept(w, snapshot(t, st), now)
		if len(w.errs) > 0 {
			fatal("%s", strings.Join(w.errs, "\n"))
		}
		clk.Advance(clockSteps[rng.IntN(len(clockSteps))])
	}

	// The end: collections an hour apart, then a fold that changes nothing.
	for range 2 {
		clk.Advance(2 * hour)
		runCollect(ctx, w, st, "")
	}
	if len(w.errs) > 0 {
		fatal("%s", strings.Join(w.errs, "\n"))
	}
	rep, err := Complete(ctx, st, Options{})
	if err != nil {
		fatal("final fold: %v", err)
	}
	if rep.Requests.Put != 0 || !rep.List.Unchanged {
		fatal("final fold sent %v, list %+v; want nothing written", rep.Requests, rep.List)
	}
	sn := snapshot(t, st)
	live := sn.LiveLists()
	if len(live) != 1 || !live[0].Complete {
		fatal("live lists %+v, want exactly one complete list", live)
	}
	all := perObjectKeys(t, st)
	if got := storefixture.ReadList(t, st, live[0].Name); !slices.Equal(got, all) {
		fatal("the live list\n  %v\ndiffers from the per-object keys\n  %v", got, all)
	}
	if n := sn.UnfoldedLines(); n != 0 {
		fatal("%d journal lines unfolded after the final fold", n)
	}
	if !sn.Marker {
		fatal("no marker after the final fold")
	}
	w.ops["all"] = 0
	for _, op := range []string{"write", "older", "partial", "fold", "collect", "reader"} {
		w.ops["all"] += w.ops[op]
	}
	return w.ops
}

// smallPage is the LIST page size of pagedMem: small enough that the
// runs' stores fill many pages, so folds list kinds split by <hh>.
const smallPage = 2

// pagedMem is a mem store listed smallPage keys a page.
var pagedMem = backend{"mem-paged", func(t testing.TB, clk store.Clock) *store.Store {
	st := storefixture.Open(t, "mem://", store.Options{Layout: store.LayoutBucket, Clock: clk, PageSize: smallPage})
	return st
}}

// secondHandle opens another handle on the same store, as another process would.
func secondHandle(t *testing.T, b backend, st *store.Store, clk store.Clock) *store.Store {
	switch b.name {
	case "mem":
		return store.New(st.Bucket(), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: clk})
	case pagedMem.name:
		return store.New(st.Bucket(), "mem", "", store.Options{Layout: store.LayoutBucket, Clock: clk, PageSize: smallPage})
	}
	u, err := url.Parse(st.URL())
	if err != nil {
		t.Fatal(err)
	}
	return openStore(t, (&url.URL{Scheme: "file", Path: u.Path}).String(), clk)
}

func randomKeys(rng *rand.Rand) []string {
	keys := make([]string, 1+rng.IntN(3))
	for i := range keys {
		keys[i] = ekey(randKinds[rng.IntN(len(randKinds))], randObjects[rng.IntN(len(randObjects))], randValues[rng.IntN(len(randValues))])
	}
	return keys
}

func (w *world) count(op string) {
	w.mu.Lock()
	w.ops[op]++
	w.mu.Unlock()
}

// runWrite writes keys as a writer does: each object, then one Append.
func runWrite(ctx context.Context, w *world, st *store.Store, keys []string) {
	w.count("write")
	for _, k := range keys {
		if err := st.Put(ctx, k, []byte("bytes of "+k)); err != nil {
			w.fail("write %s: %v", k, err)
			return
		}
	}
	res, err := journal.AppendThreshold(ctx, st, keys, 6)
	if err != nil && !errors.Is(err, journal.ErrPartialFold) {
		w.fail("append %v: %v", keys, err)
		return
	}
	s := w.tick()
	w.mu.Lock()
	defer w.mu.Unlock()
	if res.PartialList != "" {
		w.ops["append-partial"]++
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if _, ok := w.appended[k]; !ok {
			w.appended[k] = s
		}
		if !seen[k] {
			seen[k] = true
			w.landed[k]++
		}
	}
	w.log = append(w.log, fmt.Sprintf("append %v: %+v", keys, res))
}

// runOlder writes keys as a writer that keeps no journal.
func runOlder(ctx context.Context, w *world, st *store.Store, keys []string) {
	w.count("older")
	for _, k := range keys {
		if err := st.Put(ctx, k, []byte("older bytes")); err != nil {
			w.fail("older write %s: %v", k, err)
			return
		}
	}
	s := w.tick()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		if _, ok := w.older[k]; !ok {
			w.older[k] = s
		}
	}
	w.log = append(w.log, fmt.Sprintf("older write %v", keys))
}

func runPartial(ctx context.Context, w *world, st *store.Store) {
	w.count("partial")
	res, err := journal.Partial(ctx, st)
	if err != nil {
		w.fail("partial fold: %v", err)
	}
	w.logf("partial fold: %+v", res)
}

// runFold runs a complete fold (alone or in a collection) and, when it was
// not deferred, counts every older writer's key written before it started
// as findable from its end on.
func runFold(ctx context.Context, w *world, st *store.Store, fold func() (*Report, error)) {
	w.count("fold")
	start := w.tick()
	rep, err := fold()
	end := w.tick()
	if err != nil {
		w.fail("fold: %v", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if rep != nil && rep.Deferred != "" {
		w.ops["deferred"]++
	}
	if rep != nil && rep.Deferred == "" {
		for k, s := range w.older {
			if _, ok := w.promoted[k]; !ok && s < start {
				w.promoted[k] = end
			}
		}
	}
	if rep != nil {
		w.log = append(w.log, fmt.Sprintf("fold: list %s %+v retired %d marked %d deferred=%v", rep.List.Name[5:13], rep.List, len(rep.Retired), rep.Marked, rep.Deferred != ""))
	}
}

func runCollect(ctx context.Context, w *world, st *store.Store, forget string) {
	w.count("collect")
	opts := CollectOptions{}
	if forget != "" {
		w.mu.Lock()
		w.forgotten[forget] = true
		w.mu.Unlock()
		opts.ForgetObjects, opts.Apply = []ForgetObject{{Object: forget}}, true
		w.count("forget")
	}
	runFold(ctx, w, st, func() (*Report, error) {
		rep, err := Collect(ctx, st, opts)
		w.logf("collect (forget %q): deleted %d missing %d waiting %d lines %d forgot %d", forget, len(rep.Deleted), len(rep.Missing), rep.Waiting, rep.JournalLinesDropped, len(rep.Forget.Keys))
		return rep.Fold, err
	})
	w.mu.Lock()
	w.ops["fold"]--
	w.mu.Unlock()
}

// runReader opens the store afresh and checks it finds what it must.
func runReader(ctx context.Context, w *world, st *store.Store) {
	w.count("reader")
	start := w.tick()
	want := w.expected(start)
	v, err := freshReader(ctx, st)
	if err != nil {
		w.fail("reader: %v", err)
		return
	}
	for _, k := range want {
		if !v.keys[k] && !w.isForgotten(k) {
			w.fail("a fresh reader (folded=%v) misses %s", v.folded, k)
		}
	}
}

// checkJournalKept checks that no line was lost during the round: per key,
// the journal holds at least the lines of the last round that could not
// expire in this one (unfolded, or folded within the hour) plus the lines
// that landed in it. Forgotten objects are exempt.
func checkJournalKept(w *world, cur, prev []format.JournalLine, now int64) []format.JournalLine {
	need := map[string]int{}
	for _, l := range prev {
		if l.FoldedAt == 0 || now-l.FoldedAt <= ms(hour) {
			need[l.Key]++
		}
	}
	w.mu.Lock()
	for k, n := range w.landed {
		need[k] += n
	}
	w.mu.Unlock()
	have := map[string]int{}
	for _, l := range cur {
		have[l.Key]++
	}
	for k, n := range need {
		if have[k] < n && !w.isForgotten(k) {
			w.fail("journal lost lines of %s: %d left, want at least %d", k, have[k], n)
		}
	}
	return cur
}

// checkRetiredKept checks that every list retired within the hour still exists.
func checkRetiredKept(w *world, sn *store.Snapshot, now int64) {
	listed := map[string]bool{}
	for _, l := range sn.Lists {
		listed[l.Name] = true
	}
	for _, r := range sn.Retired {
		if _, _, isList := format.ParseEntryListName(r.Key); isList && now-r.RetiredAt <= ms(hour) && !listed[r.Key] {
			w.fail("%s retired at %d was deleted within its hour (now %d)", r.Key, r.RetiredAt, now)
		}
	}
}
