package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/oxyfs/oxyfs/index"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
	"github.com/oxyfs/oxyfs/testkit/storefixture"
	"github.com/oxyfs/oxyfs/testkit/testwatch"
)

// benchMount mounts ix in a new temporary directory; unmount is the caller's.
func benchMount(b *testing.B, ix *index.Index) *Server {
	return benchMountWith(b, ix, Options{})
}

// benchMountWith is benchMount with opts (ReadOnly and a quiet log added).
func benchMountWith(b *testing.B, ix *index.Index, opts Options) *Server {
	b.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		b.Skipf("FUSE cannot be used here: %v", err)
	}
	w := testwatch.Arm(b)
	dir := b.TempDir()
	w.Abort(dir)
	opts.ReadOnly, opts.Logf = true, func(string, ...any) {}
	srv, err := Mount(dir, ix, opts)
	if err != nil {
		if errors.Is(err, ErrNoFUSE) || errors.Is(err, iofs.ErrPermission) {
			b.Skipf("FUSE cannot be used here: %v", err)
		}
		b.Fatal(err)
	}
	return srv
}

// benchIndex is a loaded index over a folded mem store of n generated
// entries (the list only: browsing never reads the per-object keys).
func benchIndex(b *testing.B, n int) *index.Index {
	b.Helper()
	st := storefixture.NewMem(b)
	if _, err := storegen.Generate(context.Background(), st, storegen.Options{Entries: n, Seed: 42, Fold: true, SkipObjects: true}); err != nil {
		b.Fatal(err)
	}
	ix := openIndex(b, st)
	if err := ix.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	return ix
}

// find runs find(1) DIR -type f, as a user would (its own process: the
// allocations reported are the server's alone), and returns the files found.
func find(b *testing.B, dir string) int {
	var lines lineCounter
	cmd := exec.Command("find", dir, "-type", "f")
	cmd.Stdout = &lines
	if err := cmd.Run(); err != nil {
		b.Fatalf("find %s: %v", dir, err)
	}
	return int(lines)
}

type lineCounter int

