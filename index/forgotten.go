package index

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// What a forget tells readers (format/forgotten.go).
//
// A collection that forgets objects first retires a forget record naming
// them, then drops their journal lines and deletes their keys, then retires
// a closing record (fold/collect.go, steps 0 and 6). The refresh that reads
// a record it had not read has the cache read every signature of the
// objects it names again (sigCache.recheck: bytes dropped, size not
// answered, the mount told to look the name up again); the next read moves
// the version (a new node on the mount) if the bytes differ. That is what
// closes R1's last case (journalmarks.go): a key whose only line was the
// view's last unfolded one, forgotten and put again — the journal, the
// lists and every count then read as the view saw them.
//
// Only the refresh that reads a record acts on it: a refresh that lands
// while the collection runs may read the old bytes again before they are
// deleted, and the closing record is new to the refresh after it. Acting at
// every refresh of the record's hour, or moving versions at once, gave a
// forgotten object's names two moves close together, and an open racing
// them was ESTALE (the many-handles test).
//
// A record whose retired line is older than its hour (forgetRecordAge, on
// the store's clock; every record while that clock is not known) is left:
// a collection deletes it then, and a handle whose last look is that old
// trusts no cached signature anyway.
//
// Each record is read once (one GET; forgets are rare) and its objects kept
// while the retired record names it, within bounds: at most
// maxForgetReads GETs a refresh, maxForgetRecords records and
// maxForgetObjects objects kept. A record the refresh cannot read or parse
// (gone: the line landed before the record's PUT, or the PUT failed; a
// store that lies), or past a bound, says that a collection forgot
// something, not what: the refresh then trusts no cached signature
// (sigCache.clearAll), which costs reads, never bytes; it says so once.
// That too is done once per record, by the refresh that first meets it,
// as for a record read (forgets.cleared): starting the cache over at every
// refresh of the record's hour moved every signature's version and dropped
// every name the kernel held, ~70 times at the default refresh (issue 37
// item 3). So such a record is not read again either: the start over acted
// on whatever it names, and the collection's closing record is new to the
// refresh after it, as for a record read. (One read but not kept — bytes
// that do not parse, over its cap, more objects than may be kept — would
// tell no more at a second read anyway: its name is its digest.) Once the
// cache is to start over, a refresh reads no more records: the start over
// acts on them all.
//
// A collection that does not write forget records (another implementation)
// still leaves that case unseen until the trust window ends.

const (
	// maxForgetReads bounds the forget records one refresh reads.
	maxForgetReads = 8
	// maxForgetRecords bounds the forget records a handle keeps.
	maxForgetRecords = 64
	// maxForgetObjects bounds the signature objects the kept records name.
	maxForgetObjects = format.MaxForgottenObjects
	// forgetRecordAge is how long after its retired line a forget record
	// is heeded, on the store's clock: its hour, after which a collection
	// deletes it, and the clock margin. One a collection left (another
	// implementation's, which may not delete it) is then no longer read.
	forgetRecordAge = format.GracePeriod + store.ClockMargin
)

// forgets is what the forget records the retired record names told: the
// signature objects of each record read. Guarded by Index.loadMu.
type forgets struct {
	objs map[string][]string // by record name
	n    int                 // the objects of objs
	// cleared: records this handle did not act on one by one (read but
	// not kept: bytes that do not parse, over their cap, more objects than
	// objs may keep; a read that failed; not read because the cache started over for another,
	// past maxForgetRecords) and for which a refresh started the cache over
	// (sigCache.clearAll). That acts on the record once, as reading a
	// record does: a later refresh of its hour neither reads it nor clears
	// anything more for it.
	cleared map[string]bool
}

