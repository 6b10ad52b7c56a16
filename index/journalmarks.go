package index

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"slices"
	"sort"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// What a view keeps of the journal.
//
// A view keeps no journal line. The journal's entries are in the set
// already (a folded set is every live list ∪ every journal line), so the
// view only marks which of the set's entries have a line: one bit per entry
// of a kind the journal names, and, for signatures whose lines are not
// exactly one folded line, how many lines name them and how many are
// unfolded (jcount). A folded line whose key a list holds costs its bit.
// In the prefix modes the set is empty, so the journal's entries get a set
// of their own (jset), every entry of which has a line.
//
// The marks are enough for the two things a refresh needs of the previous
// journal:
//
//   - the journal's entries, when the journal is unchanged but the lists
//     are not (journalFrom): a refresh then has no line to read them from,
//     since store.ReadSnapshotSince hands back the previous snapshot's lines
//     for an unchanged journal, and the view kept none;
//   - per signature, the lines naming it (replaced, the signature cache's
//     invalidation): a signature another writer replaced has a new line.
//
// A new line is not always a line more. A signer who signs again an hour
// after a fold (or after a collection forgot the object) leaves one folded
// line before and after: the old one was dropped past its hour by the same
// journal update that appended the new one, which a fold then marked. So a
// view also keeps the newest folded-at of its journal (foldedMax), and
// while it is being built the folded-at of each signature line (lineAt,
// dropped once the signature cache has read it): a line folded after the
// previous view's newest fold, or not folded, is one that view either did
// not have or had unfolded (a fold marks lines with its own time, later
// than every fold before it).
//
// # What counting cannot tell (R1)
//
// A line is "<folded-at> <key>" and no more: two unfolded lines of one key
// read the same. Counting is exact only while every line the previous
// view had unfolded is still there (unfolded, or folded since). Two things
// take such a line away:
//
//   - Its hour: a fold marks it, and an update drops it an hour later. A
//     refresh whose last look at the records is older than its window
//     (trustWindow, the hour less a margin: Index.lookTrusted) may find
//     the key with as many unfolded lines, or none, after a re-sign whose
//     line came and was folded and dropped meanwhile. Nothing in the
//     journal can tell, so such a refresh trusts no cached signature: the
//     cache starts over (sigCache.invalidateRefresh), one GET again per
//     signature read after a gap of an hour — never on a handle refreshed
//     every minute.
//   - A collection that forgot the object (gc --forget-objects): it drops
//     the key's lines and deletes the key, and a writer may put it again
//     with one new line. A view keeps a digest of every unfolded line's
//     key in the journal's order (unfolded, 8 bytes a line; folds keep
//     them few), since the journal keeps its lines in order: a refresh's
//     lines that are unfolded or folded after the previous view's newest
//     fold are the previous view's unfolded ones, in order, then the new
//     ones. Where they stop matching (gone), a line was taken away, and
//     every signature with a line from there on is taken as changed; a
//     folded view then also drops cached signatures it no longer holds
//     (Index.dropAbsent), and a refresh that no longer holds a key has no
//     line for it, so the refresh that holds it again counts its line as
//     new. gone's comment says the one case this cannot see (the
//     forgotten lines were the last unfolded ones, put again in the same
//     order with no fold between to mark a line before them: the journal
//     may then be the same bytes as before); the forget record the
//     collection leaves closes it (forgotten.go).

// jcount counts the journal lines that name one signature: a new line for
// it (another writer replaced the signature) raises one of the two counts
// even when a fold marked or dropped an older line meanwhile. Each count
// stops at jcountMax; two counts both at the cap are taken as a change
// (replaced), so a cap never hides one.
type jcount struct{ lines, unfolded uint8 }

const jcountMax = 255

// oneFolded is the count the marks keep no record of: one folded line.
var oneFolded = jcount{lines: 1}

func (c *jcount) add(folded bool) {
	if c.lines < jcountMax {
		c.lines++
	}
	if !folded && c.unfolded < jcountMax {
		c.unfolded++
	}
}

// newerThan reports whether c counts a line that p did not: a line more, or
// an unfolded line more, or a count at its cap in both.
func (c jcount) newerThan(p jcount) bool {
	return c.lines > p.lines || c.unfolded > p.unfolded ||
		c.lines == jcountMax && p.lines == jcountMax || c.unfolded == jcountMax && p.unfolded == jcountMax
}

