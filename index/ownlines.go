package index

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/store/format"
)

// Own lines: what a refresh can tell from this index's own journal lines.
//
// An own write moves its signature's version when its key lands
// (sigCache.put); its journal line lands just after. A refresh that then
// reads the journal finds a new line of the key (journalView.replaced) and
// cannot tell it, by the journal, from another writer's: it would move the
// version a second time for the same bytes. The mount answers an open of a
// node whose version moved with ESTALE, and the kernel looks the name up
// again and retries once; two moves within that retry reach the reader as
// "stale file handle" (integration/TestManyHandlesOnOneBucket saw it on a
// mount re-signing its own names).
//
// The journal changes only by compare-and-swap, and each own append knows
// the sums of the journal it read and wrote (journal.AppendResult.Before,
// After). So when the journal's sum at the view before (Snapshot.
// JournalSum) leads, by own appends alone, to its sum now (between),
// nothing but those appends changed it: every new line is an own line, and
// a key whose last change was its own write keeps its version and its
// bytes (sigCache.invalidateRefresh). Any other update in between
// (another writer's line, a fold's marks, a collection, this process's own
// partial fold) breaks the chain, and every new line moves its key's
// version as before.
//
// Own lines also tell what a collection took away. An append that began
// after the view before had read the journal, and landed before this
// refresh began to read it, put a line in the journal that the view before
// did not have and this refresh must find (since): a key with fewer lines
// unfolded or folded since the view before than it had unfolded plus its
// own new lines lost a line, which only a collection that forgot it does
// within the refresh's window (journalView.lacking), and its bytes are no
// longer vouched for. That sees a forget and a put again by another writer
// that the journal alone reads as unchanged (journalView.gone, "what it
// cannot see"), whenever this handle wrote the key since the view before.
//
// Ticks order the appends and the refreshes' reads: one counter, taken
// before and after each.
type ownLog struct {
	tick atomic.Uint64 // atomic: the clock of the ticks below

	mu    sync.Mutex // a leaf: held only to read or change links
	links []ownLink  // guarded by mu; in the order the appends landed (one committer)
}

// ownLink is one own append that landed: the journal's sum it read and the
// one it wrote, the keys it journaled, and its ticks (begun before its
// first try, done after it landed).
type ownLink struct {
	before, after uint64
	keys          []string
	begun, done   uint64
}

// readTicks are the ticks before and after a view's read of the records.
type readTicks struct{ begun, done uint64 }

// maxOwnLinks bounds the appends remembered between two refreshes; past it
// the oldest are dropped, and a refresh that needed them moves every new
// line's version as before and checks no key for lost lines.
const maxOwnLinks = 1024

// now returns a new tick.
func (o *ownLog) now() uint64 { return o.tick.Add(1) }

// add remembers an append that landed; begun is the tick taken before it.
func (o *ownLog) add(before, after uint64, keys []string, begun uint64) {
	done := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.links) >= maxOwnLinks {
		o.links = append(o.links[:0], o.links[len(o.links)-maxOwnLinks/2:]...)
	}
	o.links = append(o.links, ownLink{before: before, after: after, keys: keys, begun: begun, done: done})
}

// between returns the keys own appends journaled when they alone take the
// journal from sum from to sum to; ok is false when they do not.
func (o *ownLog) between(from, to uint64) (keys map[string]bool, ok bool) {
	if from == to {
		return nil, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	cur := from
	for _, l := range o.links {
		if l.before != cur {
			continue
		}
		if keys == nil {
			keys = make(map[string]bool)
		}
		for _, k := range l.keys {
			keys[k] = true
		}
		if cur = l.after; cur == to {
			return keys, true
		}
	}
	return nil, false
}

// since counts, per key, the own lines that the read prev cannot have seen
// and the read cur must have: appends begun after prev's read was done and
// done before cur's began.
func (o *ownLog) since(prev, cur readTicks) map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	var n map[string]int
	for _, l := range o.links {
		if l.begun <= prev.done || l.done >= cur.begun {
			continue
		}
		if n == nil {
			n = make(map[string]int)
		}
		for _, k := range l.keys {
			n[k]++
		}
	}
	return n
}

// prune drops the appends that landed before the read r began: that read,
// and every later one, holds their lines.
func (o *ownLog) prune(r readTicks) {
	o.mu.Lock()
	defer o.mu.Unlock()
	keep := o.links[:0]
	for _, l := range o.links {
		if l.done > r.begun {
			keep = append(keep, l)
		}
	}
	clear(o.links[len(keep):])
	o.links = keep
}

// lacking returns the keys of own (own lines since prev, with their
// counts) that have fewer lines in jv, unfolded or folded after prev's
// newest fold, than prev had unfolded plus their own new lines: a line of
// theirs was taken away since prev (see ownLog). lines is jv's lineAt as
// its build made them; without them (a view built from marks: the journal
// read as unchanged, which an own line since prev contradicts) every key
// of own is returned.
func (jv *journalView) lacking(prev *journalView, lines []lineAt, own map[string]int) []string {
	if prev == nil {
		prev = noJournal
	}
	var keys []string
	for key, n := range own {
		e, err := format.ParseKey(key)
		if err != nil || e.Kind != format.KindSig {
			continue // only signatures are cached
		}
		var buf [format.MaxObjectBytes]byte
		ob, ok := format.DecodeObjectID(e.Object, &buf)
		if !ok {
			continue
		}
		want := int(prev.countOf(ob, e.Value).unfolded) + n
		if lines == nil || jv.freshOf(prev, lines, ob, e.Value) < want {
			keys = append(keys, key)
		}
	}
	return keys
}

// freshOf counts the lines in jv of the signature of a packed object and a
// signer that are unfolded or folded after prev's newest fold.
func (jv *journalView) freshOf(prev *journalView, lines []lineAt, ob []byte, signer string) int {
	ks := &jv.set.kinds[format.KindSig]
	i, ok := ks.findObj(ob)
	if !ok {
		return 0
	}
	j, ok := ks.findVal(&jv.set.vt, i, signer)
	if !ok || !jv.marked(format.KindSig, j) {
		return 0
	}
	at, _ := slices.BinarySearchFunc(lines, uint32(j), func(l lineAt, j uint32) int { return cmpU32(l.j, j) })
	fresh := 0
	for ; at < len(lines) && lines[at].j == uint32(j); at++ {
		if t := lines[at].at; t == 0 || t > prev.foldedMax {
			fresh++
		}
	}
	return fresh
}

// ownLines is what own appends tell a refresh: only, the keys they alone
// journaled when nothing else changed the journal since the view before
// (nil otherwise); since, the own lines the refresh must find.
type ownLines struct {
	only  map[string]bool
	since map[string]int
}