// forgotten updates ix.forgets for v's retired record and returns the
// signature keys of the objects its forget records name (of prev's set,
// v's, this handle's own writes and the cache), or all when one of them is
// not known. It reads nothing when v has no records or no forget record.
func (ix *Index) forgotten(ctx context.Context, prev, v *view) (fresh map[string]bool, all bool) {
	f := &ix.forgets
	names := ix.namedForgetRecords(v)
	f.dropUnnamed(names)
	if len(names) == 0 {
		return nil, false
	}
	// unknown: records named that this refresh cannot act on one by one;
	// the cache starts over for them, once each (f.cleared).
	var unknown []string
	if len(names) > maxForgetRecords {
		ix.warnOnce("forgotten:many", fmt.Sprintf("the retired record names %d forget records, over the %d this handle reads: it reads every signature again when one is named that it has not acted on", len(names), maxForgetRecords))
		for _, name := range names {
			if _, kept := f.objs[name]; !kept {
				unknown = append(unknown, name)
			}
		}
		return nil, f.clearFor(unknown)
	}
	reads := 0
	for _, name := range names {
		if _, ok := f.objs[name]; ok || f.cleared[name] {
			continue // acted on by the refresh that read it, or cleared for
		}
		if len(unknown) > 0 || reads == maxForgetReads {
			// The cache starts over for an earlier record (which acts on
			// this one too), or this refresh read its share: the next
			// refresh would read on, but the cache starts over now.
			unknown = append(unknown, name)
			continue
		}
		reads++
		if !ix.keepForgetRecord(ctx, name) {
			unknown = append(unknown, name)
			continue
		}
		if fresh == nil {
			fresh = make(map[string]bool)
		}
		fresh[name] = true
	}
	if f.clearFor(unknown) {
		return nil, true
	}
	return fresh, false
}