// jents is the journal's distinct entries while a view is built: a run (in
// its builder's value table) and, per signature entry of the run, its
// counts. It is dropped once the view's marks are made.
type jents struct {
	r             *run
	cnt           []jcount // per entry of r.kinds[KindSig]
	lines, folded int
	mal           *malformed // the journal's keys format.SplitKey refused
	foldedMax     int64      // the newest folded-at of any line
	// atStart[i]..atStart[i+1] index the folded-at (0: unfolded) of the
	// lines of signature entry i in ats; nil when built from marks
	// (journalFrom), which keep no line.
	atStart []uint32
	ats     []int64
	// unfolded is the digest (lineSum) of every unfolded line's key, in the
	// journal's order (journalView.unfolded); read the journal's lines,
	// nil when built from marks.
	unfolded []uint64
	read     []format.JournalLine
}

// journalView is what a view keeps of the journal: its version and line
// counts for the next refresh and Status, and marks on a set.
type journalView struct {
	version       store.Version
	lines, folded int
	mal           *malformed
	set           *entrySet                 // the set the marks are on: the view's base, or in the prefix modes jset
	own           bool                      // set is the journal's own (jset): every entry of it has a line
	has           [format.NumKinds][]uint64 // bit j: entry j of set.kinds[k] has a line; nil when own, or no line of the kind
	exIdx         []uint32                  // signature entries whose counts are not oneFolded, ascending
	exCnt         []jcount                  // their counts
	foldedMax     int64                     // the newest folded-at of any line (0: none folded)

	// unfolded is the digest (lineSum) of the key of every unfolded line,
	// in the journal's order: what the next refresh matches its lines
	// against to see a line gone (gone). Kept while the journal is
	// unchanged (journalFrom).
	unfolded []uint64

	// lineAt is the folded-at of every signature line, by the set's entry
	// index, ascending, and read the journal's lines as read: only from
	// the build until the signature cache has compared them with the
	// previous view (take), then nil. They are written before the view is
	// published and taken by the one refresh that built it
	// (Index.loadMu).
	lineAt []lineAt
	read   []format.JournalLine
}

// lineAt is one signature line's folded-at (0: unfolded), for the set's
// signature entry j.
type lineAt struct {
	j  uint32
	at int64
}

// noJournal is the journal of a view that has none (a directory).
var noJournal = &journalView{set: emptySet}

// bytes is what the marks hold (and jset, when the journal has its own).
func (jv *journalView) bytes() int64 {
	n := 4*int64(cap(jv.exIdx)) + 2*int64(cap(jv.exCnt)) + 8*int64(cap(jv.unfolded))
	for _, h := range jv.has {
		n += 8 * int64(cap(h))
	}
	if jv.own {
		n += jv.set.memoryBytes()
	}
	return n
}

// marked reports whether entry j of kind k has a line.
func (jv *journalView) marked(k format.Kind, j int) bool {
	if jv.own {
		return true
	}
	h := jv.has[k]
	return j/64 < len(h) && h[j/64]&(1<<(j%64)) != 0
}

// count returns signature entry j's counts (zero when it has no line).
func (jv *journalView) count(j int) jcount {
	if !jv.marked(format.KindSig, j) {
		return jcount{}
	}
	if i, ok := slices.BinarySearch(jv.exIdx, uint32(j)); ok {
		return jv.exCnt[i]
	}
	return oneFolded
}

// countOf returns the counts of the signature of a packed object and a
// signer (zero when no line names it).
func (jv *journalView) countOf(obj []byte, signer string) jcount {
	k := &jv.set.kinds[format.KindSig]
	i, ok := k.findObj(obj)
	if !ok {
		return jcount{}
	}
	j, ok := k.findVal(&jv.set.vt, i, signer)
	if !ok {
		return jcount{}
	}
	return jv.count(j)
}

// each calls fn with every entry of kind k that has a line: its object's
// index and its entry index in the set.
func (jv *journalView) each(k format.Kind, fn func(i, j int)) {
	ks := &jv.set.kinds[k]
	if jv.own {
		for i := range ks.nObj() {
			for j := ks.first[i]; j < ks.first[i+1]; j++ {
				fn(i, int(j))
			}
		}
		return
	}
	for w, word := range jv.has[k] {
		for word != 0 {
			j := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			// The object holding entry j: the last one starting at or before it.
			i := sort.Search(ks.nObj(), func(i int) bool { return int(ks.first[i+1]) > j })
			fn(i, j)
		}
	}
}

