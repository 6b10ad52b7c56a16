package index

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/storegen"
)

// BenchmarkBuildSet is the set build alone, without the store: one
// complete list decoded straight into the arrays (decodeList, the zstd
// decoder in a second goroutine) and a journal of folded lines turned into
// a run and merged with it, as an open right after a complete fold does.
// It reports ns and allocations per entry, the CPU (user and system, every
// goroutine's: cpu-ns/entry) and the set's bytes per entry.
func BenchmarkBuildSet(b *testing.B) {
	for _, n := range []int{1e5, 1e6} {
		l, data, url := benchList(b, n)
		live := []store.ListInfo{l}
		// The generator's garbage is not the build's to collect, and its
		// pages go back to the OS: a first build (-benchtime 1x in a
		// fresh process) faults its arrays in, as an open does.
		debug.FreeOSMemory()
		b.Run(fmt.Sprintf("list-%.0e", float64(n)), func(b *testing.B) {
			b.ReportAllocs()
			var set *entrySet
			cpu0, flt0 := cpuTime(b), minorFaults(b)
			for b.Loop() {
				bl := newBuilder()
				r, err := bl.decodeList(bl.addSource("list "+live[0].Name), live[0].Name, bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				set = bl.set(r)
			}
			reportCPU(b, cpu0, n)
			b.ReportMetric(float64(minorFaults(b)-flt0)/float64(b.N)/float64(n)*1000, "faults/1000-entries")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
			b.ReportMetric(float64(set.memoryBytes())/float64(n), "set-bytes/entry")
		})
		// The same with Options.BuildWorkers 2 (decodeEntryListWith: every
		// kind sized, pages prefaulted).
		b.Run(fmt.Sprintf("list-workers-%.0e", float64(n)), func(b *testing.B) {
			b.ReportAllocs()
			var set *entrySet
			cpu0, flt0 := cpuTime(b), minorFaults(b)
			for b.Loop() {
				bl := newBuilder()
				d, err := decodeEntryListWith(bl.addSource("list "+live[0].Name), live[0].Name, bytes.NewReader(data), 0, 0, 2)
				if err != nil {
					b.Fatal(err)
				}
				set = bl.set(bl.adopt(d, 1))
			}
			reportCPU(b, cpu0, n)
			b.ReportMetric(float64(minorFaults(b)-flt0)/float64(b.N)/float64(n)*1000, "faults/1000-entries")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
			b.ReportMetric(float64(set.memoryBytes())/float64(n), "set-bytes/entry")
		})
		// The same list mapped from the list cache (listcache.go): what a
		// reopen on this host builds instead of the decode above.
		dir := b.TempDir()
		c, err := OpenListCache(dir, 0)
		if err != nil {
			b.Fatal(err)
		}
		key := listFileKey{store: cacheStoreID(url), name: live[0].Name, size: live[0].Size}
		d, err := decodeEntryList(1, live[0].Name, bytes.NewReader(data), 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		c.put(key, d, func(m string) { b.Fatal(m) }, nil)
		c.Wait()
		b.Run(fmt.Sprintf("mapped-%.0e", float64(n)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := c.load(key)
				if err != nil || d == nil {
					b.Fatal(err)
				}
				bl := newBuilder()
				bl.set(bl.adopt(d, bl.addSource("list "+live[0].Name)))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
		})
		keys, err := format.DecodeEntryListAll(data)
		if err != nil {
			b.Fatal(err)
		}
		lines := make([]format.JournalLine, len(keys))
		for i, k := range keys {
			lines[i] = format.JournalLine{FoldedAt: 1, Key: k}
		}
		b.Run(fmt.Sprintf("list+journal-%.0e", float64(n)), func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				bl := newBuilder()
				r, err := bl.decodeList(bl.addSource("list "+live[0].Name), live[0].Name, bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				bl.set(bl.mergeRuns([]*run{r, bl.journalEntries(lines).r}))
			}
			reportCPU(b, cpu0, n)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
		})
	}
}

// reportCPU reports the process's CPU since cpu0 per entry of n: the
// decode's goroutines together (and the collector's, which the build's
// garbage costs).
func reportCPU(b *testing.B, cpu0 time.Duration, n int) {
	if cpu := cpuTime(b) - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/entry")
	}
}

// benchList generates a folded store of n entries (the generator's mix)
// and returns its one complete list, its bytes and the store's URL. The
// store is closed before it returns, so the collector does not mark it
// while a benchmark measures the build's CPU.
func benchList(b *testing.B, n int) (store.ListInfo, []byte, string) {
	ctx := context.Background()
	st, err := store.Open(ctx, "mem://", store.Options{Layout: store.LayoutBucket})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, err := storegen.Generate(ctx, st, storegen.Options{Entries: n, Seed: 5, Fold: true, SkipObjects: true}); err != nil {
		b.Fatal(err)
	}
	sn, err := st.ReadSnapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	live := sn.LiveLists()
	if len(live) != 1 {
		b.Fatalf("%d live lists", len(live))
	}
	data, err := st.Get(ctx, live[0].Name)
	if err != nil {
		b.Fatal(err)
	}
	return live[0], data, st.URL()
}

// BenchmarkBuildKinds decodes a list of 2e5 keys whose kinds before sig
// are long enough for kindSizer's sample (100,000 accepted/ keys with an
// attestation id each, 100,000 sig/ keys of 16 signers), serially and
// with Options.BuildWorkers 2: allocations, page faults and CPU per entry.
// Run it in a fresh process (-benchtime 1x) for an open's first faults.
func BenchmarkBuildKinds(b *testing.B) {
	const n = 100_000
	keys := make([]string, 0, 2*n)
	for i := range n {
		d := sha256.Sum256([]byte(fmt.Sprint(i)))
		h := hex.EncodeToString(d[:])
		a := sha256.Sum256(d[:])
		keys = append(keys, "accepted/"+h[:2]+"/"+h[2:]+"/"+hex.EncodeToString(a[:]))
		keys = append(keys, "sig/"+h[:2]+"/"+h[2:]+"/signer-"+fmt.Sprint(i%16))
	}
	_, data, err := format.EncodeEntryList(keys)
	if err != nil {
		b.Fatal(err)
	}
	debug.FreeOSMemory()
	for _, workers := range []int{0, 2} {
		b.Run(fmt.Sprintf("workers-%d", workers), func(b *testing.B) {
			b.ReportAllocs()
			cpu0, flt0 := cpuTime(b), minorFaults(b)
			for b.Loop() {
				if _, err := decodeEntryListWith(1, "x", bytes.NewReader(data), 0, 0, workers); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0, 2*n)
			b.ReportMetric(float64(minorFaults(b)-flt0)/float64(b.N)/float64(2*n)*1000, "faults/1000-entries")
		})
	}
}
