package index

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/oxyfs/oxyfs/store/format"
)

// Pages of by-signer/, for a reader that shows a store's signers a page at
// a time (`oxyfs serve`'s signers page): a store may hold millions of
// signatures, so a page holds at most Limit names, and on a folded store
// making one allocates no more than the page — the set's signer ids and
// signature entries are walked in place.

// Page asks for one page of a listing in name order: at most Limit names
// after After ("" from the first), or, when Before is set, the last Limit
// names before it.
type Page struct {
	After, Before string
	Limit         int // <= 0: DefaultPageLimit
}

// DefaultPageLimit is a Page's Limit when it sets none.
const DefaultPageLimit = 100

// PageInfo says whether names come before the first of a page (Prev) and
// after its last (Next).
type PageInfo struct {
	Prev, Next bool
}

// SignerCount is one signer of by-signer/ and how many signatures it made
// (objects it signed).
type SignerCount struct {
	Signer     string `json:"signer"`
	Signatures int    `json:"signatures"`
}

// Signers returns one page of by-signer/'s names with their counts. On a
// folded store it sends no request; in the prefix modes it lists "sig/"
// once per open, as ReadDir("by-signer") does.
func (ix *Index) Signers(ctx context.Context, p Page) ([]SignerCount, PageInfo, error) {
	v, err := ix.current(ctx)
	if err != nil {
		return nil, PageInfo{}, err
	}
	var own []string
	for _, e := range ix.own.withPrefix(format.KindSig, "") {
		own = append(own, e.Value)
	}
	slices.Sort(own)
	own = slices.Compact(own)
	var scan func() ([]string, error)
	if v.pc != nil {
		scan = func() ([]string, error) {
			by, err := v.pc.sigScan(ctx)
			listed := make([]string, 0, len(by))
			for s := range by {
				listed = append(listed, s)
			}
			slices.Sort(listed)
			return listed, err
		}
	}
	names, info, err := pageOf(p, func(n int) ([]string, bool) { return v.base.signerWindow(p, n) }, own, scan)
	if err != nil {
		return nil, PageInfo{}, err
	}
	out := make([]SignerCount, len(names))
	for i, s := range names {
		out[i].Signer = s
	}
	if v.pc != nil {
		for i, s := range names {
			objs, err := ix.signedBy(ctx, v, s)
			if err != nil {
				return nil, PageInfo{}, err
			}
			out[i].Signatures = len(objs)
		}
		return out, info, nil
	}
	counts := v.base.signerCounts(names)
	for _, e := range ix.own.withPrefix(format.KindSig, "") {
		if i, ok := slices.BinarySearch(names, e.Value); ok {
			if _, held := v.base.lookup(format.KindSig, e.Object, e.Value); !held {
				counts[i]++
			}
		}
	}
	for i := range out {
		out[i].Signatures = counts[i]
	}
	return out, info, nil
}

// SignedBy returns one page of by-signer/<signer>/: the objects (hex) the
// signer signed, in order. A signer with no signature has none (no error).
// On a folded store it sends no request.
func (ix *Index) SignedBy(ctx context.Context, signer string, p Page) ([]string, PageInfo, error) {
	v, err := ix.current(ctx)
	if err != nil {
		return nil, PageInfo{}, err
	}
	var own []string
	for _, e := range ix.own.withPrefix(format.KindSig, "") {
		if e.Value == signer {
			own = append(own, e.Object)
		}
	}
	var scan func() ([]string, error)
	if v.pc != nil {
		scan = func() ([]string, error) {
			by, err := v.pc.sigScan(ctx)
			return by[signer], err
		}
	}
	return pageOf(p, func(n int) ([]string, bool) { return v.base.signedByWindow(signer, p, n) }, own, scan)
}

// pageOf cuts page p of a listing from its sources, each sorted: the
// base set's window of n names (base; other says whether it has a name on
// the other side of the cursor), the handle's own writes (own), and in the
// prefix modes (scan not nil) the names the per-object listing of "sig/"
// shows.
func pageOf(p Page, base func(n int) (names []string, other bool), own []string, scan func() ([]string, error)) ([]string, PageInfo, error) {
	n := limitOf(p) + 1
	names, other := base(n)
	ownW, oother := sliceWindow(own, p, n)
	names, other = unionSorted(names, ownW), other || oother
	if scan != nil {
		listed, err := scan()
		if err != nil {
			return nil, PageInfo{}, err
		}
		w, o := sliceWindow(listed, p, n)
		names, other = unionSorted(w, names), other || o
	}
	names, info := cutPage(names, p, other)
	return names, info, nil
}

