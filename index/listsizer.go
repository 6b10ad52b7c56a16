package index

import "github.com/oxyfs/oxyfs/store/format"

// lastKindSizer sizes the arrays of the kind whose keys sort last (sig:
// most of a list, 70% in the generator's mix) before they fill, so they
// are written once, where they stay: not grown by doubling (a copy of all
// of it each time, and the new copy's pages faulted in), nor trimmed by a
// copy at the end (kindSet.finish keeps an array whose slack is small).
//
// At the kind's first key the arrays are reserved for a sample of
// sizerSample keys (or, for a short rest, for all of it, as the first
// key's line length says). Once the sample is built, the rest of the list
// is that kind's: its entries are the text left over the sample's text
// bytes per entry, its objects as many per entry as the sample's, and the
// arrays are grown once to that, sizerMargin more (keys are in the order
// of their objects' hashes, so a sample of 32,768 is a fair one: its
// ratios are within a fraction of a percent of the whole). A list whose
// frame declares no size is grown by doubling, as before, and trimmed.
type lastKindSizer struct {
	start int64 // the text offset of the kind's first key; -1: not met
	sized bool  // sized for the rest of the list, or not to be
}

const (
	// sizerSample is the sample of keys the rest is sized from.
	sizerSample = 1 << 15
	// sizerMargin is the share more than the estimate that is reserved.
	sizerMargin = 0.03
)

// begin is the kind's first key, at offset at of a text of textSize
// bytes, on a line of line bytes and an object id of objW bytes.
func (z *lastKindSizer) begin(k *kindSet, textSize, at int64, line, objW int) {
	z.start = at
	if textSize <= at || k.nObj() > 0 {
		z.sized = true // no size declared: grown by doubling
		return
	}
	est := int((textSize - at) / int64(line))
	if est <= 2*sizerSample {
		z.sized = true // a short rest: all of it at once, a quarter more
		est += est / 4
		k.reserveFor(est, est, objW)
		return
	}
	k.reserveFor(sizerSample+sizerSample/4, sizerSample+sizerSample/4, objW)
}

// chunkEnd is the end of a chunk, at offset end of the text: once the
// sample is in, the arrays are sized for the rest.
func (z *lastKindSizer) chunkEnd(k *kindSet, textSize, end int64) {
	entries := k.nEntries()
	if z.sized || z.start < 0 || entries < sizerSample || end <= z.start || textSize <= end {
		return
	}
	z.sized = true
	rest := float64(textSize-end) / (float64(end-z.start) / float64(entries)) // entries left
	more := func(perEntry float64) int {
		return int(min(rest*perEntry*(1+sizerMargin), format.MaxEntryListKeys)) + 1024
	}
	k.reserveFor(more(1), more(float64(k.nObj())/float64(entries)), k.objW)
	k.sized = true
}

// kindSizer sizes the arrays of a kind that is not the last (the kinds
// before sig: 30% of the generator's mix), which otherwise grow by
// doubling and are trimmed by a copy as the next kind begins: each copied
// about twice and its pages faulted in about three times. Only in the
// sized decode (Options.BuildWorkers > 1, the default of an open on two
// CPUs or more: listDecode.sized); the serial decode (build.go's, and
// BuildWorkers 1) grows them as before.
//
// A kind's keys are in the order of their object ids, which are digests,
// so after a sample of kindSample keys the first bytes of the last object
// id say what share of the kind is in: the rest is sized from that,
// kindMargin more, and capped by the text left (as if all of it were this
// kind's, at the sample's bytes per key), so ids that are not uniform (a
// test's, a hostile list's) never reserve more than the list can fill. A
// kind whose estimate was short grows by doubling past it; one whose
// slack is more than a sixteenth is trimmed (tight). What is built is the
// same either way: only the capacities differ.
type kindSizer struct {
	text   int64 // the text of the kind's keys so far (until done)
	arena0 int   // the value table's own lengths as the kind began
	off0   int
	done   bool // sized, or not to be
}

const (
	// kindSample is the sample of a kind's keys its rest is sized from.
	kindSample = 1 << 15
	// kindMargin is the share more than the estimate that is reserved.
	kindMargin = 0.02
)

// begin is the kind's first key.
func (z *kindSizer) begin(vt *vtab) {
	*z = kindSizer{arena0: len(vt.arena), off0: len(vt.off)}
}

// key counts a key of the kind, of line bytes of text with its "\n".
func (z *kindSizer) key(line int) { z.text += int64(line) }

// chunkEnd is the end of a chunk, at offset end of a text of textSize
// bytes (0: unknown): once the sample is in, k's arrays and vt's are
// sized for the rest of the kind.
func (z *kindSizer) chunkEnd(k *kindSet, vt *vtab, textSize, end int64) {
	entries := k.nEntries()
	if z.done || entries < kindSample {
		return
	}
	z.done = true
	if textSize <= end || z.text <= 0 || k.nObj() == 0 {
		return // no size declared: grown by doubling
	}
	last := k.obj(k.nObj() - 1)
	var p uint32
	for i, c := range last[:min(4, len(last))] {
		p |= uint32(c) << (24 - 8*i)
	}
	share := (float64(p) + 1) / (1 << 32) // of the kind's ids up to the last one
	rest := float64(entries)/share - float64(entries)
	rest = min(rest, float64(textSize-end)/(float64(z.text)/float64(entries)), format.MaxEntryListKeys)
	if rest < 1 {
		return
	}
	more := func(per float64) int { return int(rest*per*(1+kindMargin)) + 256 }
	k.reserveFor(more(1), more(float64(k.nObj())/float64(entries)), k.objW)
	k.sized = true
	if a := more(float64(len(vt.arena)-z.arena0) / float64(entries)); a > 4096 {
		vt.arena = grownTo(vt.arena, a)
		vt.off = grownTo(vt.off, more(float64(len(vt.off)-z.off0)/float64(entries)))
	}
}
