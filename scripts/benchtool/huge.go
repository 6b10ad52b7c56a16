package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// The commands of the 10,000,000-entry steps of scripts/bench (--huge),
// beside those of main.go:
//
//	benchtool posixplan DIR N PEROBJ SEED EXTRA_BYTES   what genposix needs under DIR (inodes, bytes) and whether it fits: JSON, or exit 1 saying why not
//	benchtool genposix STORE DIR N PEROBJ SEED [JOURNAL] N per-object keys written as files into DIR, the directory of STORE's bucket on versitygw's posix backend, a journal of the last JOURNAL keys, and a check through STORE: JSON
//	benchtool listall STORE PAR                          list every <kind>/<hh>/ prefix, PAR at a time, as a complete fold lists them: JSON of keys, wall, keys/s
//	benchtool fuseops MOUNT                              the FUSE operations the oxyfs mount answered so far, by name, and the kernel's requests by opcode (.oxy/status): JSON
//	benchtool mountstate MOUNT PID                       the mount's RSS, set, signature cache, read-ahead depth and FUSE operations (.oxy/status): JSON
//	benchtool lookups STORE MOUNT N SEED                 stat N existing entries (not signatures) of STORE's lists on its fresh mount, then again: JSON of µs per path cold and warm, and the FUSE lookups
var commands = map[string]func(ctx context.Context, args []string) error{
	"posixplan":  posixPlanCmd,
	"genposix":   genPosix,
	"listall":    listAll,
	"lookups":    lookups,
	"fuseops":    fuseOpsCmd,
	"mountstate": mountStateCmd,
	"memstates":  memStatesCmd,
}

// listAll lists what a complete fold lists, every entry key, without the
// fold's own work: each kind's 256 <hh>/ directories, PAR listings at a time
// over all kinds (the fold runs 16, fold/scan.go), one LIST per page. Its
// time is the server's listing of the store, the bound under a fold.
func listAll(ctx context.Context, args []string) error {
	need(args, 2)
	par := atoi(args[1])
	if par < 1 {
		return fmt.Errorf("listall: PAR must be at least 1, not %d", par)
	}
	st, err := openStore(ctx, args[0])
	if err != nil {
		return err
	}
	defer st.Close()
	start := time.Now()
	keys, err := listEveryKey(ctx, st, par)
	if err != nil {
		return err
	}
	wall := time.Since(start).Seconds()
	return printJSON(map[string]any{"keys": keys, "prefixes": format.NumKinds * 256, "parallel": par, "wall_s": wall, "keys_per_s": float64(keys) / wall})
}

