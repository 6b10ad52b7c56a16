package index

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/oxyfs/oxyfs/internal/lib/hugepage"
)

// prefaulter faults in, on a goroutine of its own, the pages of the
// arrays a sized decode reserved (Options.BuildWorkers > 1: kindSizer,
// lastKindSizer) ahead of the build that fills them.
//
// Why: on this project's 2-core VM a page of new memory costs its first
// writer ~12 µs in the kernel (a 256 MiB array touched page by page:
// 0.83 s), and a 10M open faults in about a gigabyte: a third of its CPU.
// madvise(MADV_POPULATE_WRITE) (Linux 5.14) faults in a range in one call
// for about half of that (6.8 µs a page, the same array), and off the
// build's goroutine. It writes nothing a reader could see (a page faulted
// in is the zero page a first write would have found; one already in is
// left as it is). Where the kernel makes huge pages only when advised,
// each whole 2 MiB block is populated as one huge page (MADV_HUGEPAGE for
// the call, MADV_NOHUGEPAGE after it, so the advice left on the heap is
// what that kernel does unadvised: internal/lib/hugepage): at 0.3 µs per
// 4 KiB, not 7–20. Elsewhere, or if the call fails, prefault does nothing
// and the build faults the pages as it writes them.
//
// The ranges are of the spare capacity of the arrays (past their length),
// at most prefaultAhead past it (ahead), handed over by the build
// goroutine, which alone appends to them; the prefaulter holds them (so
// the arrays stay alive) until it is done. At most prefaultQueue ranges
// wait: one more is dropped (left to the build, or handed again later).
// close stops it between two steps of prefaultStep bytes and waits for
// it: a decode returns with no goroutine of its left.
type prefaulter struct {
	ranges  chan []byte
	handed  map[uintptr]int // per array (its address): the end of the last range handed (the build goroutine's)
	stopped atomic.Bool
	wg      sync.WaitGroup
}

const (
	prefaultQueue = 16
	prefaultStep  = hugepage.Size
)

func startPrefaulter() *prefaulter {
	p := &prefaulter{ranges: make(chan []byte, prefaultQueue), handed: make(map[uintptr]int)}
	p.wg.Add(1)
	go p.run()
	return p
}

func (p *prefaulter) run() {
	defer p.wg.Done()
	for r := range p.ranges {
		for len(r) > 0 && !p.stopped.Load() {
			n := min(len(r), prefaultStep-int(uintptr(unsafePointer(r))%prefaultStep)) // steps end on a huge page's bounds
			if !prefault(r[:n]) {
				p.stopped.Store(true) // not supported here: the build faults them
			}
			prefaultedBytes.Add(int64(n))
			r = r[n:]
		}
	}
}

// prefaultedBytes counts the bytes handed to prefault (tests).
var prefaultedBytes atomic.Int64

// close stops the prefaulter and waits for it.
func (p *prefaulter) close() {
	p.stopped.Store(true)
	close(p.ranges)
	p.wg.Wait()
}

// ahead hands over the spare capacity of s from where the last range
// handed of the same array ended (or its length) to prefaultAhead bytes
// past its length, once the build is within half of that of the last
// range's end: the pages are faulted in a window ahead of the build, never
// more, so a reservation far over what a list fills (a frame that lies
// about its size) costs no more than the window.
func ahead[T any](p *prefaulter, s []T) {
	size := int(unsafe.Sizeof(*new(T)))
	if cap(s)-len(s) < prefaultMin/size || p.stopped.Load() {
		return
	}
	base := unsafe.Pointer(unsafe.SliceData(s[:1]))
	from := len(s) * size
	if f, ok := p.handed[uintptr(base)]; ok && f > from {
		if f-from > prefaultAhead/2 {
			return // far enough ahead
		}
		from = f
	}
	to := min(len(s)*size+prefaultAhead, cap(s)*size)
	if to-from < prefaultMin {
		return
	}
	all := unsafe.Slice((*byte)(base), cap(s)*size)
	select {
	case p.ranges <- all[from:to]:
		p.handed[uintptr(base)] = to
	default: // the queue is full: left to the build, or the next call
	}
}

const (
	// prefaultMin is the least range handed over: 1 MiB.
	prefaultMin = 1 << 20
	// prefaultAhead is how far past an array's length its pages are
	// faulted in: 32 MiB.
	prefaultAhead = 32 << 20
)

// kind hands over what is ahead in k's arrays.
func (p *prefaulter) kind(k *kindSet) {
	ahead(p, k.objs)
	ahead(p, k.first)
	ahead(p, k.vals)
	ahead(p, k.srcs)
}

// table hands over what is ahead in vt's own arrays.
func (p *prefaulter) table(vt *vtab) {
	ahead(p, vt.arena)
	ahead(p, vt.off)
}

// prefault faults in the whole pages of b (hugepage.Populate: huge ones
// where it can); false if the kernel does not support it.
func prefault(b []byte) bool { return hugepage.Populate(b) }

// unsafePointer is the address of b's first byte.
func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
