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