// journalEntries turns the journal's lines into its distinct entries,
// folded lines included (spec §13.7 "Reading"), counting per signature the
// lines that name it. A malformed key is skipped and counted.
func (b *builder) journalEntries(lines []format.JournalLine) *jents {
	type jrec struct {
		kind format.Kind
		obj  []byte // packed
		val  uint32
		at   int64 // folded-at; 0: unfolded
	}
	je := &jents{lines: len(lines)}
	recs := make([]jrec, 0, len(lines))
	arena := make([]byte, 0, len(lines)*32)
	mal := malformed{where: sourceTheJournal}
	var objBuf [format.MaxObjectBytes]byte
	je.read = lines
	for _, l := range lines {
		if l.Folded() {
			je.folded++
			je.foldedMax = max(je.foldedMax, l.FoldedAt)
		} else {
			je.unfolded = append(je.unfolded, lineSum(l.Key))
		}
		kind, ob, val, ok := format.SplitKey(l.Key, &objBuf)
		if !ok {
			mal.add([]byte(l.Key))
			continue
		}
		start := len(arena)
		arena = append(arena, ob...)
		recs = append(recs, jrec{kind: kind, obj: arena[start:len(arena):len(arena)], val: b.internJournal(kind, ob, val), at: l.FoldedAt})
	}
	if mal.n > 0 {
		je.mal = &mal
		b.mal = append(b.mal, mal)
	}
	slices.SortFunc(recs, func(x, y jrec) int {
		if x.kind != y.kind {
			return int(x.kind) - int(y.kind)
		}
		if c := bytes.Compare(x.obj, y.obj); c != 0 {
			return c
		}
		return b.vt.cmpIDs(x.val, y.val)
	})
	je.r = &run{}
	for i, x := range recs {
		dup := i > 0 && x.kind == recs[i-1].kind && x.val == recs[i-1].val && bytes.Equal(x.obj, recs[i-1].obj)
		if !dup {
			je.r.kinds[x.kind].add(x.obj, x.val, srcJournal)
			if x.kind == format.KindSig {
				je.cnt = append(je.cnt, jcount{})
				je.atStart = append(je.atStart, uint32(len(je.ats)))
			}
		}
		if x.kind == format.KindSig {
			je.cnt[len(je.cnt)-1].add(x.at != 0)
			je.ats = append(je.ats, x.at)
		}
	}
	je.atStart = append(je.atStart, uint32(len(je.ats)))
	return je
}

// journalFrom rebuilds the journal's entries from the marks of a view whose
// journal is the one being read again (its version unchanged), into b's
// value table.
func (b *builder) journalFrom(jv *journalView) *jents {
	je := &jents{r: &run{}, lines: jv.lines, folded: jv.folded, mal: jv.mal, foldedMax: jv.foldedMax, unfolded: jv.unfolded}
	if jv.mal != nil {
		b.mal = append(b.mal, *jv.mal)
	}
	var buf [2 * format.MaxValueLen]byte
	for k := range format.NumKinds {
		kind := format.Kind(k)
		ks := &jv.set.kinds[k]
		jv.each(kind, func(i, j int) {
			id := b.intern(jv.set.vt.appendTo(buf[:0], ks.vals[j]))
			je.r.kinds[k].add(ks.obj(i), id, srcJournal)
			if kind == format.KindSig {
				je.cnt = append(je.cnt, jv.count(j))
			}
		})
	}
	return je
}

// notIn returns the entries of je that known does not report, as a run
// sharing b's value ids: the journal's part of a set whose lists are known.
func (je *jents) notIn(vt *vtab, known func(kind format.Kind, obj []byte, val []byte) bool) *run {
	out := &run{}
	var buf [2 * format.MaxValueLen]byte
	for k := range je.r.kinds {
		rk := &je.r.kinds[k]
		for i := range rk.nObj() {
			for j := rk.first[i]; j < rk.first[i+1]; j++ {
				if !known(format.Kind(k), rk.obj(i), vt.appendTo(buf[:0], rk.vals[j])) {
					out.kinds[k].add(rk.obj(i), rk.vals[j], srcJournal)
				}
			}
		}
	}
	return out
}