// namedForgetRecords is the sorted names of the forget records v's retired
// record names and that are young enough to act on (forgetRecordAge by the
// store's clock; all of them when the store's time is unknown).
func (ix *Index) namedForgetRecords(v *view) []string {
	if v.rec == nil {
		return nil
	}
	latest := make(map[string]int64)
	for _, r := range v.rec.Retired {
		if format.IsForgottenName(r.Key) {
			latest[r.Key] = max(latest[r.Key], r.RetiredAt)
		}
	}
	now, known := ix.st.StoreNowMs()
	var names []string
	for name, at := range latest {
		if !known || now-at <= forgetRecordAge.Milliseconds() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// dropUnnamed forgets what f keeps for records names (sorted) no longer
// holds: their objects and their cleared marks.
func (f *forgets) dropUnnamed(names []string) {
	for name, objs := range f.objs {
		if _, named := slices.BinarySearch(names, name); !named {
			f.n -= len(objs)
			delete(f.objs, name)
		}
	}
	for name := range f.cleared {
		if _, named := slices.BinarySearch(names, name); !named {
			delete(f.cleared, name)
		}
	}
}

// keepForgetRecord reads the forget record name and keeps the signature
// objects it names (f.objs). It reports false, with one warning, when the
// record cannot be read or would take f past maxForgetObjects: the caller
// then starts the cache over for it.
func (ix *Index) keepForgetRecord(ctx context.Context, name string) bool {
	f := &ix.forgets
	rec, err := ix.readForgotten(ctx, name)
	if err != nil {
		ix.warnOnce("forgotten:"+name, fmt.Sprintf("%v; a collection forgot objects this handle cannot name, so it reads every signature again, once for this record", err))
		return false
	}
	var objs []string
	for _, o := range rec.Objects {
		if o.Kind == format.KindSig {
			// a copy: the parsed object is a piece of the record's
			// text (up to 16 MiB), which must not stay alive
			objs = append(objs, strings.Clone(o.Object))
		}
	}
	if f.n+len(objs) > maxForgetObjects {
		ix.warnOnce("forgotten:objects", fmt.Sprintf("the forget records name over %d objects, more than this handle keeps: it reads every signature again, once for each record past that", maxForgetObjects))
		return false
	}
	if f.objs == nil {
		f.objs = make(map[string][]string)
	}
	f.objs[name] = objs
	f.n += len(objs)
	return true
}

// clearFor reports whether one of names has not been cleared for yet, and
// notes them all as cleared for: the caller starts the cache over.
func (f *forgets) clearFor(names []string) bool {
	all := false
	for _, name := range names {
		if f.cleared[name] {
			continue
		}
		if f.cleared == nil {
			f.cleared = make(map[string]bool)
		}
		f.cleared[name] = true
		all = true
	}
	return all
}

// forgottenKeys returns the signature keys of the objects the records in
// fresh (read by this refresh) name: every key prev, v, this handle's own
// writes and the cache know.
func (ix *Index) forgottenKeys(prev, v *view, fresh map[string]bool) []string {
	set := make(map[string]bool, ix.forgets.n)
	var keys []string
	for name, objs := range ix.forgets.objs {
		if !fresh[name] {
			continue
		}
		for _, obj := range objs {
			if set[obj] {
				continue
			}
			set[obj] = true
			for _, w := range []*view{prev, v} {
				if w == nil || w.base == nil {
					continue
				}
				for _, src := range w.base.values(format.KindSig, obj) {
					keys = append(keys, format.Entry{Kind: format.KindSig, Object: obj, Value: src.val}.Key())
				}
			}
			for _, e := range ix.own.object(format.KindSig, obj) {
				keys = append(keys, e.Key())
			}
		}
	}
	if len(set) == 0 {
		return nil
	}
	ids := make(map[string]bool, len(set))
	for obj := range set {
		if id, err := hex.DecodeString(obj); err == nil {
			ids[string(id)] = true
		}
	}
	keys = append(keys, ix.sigs.keysOf(ids)...)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// readForgotten reads and parses one forget record.
func (ix *Index) readForgotten(ctx context.Context, name string) (format.ForgottenRecord, error) {
	data, err := ix.st.Get(ctx, name)
	if err != nil {
		return format.ForgottenRecord{}, fmt.Errorf("read forget record %q: %w", name, err)
	}
	return format.ParseForgottenRecord(name, data)
}

// keysOf lists the signature keys the cache knows (bytes held, a size
// remembered, a change noted, a read in flight) whose object id, decoded,
// is in ids. It walks the cache once.
func (c *sigCache) keysOf(ids map[string]bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	var buf [format.MaxObjectBytes]byte
	match := func(k string) {
		if kind, id, _, ok := format.SplitKey(k, &buf); ok && kind == format.KindSig && ids[string(id)] {
			keys = append(keys, k)
		}
	}
	for k := range c.m {
		match(k)
	}
	for k := range c.sizes {
		match(k)
	}
	for k := range c.changes.at {
		match(k)
	}
	for k := range c.reading {
		match(k)
	}
	return keys
}

// invalidateForgotten drops from the cache what the forget records v's
// retired record names tell: every signature of the objects of a record
// this refresh read is read again at its next read (sigCache.recheck: its
// bytes dropped, its size not answered, the mount told to look the name up
// again), and its version moves then if the bytes differ — not before: the
// key may still be there with the same bytes (the collection deletes it
// later), and a move now and another when the key goes made an open race
// two moves (ESTALE on a mount, the many-handles test). Every signature
// when one of the records is not known. A record read by an earlier
// refresh moves nothing: a refresh that lands while a collection forgets
// (after its first record, before it deleted the keys) may read the old
// bytes again, but the collection's closing record (fold/collect.go, step
// 6) is new to the refresh after it. Moving the versions again at every
// refresh of the record's hour would give the forgotten objects'
// signatures a new node at every refresh, and an open that races two
// moves is ESTALE on a mount.
func (ix *Index) invalidateForgotten(ctx context.Context, prev, v *view) {
	fresh, all := ix.forgotten(ctx, prev, v)
	if all {
		ix.noteForgotten(nil, true) // a watcher's too (viewdiff.go)
		ix.sigs.clearAll()
		return
	}
	if len(fresh) == 0 {
		return
	}
	keys := ix.forgottenKeys(prev, v, fresh)
	ix.noteForgotten(keys, false)
	for _, k := range keys {
		ix.sigs.recheck(k)
	}
}

// SigRecheck reports whether signature e's next read is to be compared
// with the last (sigCache.recheck): its size is not known until then, so a
// mount drops the name the kernel holds, and the kernel asks again.
func (ix *Index) SigRecheck(e format.Entry) bool {
	if e.Kind != format.KindSig {
		return false
	}
	c := ix.sigs
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.sizes[e.Key()]
	return ok && m.recheck
}
