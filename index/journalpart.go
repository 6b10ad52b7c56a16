package index

import (
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// The journal's part of a folded set.
//
// A folded reader's set is every live list ∪ every journal line (spec §13.7
// "Reading"). A refresh that keeps the same lists must not only add the
// journal's new lines: lines also leave the journal (a collection forgets an
// object and drops its lines; a folded line is dropped after its hour), and
// an entry only such a line held must leave the set with it. Each entry
// keeps its source, and merges prefer a list's over the journal's
// (mergeKind), so srcJournal marks exactly the entries no list holds: the
// journal's part, which a refresh recomputes from the journal as it is now.

// withJournal returns base with its journal part replaced by the entries of
// je (the journal's) that base's lists do not hold, and lists, when not
// nil, merged in (base itself when that changes nothing), with the view's
// journal: je's marks on it.
func (b *builder) withJournal(base *entrySet, lists []*run, je *jents, version store.Version) (*entrySet, *journalView) {
	jr := je.notIn(&b.vt, knownInLists(base))
	kept, jo := listPart(base)
	if len(lists) == 0 && jr.entries() == jo && runWithin(jr, base, &b.vt) {
		return base, markIn(base, je, &b.vt, version) // the same journal-only entries: nothing changed
	}
	runs := append([]*run{kept, jr}, lists...)
	s := b.set(b.mergeRuns(runs))
	return s, markIn(s, je, &b.vt, version)
}

// listPart returns the entries of s that a list holds, as a run sharing s's
// value ids (s's own arrays when every entry is a list's), and how many
// entries only the journal held.
func listPart(s *entrySet) (*run, int) {
	jo := 0
	for k := range s.kinds {
		for _, src := range s.kinds[k].srcs {
			if src == srcJournal {
				jo++
			}
		}
	}
	if jo == 0 {
		return runOf(s), 0
	}
	r := &run{}
	for k := range s.kinds {
		from := &s.kinds[k]
		for i := range from.nObj() {
			for j := from.first[i]; j < from.first[i+1]; j++ {
				if from.srcs[j] != srcJournal {
					r.kinds[k].add(from.obj(i), from.vals[j], from.srcs[j])
				}
			}
		}
	}
	return r, jo
}

// knownInLists reports whether a list of base holds an entry (object
// packed), for jents.notIn.
func knownInLists(base *entrySet) func(kind format.Kind, obj []byte, val []byte) bool {
	return func(kind format.Kind, obj []byte, val []byte) bool {
		k := &base.kinds[kind]
		i, ok := k.findObj(obj)
		if !ok {
			return false
		}
		j, ok := k.findVal(&base.vt, i, string(val))
		return ok && k.srcs[j] != srcJournal
	}
}

// runWithin reports whether s holds every entry of r (r's value ids in vt).
func runWithin(r *run, s *entrySet, vt *vtab) bool {
	var buf [2 * format.MaxValueLen]byte
	for k := range r.kinds {
		rk, sk := &r.kinds[k], &s.kinds[k]
		for i := range rk.nObj() {
			oi, ok := sk.findObj(rk.obj(i))
			if !ok {
				return false
			}
			for j := rk.first[i]; j < rk.first[i+1]; j++ {
				if _, ok := sk.findVal(&s.vt, oi, string(vt.appendTo(buf[:0], rk.vals[j]))); !ok {
					return false
				}
			}
		}
	}
	return true
}