// markIn marks je's entries on s, which holds every one of them (a set
// built with them, or with a run holding them), and returns the view's
// journal. vt is the value table of je's ids.
func markIn(s *entrySet, je *jents, vt *vtab, version store.Version) *journalView {
	jv := &journalView{version: version, lines: je.lines, folded: je.folded, mal: je.mal, set: s, foldedMax: je.foldedMax,
		unfolded: exact(je.unfolded), read: je.read}
	var buf [2 * format.MaxValueLen]byte
	sig := 0
	for k := range je.r.kinds {
		rk, sk := &je.r.kinds[k], &s.kinds[k]
		if rk.nEntries() == 0 {
			continue
		}
		has := make([]uint64, (sk.nEntries()+63)/64)
		for i := range rk.nObj() {
			oi, ok := sk.findObj(rk.obj(i))
			for j := rk.first[i]; j < rk.first[i+1]; j++ {
				c := oneFolded
				if k == int(format.KindSig) {
					c = je.cnt[sig]
					sig++
				}
				if !ok {
					continue // cannot be: s holds every entry of je
				}
				at, found := sk.findVal(&s.vt, oi, string(vt.appendTo(buf[:0], rk.vals[j])))
				if !found {
					continue
				}
				has[at/64] |= 1 << (at % 64)
				if k == int(format.KindSig) {
					jv.lineAt = je.linesAt(jv.lineAt, sig-1, at)
				}
				if c != oneFolded {
					jv.exIdx = append(jv.exIdx, uint32(at))
					jv.exCnt = append(jv.exCnt, c)
				}
			}
		}
		jv.has[k] = has
	}
	// Signature entries were visited in the set's order, so exIdx ascends.
	jv.exIdx, jv.exCnt = exact(jv.exIdx), exact(jv.exCnt)
	return jv
}

// ownJournal is the journal of a view whose set holds none of its entries
// (the prefix modes): the entries get a set of their own.
func ownJournal(b *builder, je *jents, version store.Version) *journalView {
	s := b.set(je.r)
	jv := &journalView{version: version, lines: je.lines, folded: je.folded, mal: je.mal, set: s, own: true, foldedMax: je.foldedMax,
		unfolded: exact(je.unfolded), read: je.read}
	for j := range je.cnt {
		jv.lineAt = je.linesAt(jv.lineAt, j, j)
	}
	for j, c := range je.cnt {
		if c != oneFolded {
			jv.exIdx = append(jv.exIdx, uint32(j))
			jv.exCnt = append(jv.exCnt, c)
		}
	}
	jv.exIdx, jv.exCnt = exact(jv.exIdx), exact(jv.exCnt)
	return jv
}

// linesAt appends the folded-at of the lines of je's signature entry i,
// as the set's entry j, to out.
func (je *jents) linesAt(out []lineAt, i, j int) []lineAt {
	if je.atStart == nil {
		return out
	}
	for _, at := range je.ats[je.atStart[i]:je.atStart[i+1]] {
		out = append(out, lineAt{j: uint32(j), at: at})
	}
	return out
}

// take returns the view's lineAt and read and drops them.
func (jv *journalView) take() ([]lineAt, []format.JournalLine) {
	l, r := jv.lineAt, jv.read
	if l != nil || r != nil { // noJournal is shared: never written
		jv.lineAt, jv.read = nil, nil
	}
	return l, r
}

