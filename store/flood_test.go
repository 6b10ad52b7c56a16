package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/testkit/lyingproxy"
	"github.com/oxyfs/oxyfs/testkit/memtest"
	"github.com/oxyfs/oxyfs/testkit/testservers"
)

// A server that sends a body without end and no length (issue 36): the
// read is cut at its cap and holds at most the cap plus a slab, never the
// several times the cap a buffer grown by copying took (186–296 MiB of RSS
// for a 64 MiB cap); an admission (the index's readers' budget) is asked
// for every slab, so a flooded read is refused at the budget, not at the
// cap.

const floodCap = 16 << 20

func TestFloodedReadCostsAtMostItsCap(t *testing.T) {
	for _, kind := range liarKinds {
		t.Run(kind, func(t *testing.T) {
			st, p := liarStore(t, kind, store.Options{})
			p.Set(lyingproxy.FloodBody(-1, "a/1"))
			var err error
			peak := memtest.Peak(func() { _, err = store.GetAtMost(st, context.Background(), "a/1", floodCap) })
			t.Logf("%s: a flooded GET capped at %d MiB: heap peak %.1f MiB, err %v", kind, floodCap>>20, float64(peak)/memtest.MiB, err)
			if !errors.Is(err, store.ErrTooLarge) {
				t.Fatalf("a flooded GET: %v, want ErrTooLarge", err)
			}
			if bound := uint64(floodCap + 4*memtest.MiB); peak > bound {
				t.Errorf("a flooded GET capped at %d MiB took %.1f MiB of heap, over %d MiB", floodCap>>20, float64(peak)/memtest.MiB, bound>>20)
			}
		})
	}
}

// errBudget is the admission's refusal in these tests.
var errBudget = errors.New("over the readers' budget")

// budget is an admission (GetAdmitted's) with max bytes: what it admitted
// and has not released, and the most it ever held.
type budget struct {
	mu              sync.Mutex
	max, held, peak int64
	calls           int
}

func (b *budget) admit(n int64) (func(), error) {
	n = max(n, 0)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if b.held+n > b.max {
		return nil, fmt.Errorf("%d bytes with %d held: %w", n, b.held, errBudget)
	}
	b.held += n
	b.peak = max(b.peak, b.held)
	return func() {
		b.mu.Lock()
		b.held -= n
		b.mu.Unlock()
	}, nil
}

func TestFloodedReadsStayWithinTheBudget(t *testing.T) {
	for _, kind := range liarKinds {
		t.Run(kind, func(t *testing.T) {
			st, p := liarStore(t, kind, store.Options{})
			ctx := context.Background()
			// Honest: a body of declared size is admitted once, with its size.
			b := &budget{max: 4 << 20}
			if got, _, err := st.GetAdmitted(ctx, "a/1", b.admit); err != nil || string(got) != "a/1" || b.calls != 1 || b.peak != 3 {
				t.Fatalf("honest: %q, %v; %d admissions, peak %d; want a/1, one admission of 3 bytes", got, err, b.calls, b.peak)
			}
			p.Set(lyingproxy.FloodBody(-1, "a/1"))
			const readers = 6
			b = &budget{max: 8 << 20}
			errs := make([]error, readers)
			var wg sync.WaitGroup
			peak := memtest.Peak(func() {
				for i := range readers {
					wg.Go(func() { _, _, errs[i] = st.GetAdmitted(ctx, "a/1", b.admit) })
				}
				wg.Wait()
			})
			t.Logf("%s: %d flooded GETs against a %d MiB budget: heap peak %.1f MiB, budget peak %.1f MiB", kind, readers, b.max>>20, float64(peak)/memtest.MiB, float64(b.peak)/memtest.MiB)
			for i, err := range errs {
				if !errors.Is(err, errBudget) {
					t.Errorf("flooded GET %d: %v, want the budget's refusal", i, err)
				}
			}
			if b.held != 0 {
				t.Errorf("%d bytes still held after every read ended", b.held)
			}
			// The heap counts what is held (at most the budget) and what a
			// refused reader let go of and the GC has not yet swept (at
			// most the budget again: 8.2–10.4 MiB on a quiet machine, 12.2
			// under CI's load, where a bound of the budget plus 4 MiB
			// failed). Reading without admission would hold the cap per
			// reader: 6 × 256 MiB for this key (format.MaxOtherBytes).
			if bound := uint64(2*b.max + 2*memtest.MiB); peak > bound {
				t.Errorf("%d flooded GETs against a %d MiB budget took %.1f MiB of heap, over %d MiB (twice the budget and 2 MiB)", readers, b.max>>20, float64(peak)/memtest.MiB, bound>>20)
			}
		})
	}
}

// BenchmarkFloodedRead measures one GET of a signature (cap
// format.MaxEntryBytes, 64 MiB) from a server that floods it, through
// versitygw and the lying proxy: the heap's peak and the RSS's growth (the
// kernel's high-water mark, reset before each read), as multiples of the
// cap.
func BenchmarkFloodedRead(b *testing.B) {
	srv := testservers.Start(b, "s3")
	p := lyingproxy.Start(b, srv.Kind, srv.URL)
	ctx := context.Background()
	st, err := store.Open(ctx, p.StoreURL(srv.NewBucket(b)), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	key := "sig/ab/cd/flood"
	if err := st.Put(ctx, key, []byte("a signature")); err != nil {
		b.Fatal(err)
	}
	p.Set(lyingproxy.FloodBody(-1, key))
	capBytes := float64(format.ReadCap(key))
	var heapPeak, rssGrowth float64
	for b.Loop() {
		before, errRSS := resetHWM()
		var err error
		peak := memtest.Peak(func() { _, err = st.Get(ctx, key) })
		if !errors.Is(err, store.ErrTooLarge) {
			b.Fatalf("a flooded GET: %v, want ErrTooLarge", err)
		}
		heapPeak = max(heapPeak, float64(peak))
		if hwm, err := rssHWM(); errRSS == nil && err == nil {
			rssGrowth = max(rssGrowth, float64(hwm-before))
		}
	}
	b.ReportMetric(heapPeak/capBytes, "heap-peak/cap")
	b.ReportMetric(rssGrowth/capBytes, "rss-growth/cap")
	b.ReportMetric(heapPeak/memtest.MiB, "heap-peak-MiB")
	b.ReportMetric(rssGrowth/memtest.MiB, "rss-growth-MiB")
}

// resetHWM resets the process's peak RSS to its current RSS (Linux:
// /proc/self/clear_refs) and returns that RSS.
func resetHWM() (int64, error) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, err
	}
	return rssHWM()
}

// rssHWM is the process's peak RSS since the last resetHWM, in bytes.
func rssHWM() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}
