// Package memtest measures the memory a piece of code takes, for tests that
// feed hostile input and assert a bounded peak.
package memtest

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// heapMetric is the bytes of heap objects, live or not yet swept.
const heapMetric = "/memory/classes/heap/objects:bytes"

// Peak runs fn and returns the highest heap in use above what was in use
// before it, sampled every 100 µs while fn runs and once at its end. The GC
// runs first, so the baseline is live data. A sample can miss a peak that
// lasts under 100 µs, which no allocation of hundreds of MiB does (touching
// the pages alone takes longer).
//
// While fn runs the GC target is 10% (debug.SetGCPercent), so garbage is
// collected soon after it is made and the peak measures what fn holds, not
// how far the heap grew before the next collection (which, at the default
// 100% and under -race, can double a small live heap).
func Peak(fn func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	sample := []metrics.Sample{{Name: heapMetric}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	var mu sync.Mutex
	peak := base
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := []metrics.Sample{{Name: heapMetric}}
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				metrics.Read(s)
				mu.Lock()
				peak = max(peak, s[0].Value.Uint64())
				mu.Unlock()
			}
		}
	}()
	fn()
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	peak = max(peak, read())
	if peak < base {
		return 0
	}
	return peak - base
}

// MiB is a mebibyte, for bounds.
const MiB = 1 << 20