// listEveryKey lists every <kind>/<hh>/ prefix, par at a time, and counts
// the keys.
func listEveryKey(ctx context.Context, st *store.Store, par int) (int64, error) {
	todo := make(chan string, format.NumKinds*256)
	for _, k := range format.Kinds {
		for hh := range 256 {
			todo <- fmt.Sprintf("%s%02x/", k.Prefix(), hh)
		}
	}
	close(todo)
	var keys atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for range par {
		wg.Go(func() {
			for prefix := range todo {
				if first.Load() != nil {
					return
				}
				if err := st.List(ctx, prefix, "", func(store.ListItem) error { keys.Add(1); return nil }); err != nil {
					err = fmt.Errorf("list %q: %w", prefix, err)
					first.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		return 0, *e
	}
	return keys.Load(), nil
}

// lookups measures what a lookup of an existing entry costs on a fresh
// mount (cold: the kernel asks oxyfs for each name it has not seen) and
// once the kernel holds the names (warm). It draws N entries uniformly from
// the store's entry lists (SEED), leaving out signatures (a stat of one
// reads its bytes for the size: that is a GET, measured elsewhere), stats
// each path once in a random order, then again, and reads the mount's FUSE
// LOOKUP count (.oxy/status) around the cold pass. MOUNT must be a fresh
// mount of STORE.
func lookups(ctx context.Context, args []string) error {
	need(args, 4)
	mnt, n, seed := args[1], atoi(args[2]), atoi64(args[3])
	if n < 1 {
		return fmt.Errorf("lookups: N must be at least 1, not %d", n)
	}
	keys, total, err := sampleKeys(ctx, args[0], n, seed)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return errors.New("lookups: the store's lists hold no entry but signatures")
	}
	before, err := fuseLookups(mnt)
	if err != nil {
		return err
	}
	pass := func() (float64, error) {
		var st unix.Stat_t
		start := time.Now()
		for _, k := range keys {
			if err := unix.Lstat(filepath.Join(mnt, k), &st); err != nil {
				return 0, fmt.Errorf("lookups: stat %s: %w", k, err)
			}
		}
		return float64(time.Since(start).Nanoseconds()) / float64(len(keys)) / 1000, nil
	}
	cold, err := pass()
	if err != nil {
		return err
	}
	after, err := fuseLookups(mnt)
	if err != nil {
		return err
	}
	warm, err := pass()
	if err != nil {
		return err
	}
	final, err := fuseLookups(mnt)
	if err != nil {
		return err
	}
	return printJSON(map[string]any{
		"paths": len(keys), "entries": total,
		"cold_us": cold, "warm_us": warm,
		"cold_fuse_lookups_per_path": float64(after-before) / float64(len(keys)),
		"warm_fuse_lookups_per_path": float64(final-after) / float64(len(keys)),
	})
}

// sampleKeys draws up to n keys other than signatures, uniformly (reservoir
// sampling), from every entry list of the store, and returns them in a
// random order with the count of keys the lists hold.
func sampleKeys(ctx context.Context, url string, n int, seed int64) ([]string, int, error) {
	st, err := openStore(ctx, url)
	if err != nil {
		return nil, 0, err
	}
	defer st.Close()
	var lists []string
	if err := st.List(ctx, format.PackPrefix, "", func(it store.ListItem) error {
		if _, _, ok := format.ParseEntryListName(it.Key); ok {
			lists = append(lists, it.Key)
		}
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("list %q: %w", format.PackPrefix, err)
	}
	if len(lists) == 0 {
		return nil, 0, errors.New("lookups: the store has no entry list (is it folded?)")
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x100c))
	var sample []string
	seen, total := 0, 0
	for _, name := range lists {
		data, err := st.Get(ctx, name)
		if err != nil {
			return nil, 0, err
		}
		if _, err := format.DecodeEntryList(data, func(key []byte) error {
			total++
			if strings.HasPrefix(string(key), format.KindSig.Prefix()) {
				return nil
			}
			seen++
			if len(sample) < n {
				sample = append(sample, string(key))
			} else if j := r.IntN(seen); j < n {
				sample[j] = string(key)
			}
			return nil
		}); err != nil {
			return nil, 0, fmt.Errorf("read %q: %w", name, err)
		}
	}
	r.Shuffle(len(sample), func(i, j int) { sample[i], sample[j] = sample[j], sample[i] })
	return sample, total, nil
}

// fuseLookups reads the mount's count of FUSE LOOKUPs answered.
func fuseLookups(mnt string) (int64, error) {
	c, err := readFuseCounts(mnt)
	if err != nil {
		return 0, err
	}
	n, ok := c.Ops["lookup"]
	if !ok {
		return 0, errors.New("the mount's status has no fuse_ops.lookup")
	}
	return n, nil
}

// fuseCounts is what `benchtool fuseops` prints of the mount's
// .oxy/status: the operations the mount answered by name (fuse_ops: a
// "lookup" there includes each directory a READDIRPLUS hands the kernel),
// the kernel's FUSE requests by opcode (fuse_requests) and the READDIR(PLUS)
// of them answered empty, one a listing read to its end (fuse_listing_ends).
type fuseCounts struct {
	Ops         map[string]int64 `json:"ops"`
	Requests    map[string]int64 `json:"requests"`
	ListingEnds map[string]int64 `json:"listing_ends"`
}

// readFuseCounts reads the mount's counts from its .oxy/status (which the
// mount renders at most once in 10 s: read it that seldom for counts of now).
func readFuseCounts(mnt string) (fuseCounts, error) {
	b, err := os.ReadFile(filepath.Join(mnt, ".oxy", "status"))
	if err != nil {
		return fuseCounts{}, fmt.Errorf("read the mount's status: %w", err)
	}
	var doc struct {
		FuseOps         map[string]int64 `json:"fuse_ops"`
		FuseRequests    map[string]int64 `json:"fuse_requests"`
		FuseListingEnds map[string]int64 `json:"fuse_listing_ends"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fuseCounts{}, fmt.Errorf("parse the mount's status: %w", err)
	}
	if doc.FuseOps == nil {
		return fuseCounts{}, errors.New("the mount's status has no fuse_ops")
	}
	return fuseCounts{Ops: doc.FuseOps, Requests: doc.FuseRequests, ListingEnds: doc.FuseListingEnds}, nil
}

func fuseOpsCmd(_ context.Context, args []string) error {
	need(args, 1)
	c, err := readFuseCounts(args[0])
	if err != nil {
		return err
	}
	return printJSON(c)
}