func (c *lineCounter) Write(p []byte) (int, error) {
	*c += lineCounter(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkFind is find MOUNT -type f over a folded store: cold (a fresh
// mount: every directory is read, READDIRPLUS) and warm (the same mount
// again: the kernel answers from the listings it cached, no request). It
// reports what the target of DESIGN §7 is about (ns/op against a tmpfs
// copy is scripts/bench's job), the FUSE work per walk, the store requests
// (always 0), and the server's allocations and retained heap per directory
// the kernel holds afterwards, and (cold) the bytes and objects the
// server allocates per directory it lists.
func BenchmarkFind(b *testing.B) {
	if _, err := exec.LookPath("find"); err != nil {
		b.Skip("no find(1)")
	}
	for _, n := range []int{1e4, 1e5} {
		ix := benchIndex(b, n)
		st := ix.Store()
		for _, views := range []bool{true, false} {
			b.Run(fmt.Sprintf("cold-%.0e/views=%v", float64(n), views), func(b *testing.B) {
				benchColdFind(b, ix, n, Options{noViewIDs: !views})
			})
		}
		b.Run(fmt.Sprintf("warm-%.0e", float64(n)), func(b *testing.B) {
			srv := benchMount(b, ix)
			defer srv.Unmount()
			find(b, srv.Dir())
			ops0, before := srv.Ops(), st.Counts()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				find(b, srv.Dir())
			}
			b.StopTimer()
			ops := srv.Ops()
			b.ReportMetric(float64(ops["readdir"]-ops0["readdir"])/float64(b.N), "listings/op")
			b.ReportMetric(float64(ops["lookup"]-ops0["lookup"])/float64(b.N), "lookups/op")
			b.ReportMetric(float64(st.Counts().Sub(before).Total())/float64(b.N), "requests/op")
		})
	}
}

// benchColdFind is one cold find over a fresh mount of ix (n entries) per
// iteration.
func benchColdFind(b *testing.B, ix *index.Index, n int, opts Options) {
	st := ix.Store()

	b.ReportAllocs()
	var listings, lookups, dirs int64
	var retained, allocBytes, allocs uint64
	before := st.Counts()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		base := heapInUse()
		srv := benchMountWith(b, ix, opts)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		b.StartTimer()
		files := find(b, srv.Dir())
		b.StopTimer()
		runtime.ReadMemStats(&m1)
		allocBytes += m1.TotalAlloc - m0.TotalAlloc
		allocs += m1.Mallocs - m0.Mallocs
		if files < n {
			b.Fatalf("find found %d files, want at least %d", files, n)
		}
		ops := srv.Ops()
		listings += ops["readdir"]
		lookups += ops["lookup"]
		dirs += ops["readdir"]
		retained += heapInUse() - min(base, heapInUse())
		if err := srv.Unmount(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(listings)/float64(b.N), "listings/op")
	b.ReportMetric(float64(lookups)/float64(b.N), "lookups/op")
	b.ReportMetric(float64(retained)/float64(dirs), "heap-bytes/dir")
	// The walk's garbage per directory listed (the server's: find is a
	// process of its own): what the GC's headroom fills with, and the
	// figure docs/performance.md's Target 4 quotes.
	b.ReportMetric(float64(allocBytes)/float64(listings), "alloc-B/listing")
	b.ReportMetric(float64(allocs)/float64(listings), "allocs/listing")
	b.ReportMetric(float64(st.Counts().Sub(before).Total())/float64(b.N), "requests/op")
}

// BenchmarkReaddir is one listing through the mount: os.ReadDir of a
// <kind>/<hh> directory (~270 objects at 1e5 entries) on a mount whose
// listings are dropped before each read, so every read is served (one
// READDIRPLUS and the one that finds the end; a node per subdirectory).
func BenchmarkReaddir(b *testing.B) {
	ix := benchIndex(b, 1e5)
	srv := benchMount(b, ix)
	defer srv.Unmount()
	dir := srv.Dir() + "/sig/a7"
	if _, err := os.ReadDir(dir); err != nil {
		b.Fatal(err)
	}
	at, _ := index.ParsePath("sig/a7")
	node := srv.viewDir(context.Background(), "sig/a7", at)
	b.ReportAllocs()
	var names int
	for b.Loop() {
		node.notifyContent()
		des, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		names += len(des)
	}
	b.ReportMetric(float64(names)/float64(b.N), "names/op")
}

// BenchmarkReqCtx is the context a FUSE request's store reads ask under
// (reqctx.go), on the hot path of every GETATTR and OPEN of a signature
// whose bytes are cached: a go-fuse request's context, then the index's
// answer (SigStat; OpenSig and Release), as entryNode asks. "detached"
// is how they asked before (context.WithoutCancel, which no interrupt or
// unmount reached); "reqCtx" how they ask now; "reqCtx+Done" adds what a
// request that waits on a GET pays on top (a channel and a goroutine,
// merged lazily). allocs/op is the figure to watch: the first two must
// agree.
func BenchmarkReqCtx(b *testing.B) {
	st := storefixture.NewMem(b)
	e := storefixture.Ent(format.KindSig, "ab12cd34", "alice")
	if err := st.Put(context.Background(), e.Key(), []byte("# sig\n")); err != nil {
		b.Fatal(err)
	}
	storefixture.WriteEntryList(b, st, true, e)
	ix := openIndex(b, st)
	if err := ix.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	m := newMount(b.TempDir(), ix, Options{})
	cancel := make(chan struct{})
	ask := func(ctx context.Context) {
		if _, _, err := ix.SigStat(ctx, e); err != nil {
			b.Fatal(err)
		}
		sh, err := ix.OpenSig(ctx, e)
		if err != nil {
			b.Fatal(err)
		}
		sh.Release()
	}
	ask(context.Background()) // cached from here on
	b.Run("detached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ask(context.WithoutCancel(&fuse.Context{Cancel: cancel}))
		}
	})
	b.Run("reqCtx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rc := m.reqCtx(&fuse.Context{Cancel: cancel})
			ask(rc)
			rc.end()
		}
	})
	b.Run("reqCtx+Done", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rc := m.reqCtx(&fuse.Context{Cancel: cancel})
			ask(rc)
			select { // as the index's wait on a GET asks
			case <-rc.Done():
				b.Fatal("done")
			default:
			}
			rc.end()
		}
	})
}
