package index

import (
	"sync"
	"sync/atomic"
	"unsafe"
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
// left as it is) and leaves no advice behind, unlike MADV_HUGEPAGE, which
// outlives the memory it was given for and is not used. Elsewhere, or if
// the call fails, prefault does nothing and the build faults the pages as
// it writes them.
//
// The ranges are the spare capacity of the arrays (past their length),
// handed over by the build goroutine, which alone appends to them; the
// prefaulter holds them (so the arrays stay alive) until it is done. At
// most prefaultQueue ranges wait: one more is dropped (left to the build).
// close stops it between two steps of prefaultStep bytes and waits for
// it: a decode returns with no goroutine of its left.
type prefaulter struct {
	ranges  chan []byte
	stopped atomic.Bool
	wg      sync.WaitGroup
}

const (
	prefaultQueue = 16
	prefaultStep  = 512 << 10
)

func startPrefaulter() *prefaulter {
	p := &prefaulter{ranges: make(chan []byte, prefaultQueue)}
	p.wg.Add(1)
	go p.run()
	return p
}

func (p *prefaulter) run() {
	defer p.wg.Done()
	for r := range p.ranges {
		for len(r) > 0 && !p.stopped.Load() {
			n := min(len(r), prefaultStep)
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

// spare hands over the capacity of s past its length, if it is worth a call.
func spare[T any](p *prefaulter, s []T) {
	n := (cap(s) - len(s)) * int(unsafe.Sizeof(*new(T)))
	if n < prefaultMin || p.stopped.Load() {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s[len(s):cap(s)]))), n)
	select {
	case p.ranges <- b:
	default: // the queue is full: left to the build
	}
}

// prefaultMin is the least spare capacity handed over: 1 MiB.
const prefaultMin = 1 << 20

// kind hands over the spare capacity of k's arrays.
func (p *prefaulter) kind(k *kindSet) {
	spare(p, k.objs)
	spare(p, k.first)
	spare(p, k.vals)
	spare(p, k.srcs)
}

// table hands over the spare capacity of vt's own arrays.
func (p *prefaulter) table(vt *vtab) {
	spare(p, vt.arena)
	spare(p, vt.off)
}

// unsafePointer is the address of b's first byte.
func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