// replaced lists the signature keys with a line in jv that prev did not
// have (a writer replaced them since prev, or first wrote them), for the
// signature cache. An unchanged journal replaced nothing. A line is new
// when jv counts a line more than prev, or an unfolded one more, or when
// more of its lines are unfolded or folded after prev's newest fold than
// prev had unfolded (lines, from the build: a re-sign whose old line left
// as its new one came, folded since). A key with fewer lines than prev had
// is listed too: a line of it was dropped, either because its hour passed
// or because a collection forgot the key, which may since have been put
// again with a line that reads like the one the view had (the byte
// simulation's seed 109: three folded lines and the last unfolded one,
// forgotten; one line put again). The two cannot be told apart, so such a
// key is read again: one GET, once a dropped line, at most once an hour.
func (jv *journalView) replaced(prev *journalView, lines []lineAt) []string {
	if prev == nil {
		prev = noJournal
	}
	if jv == prev || jv.version == prev.version {
		return nil
	}
	var keys []string
	ks := &jv.set.kinds[format.KindSig]
	jv.each(format.KindSig, func(i, j int) {
		signer := jv.set.vt.str(ks.vals[j])
		p := prev.countOf(ks.obj(i), signer)
		c := jv.count(j)
		newer := c.newerThan(p) || c.lines < p.lines && p.lines < jcountMax
		if !newer && lines != nil {
			at, _ := slices.BinarySearchFunc(lines, uint32(j), func(l lineAt, j uint32) int { return cmpU32(l.j, j) })
			fresh := 0
			for ; at < len(lines) && lines[at].j == uint32(j); at++ {
				if t := lines[at].at; t == 0 || t > prev.foldedMax {
					fresh++
				}
			}
			newer = fresh > int(p.unfolded)
		}
		if newer {
			keys = append(keys, format.Entry{Kind: format.KindSig, Object: hexString(ks.obj(i)), Value: signer}.Key())
		}
	})
	return keys
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lineSeed seeds lineSum: digests are compared only within this process.
var lineSeed = maphash.MakeSeed()

// lineSum is the digest a view keeps of an unfolded line (its key).
func lineSum(key string) uint64 { return maphash.String(lineSeed, key) }

// gone matches the lines of a refresh (read, jv's journal as read) against
// the unfolded lines of the view before (prev.unfolded) and returns the
// signature keys whose bytes it can no longer vouch for because a line is
// gone, and whether one is.
//
// The journal keeps its lines in order: an update appends, marks in place,
// or drops. So the lines of read that are unfolded or folded after prev's
// newest fold (fresh) are prev's unfolded lines that are still there, in
// their order, followed by every line added since. A line of prev that is
// unfolded cannot be dropped (within the refresh's window, which the
// caller checks: Index.lookTrusted) but by a collection that forgot its
// object: so where the fresh lines stop matching prev's unfolded ones,
// such a collection ran, and the key of every fresh line from there on
// may have been forgotten and put again with other bytes — the counts
// (replaced) can read "the same line" when it is a new one. Those keys
// are returned. A fold marks every unfolded line it read: a matching line
// that is unfolded, or folded later, after one a fold marked, was not
// read by that fold — either added after prev read the journal (a forget
// and a put again), or the fold read before prev did; both are taken as
// the first not to match (the second costs a read again, never a wrong
// answer).
//
// What it cannot see: the forgotten lines were the last of prev's
// unfolded ones, no fold marked a line before them, and the put again
// appended the same keys in the same order. Then the journal reads as if
// nothing happened (it may even be the same bytes); only the lists can
// tell, when a list held the key (Index.dropAbsent). What tells is the
// forget record the collection left (forgotten.go); against a collection
// that leaves none (another implementation), the refresh's window bounds
// how long such a handle serves the old bytes.
func (jv *journalView) gone(prev *journalView, read []format.JournalLine) (keys []string, vanished bool) {
	if prev == nil || jv == prev || jv.version == prev.version || read == nil {
		return nil, false
	}
	u := prev.unfolded
	i, cut := 0, -1
	var marked int64 // the newest folded-at of the matching lines so far
	var fresh []format.JournalLine
	for _, l := range read {
		if l.Folded() && l.FoldedAt <= prev.foldedMax {
			continue
		}
		fresh = append(fresh, l)
		if cut >= 0 {
			continue
		}
		switch {
		case i == len(u):
			cut = len(fresh) - 1 // every unfolded line of prev is still there
		case lineSum(l.Key) != u[i],
			marked != 0 && (!l.Folded() || l.FoldedAt > marked):
			cut, vanished = len(fresh)-1, true
		default:
			i++
			if l.Folded() {
				marked = max(marked, l.FoldedAt)
			}
		}
	}
	if cut < 0 {
		cut = len(fresh)
		vanished = i < len(u)
	}
	if !vanished {
		return nil, false
	}
	seen := map[string]bool{}
	for _, l := range fresh[cut:] {
		if e, err := format.ParseKey(l.Key); err == nil && e.Kind == format.KindSig && !seen[l.Key] {
			seen[l.Key] = true
			keys = append(keys, l.Key)
		}
	}
	return keys, true
}