func limitOf(p Page) int {
	if p.Limit <= 0 {
		return DefaultPageLimit
	}
	return p.Limit
}

// cutPage cuts the union of the sources' windows (each up to Limit+1 names
// beyond the cursor) to the page; other says whether a source has a name
// on the other side of the cursor.
func cutPage(names []string, p Page, other bool) ([]string, PageInfo) {
	limit := limitOf(p)
	more := len(names) > limit
	if p.Before != "" {
		if more {
			names = names[len(names)-limit:]
		}
		return names, PageInfo{Prev: more, Next: other}
	}
	if more {
		names = names[:limit]
	}
	return names, PageInfo{Prev: other, Next: more}
}

// sliceWindow is a page's window of a sorted, duplicate-free slice: the
// first n names after p.After, or the last n before p.Before; other is
// whether a name lies on the other side of the cursor.
func sliceWindow(names []string, p Page, n int) (window []string, other bool) {
	if p.Before != "" {
		j, _ := slices.BinarySearch(names, p.Before)
		return names[max(0, j-n):j], j < len(names)
	}
	i := 0
	if p.After != "" {
		var found bool
		if i, found = slices.BinarySearch(names, p.After); found {
			i++
		}
	}
	return names[i:min(len(names), i+n)], i > 0
}

// signerWindow is sliceWindow of the set's signers, walked in place.
func (s *entrySet) signerWindow(p Page, n int) (window []string, other bool) {
	ids := s.signers
	add := func(out []string, id uint32) []string {
		if t := s.vt.str(id); len(out) == 0 || out[len(out)-1] != t {
			return append(out, t)
		}
		return out
	}
	var out []string
	if p.Before != "" {
		j := sort.Search(len(ids), func(i int) bool { return s.vt.cmp(ids[i], p.Before) >= 0 })
		for i := j - 1; i >= 0 && len(out) < n; i-- {
			out = add(out, ids[i])
		}
		slices.Reverse(out)
		return out, j < len(ids)
	}
	i := 0
	if p.After != "" {
		i = sort.Search(len(ids), func(i int) bool { return s.vt.cmp(ids[i], p.After) > 0 })
	}
	for j := i; j < len(ids) && len(out) < n; j++ {
		out = add(out, ids[j])
	}
	return out, i > 0
}

// signerCounts counts the signatures of each signer (sorted names): one
// scan of the signature entries comparing value ids.
func (s *entrySet) signerCounts(names []string) []int {
	counts := make([]int, len(names))
	idx := make(map[uint32]int)
	for i, name := range names {
		for _, id := range s.signerIDs(name) {
			idx[id] = i
		}
	}
	if len(idx) == 0 {
		return counts
	}
	for _, id := range s.kinds[format.KindSig].vals {
		if i, ok := idx[id]; ok {
			counts[i]++
		}
	}
	return counts
}

// signedByWindow is sliceWindow of the objects a signer signed, found by
// walking the signature entries from the cursor (no list of them is made).
func (s *entrySet) signedByWindow(signer string, p Page, n int) (window []string, other bool) {
	ids := s.signerIDs(signer)
	if len(ids) == 0 {
		return nil, false
	}
	k := &s.kinds[format.KindSig]
	signed := func(i int) bool {
		for j := k.first[i]; j < k.first[i+1]; j++ {
			if slices.Contains(ids, k.vals[j]) {
				return true
			}
		}
		return false
	}
	// first returns the index of the first object not below cursor (above
	// it when strict).
	first := func(cursor string, strict bool) int {
		var buf [format.MaxObjectBytes]byte
		packed, ok := format.DecodeObjectID(cursor, &buf)
		return sort.Search(k.nObj(), func(i int) bool {
			var c int
			if ok {
				c = bytes.Compare(k.obj(i), packed)
			} else {
				c = strings.Compare(hexString(k.obj(i)), cursor)
			}
			return c > 0 || !strict && c == 0
		})
	}
	var out []string
	if p.Before != "" {
		j := first(p.Before, false)
		for i := j - 1; i >= 0 && len(out) < n; i-- {
			if signed(i) {
				out = append(out, hexString(k.obj(i)))
			}
		}
		slices.Reverse(out)
		for i := j; i < k.nObj(); i++ {
			if signed(i) {
				return out, true
			}
		}
		return out, false
	}
	i := 0
	if p.After != "" {
		i = first(p.After, true)
	}
	for j := i; j < k.nObj() && len(out) < n; j++ {
		if signed(j) {
			out = append(out, hexString(k.obj(j)))
		}
	}
	for j := i - 1; j >= 0; j-- {
		if signed(j) {
			return out, true
		}
	}
	return out, false
}
