package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/internal/lib/par"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// legacyFetchParallel bounds the legacy lists a by-signer scan reads at once.
const legacyFetchParallel = 16

const sourcePrefixListing = "prefix listing"

// prefixCache answers lookups on a store that is not folded (or a
// directory) by listing per-object prefixes (spec §13.7 "Reading"), and,
// until the marker, by reading the older one-list keys. Every listing is
// done once per open: results are kept until the next refresh, and
// concurrent callers of the same listing share one.
//
// Listings are made when first asked for, so a directory may be listed
// before its parent and the parent after the store changed: a lookup of
// sig/aa/01/bob lists sig/aa/01/ (empty), another writer puts the key, and
// the first ReadDir of sig/aa lists sig/aa/ naming 01 — ReadDir of
// sig/aa/01 then answered "does not exist" from the older listing (the
// simulation's seed 44069). So when a directory's listing lands (settle),
// the listings of its subdirectories begun before it landed are dropped
// where they may contradict it: still running, empty where it names the
// subdirectory, or not empty where it does not. The next lookup lists the
// subdirectory again, after its parent: a listing never names a directory
// that reading then says is absent, unless the store removed it since.
// A subdirectory's listing that agrees is kept: no LIST more.
type prefixCache struct {
	ix        *Index       // read-only after newPrefixCache
	legacy    bool         // read-only after newPrefixCache
	malformed atomic.Int64 // atomic

	mu    sync.Mutex       // protects the following, and each call's waiters; a leaf: fn runs outside it
	calls map[string]*call // guarded by mu
	// kids holds, per directory's listing key whose listing has not
	// landed, the keys of its subdirectories' listings begun meanwhile:
	// what settle holds to it when it lands.
	kids map[string][]string // guarded by mu
}

type call struct {
	*sharedRead
	val    any   // set under prefixCache.mu before done is closed; read-only after
	err    error // as val
	landed bool  // guarded by prefixCache.mu: val is set, err nil
}

func newPrefixCache(ix *Index, legacy bool) *prefixCache {
	return &prefixCache{ix: ix, legacy: legacy, calls: make(map[string]*call), kids: make(map[string][]string)}
}

// Listing keys: "hh|<kind>" (the <hh> directories of a kind), "rest|<kind>/<hh>"
// (the objects under one), "obj|<kind>/<object>" (an object's entries) and
// "sigscan" (by-signer's).

// parentKey returns the key of the listing of the directory above key's
// ("" for none), and key's name in it.
func parentKey(key string) (parent, name string) {
	kindDir, ok := strings.CutPrefix(key, "rest|")
	if ok {
		kind, hh, _ := strings.Cut(kindDir, "/")
		return "hh|" + kind, hh
	}
	kindObj, ok := strings.CutPrefix(key, "obj|")
	if ok {
		kind, obj, _ := strings.Cut(kindObj, "/")
		if len(obj) > 2 {
			return "rest|" + kind + "/" + obj[:2], obj[2:]
		}
	}
	return "", ""
}

// nonEmpty reports whether a landed listing found anything.
func nonEmpty(val any) bool {
	switch v := val.(type) {
	case []string:
		return len(v) > 0
	case []entrySource:
		return len(v) > 0
	}
	return true
}

// settle holds the listings of a directory's subdirectories begun before
// its listing (key, names: sorted) landed to it, and drops those that may
// contradict it (see prefixCache). p.mu is held.
func (p *prefixCache) settle(key string, val any) {
	kids, ok := p.kids[key]
	if !ok {
		return
	}
	delete(p.kids, key)
	names, _ := val.([]string)
	for _, k := range kids {
		c, ok := p.calls[k]
		if !ok {
			continue
		}
		_, name := parentKey(k)
		if _, named := slices.BinarySearch(names, name); c.landed && named == nonEmpty(c.val) {
			continue
		}
		delete(p.calls, k)
	}
}

// do runs fn once per key for the life of the cache; an error is not kept,
// so the next caller tries again. Callers asking for a key while fn runs
// share it: fn runs on a shared read's context, not on the caller's (see sharedRead).
func (p *prefixCache) do(ctx context.Context, key string, fn func(ctx context.Context) (any, error)) (any, error) {
	p.mu.Lock()
	c, ok := p.calls[key]
	if !ok {
		c = &call{sharedRead: newSharedRead(ctx, p.ix.ra.ctx)}
		p.calls[key] = c
		if parent, _ := parentKey(key); parent != "" {
			if pc, ok := p.calls[parent]; !ok || !pc.landed {
				p.kids[parent] = append(p.kids[parent], key)
			}
		}
		go func() {
			val, err := fn(c.ctx)
			p.mu.Lock()
			c.val, c.err = val, err
			switch {
			case err != nil:
				if p.calls[key] == c {
					delete(p.calls, key)
				}
			default:
				c.landed = true
				p.settle(key, val)
			}
			p.mu.Unlock()
			c.finish()
		}()
	}
	c.waiters++
	p.mu.Unlock()
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		p.mu.Lock()
		if c.leave() && p.calls[key] == c {
			delete(p.calls, key)
		}
		p.mu.Unlock()
		return nil, ctx.Err()
	}
}

// peek returns what a finished call for key returned, without running it.
func (p *prefixCache) peek(key string) (any, bool) {
	p.mu.Lock()
	c, ok := p.calls[key]
	p.mu.Unlock()
	if !ok {
		return nil, false
	}
	select {
	case <-c.done:
		return c.val, c.err == nil
	default:
		return nil, false
	}
}

// report counts and warns about the malformed keys one listing met.
func (p *prefixCache) report(m malformed) {
	if m.n == 0 {
		return
	}
	p.malformed.Add(int64(m.n))
	p.ix.warnOnce("malformed:"+m.String(), m.String())
}

// names lists prefix with delimiter "/" and returns the sorted, valid child
// names: directories (common prefixes) when dirs, else keys.
func (p *prefixCache) names(ctx context.Context, prefix string, dirs bool, valid func(string) bool) ([]string, error) {
	var out []string
	mal := malformed{where: "the listing of " + prefix}
	err := p.ix.st.List(ctx, prefix, "/", func(it store.ListItem) error {
		name := strings.TrimSuffix(strings.TrimPrefix(it.Key, prefix), "/")
		if it.IsDir != dirs || it.Irregular != "" || !valid(name) {
			mal.addItem(it)
			return nil
		}
		out = append(out, name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.report(mal)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// addItem counts a listed item that is no entry: a malformed key, or (on
// file://) one that names a symbolic link or special file, never read.
func (m *malformed) addItem(it store.ListItem) {
	m.n++
	if m.n == 1 {
		if it.Irregular != "" {
			m.first = fmt.Sprintf("%q: a %s, not followed", termsafe.Value(it.Key), it.Irregular)
		} else {
			m.first = fmt.Sprintf("%q: not a valid entry path", termsafe.Value(it.Key))
		}
	}
}

// hhNames lists the <hh> directories of a kind: one listing of "<kind>/"
// with delimiter "/", and of the legacy prefix until the marker.
func (p *prefixCache) hhNames(ctx context.Context, kind format.Kind) ([]string, error) {
	v, err := p.do(ctx, "hh|"+kind.String(), func(ctx context.Context) (any, error) {
		isHH := func(s string) bool { _, ok := format.ParseHH(s); return ok }
		out, err := p.names(ctx, kind.Prefix(), true, isHH)
		if err != nil || !p.legacy {
			return out, err
		}
		old, err := p.names(ctx, format.LegacyLists()[kind].Prefix, true, isHH)
		return unionSorted(out, old), err
	})
	if err != nil {
		return nil, err
	}
	return v.([]string), nil
}

// restNames lists the object directories under <kind>/<hh>/.
func (p *prefixCache) restNames(ctx context.Context, kind format.Kind, hh string) ([]string, error) {
	v, err := p.do(ctx, "rest|"+kind.String()+"/"+hh, func(ctx context.Context) (any, error) {
		isRest := func(s string) bool { return format.ValidObjectID(hh + s) }
		out, err := p.names(ctx, kind.Prefix()+hh+"/", true, isRest)
		if err != nil || !p.legacy {
			return out, err
		}
		// Legacy lists are keys "<prefix><hh>/<rest>", not directories.
		old, err := p.names(ctx, format.LegacyLists()[kind].Prefix+hh+"/", false, isRest)
		return unionSorted(out, old), err
	})
	if err != nil {
		return nil, err
	}
	return v.([]string), nil
}

// objEntries lists an object's entries: one listing of its prefix and,
// until the marker, one GET of its legacy list. A per-object key wins over
// a legacy entry.
func (p *prefixCache) objEntries(ctx context.Context, kind format.Kind, obj string) ([]entrySource, error) {
	v, err := p.do(ctx, "obj|"+kind.String()+"/"+obj, func(ctx context.Context) (any, error) {
		prefix := kind.ObjectPrefix(obj)
		vals, err := p.names(ctx, prefix, false, format.ValidValue[string])
		if err != nil {
			return nil, err
		}
		out := make([]entrySource, len(vals))
		for i, val := range vals {
			out[i] = entrySource{val: val, source: sourcePrefixListing}
		}
		if !p.legacy {
			return out, nil
		}
		old, err := p.legacyEntries(ctx, kind, obj)
		if err != nil {
			return nil, err
		}
		for _, e := range old {
			i, found := slices.BinarySearchFunc(out, e.val, func(x entrySource, v string) int { return strings.Compare(x.val, v) })
			if !found {
				out = slices.Insert(out, i, e)
			}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]entrySource), nil
}

// legacyEntries reads one legacy list (one GET; absent means none).
func (p *prefixCache) legacyEntries(ctx context.Context, kind format.Kind, obj string) ([]entrySource, error) {
	key := format.LegacyKey(kind, obj)
	data, err := p.ix.st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read legacy list: %w", err)
	}
	src := "legacy " + key
	var out []entrySource
	var bad format.BadLines
	if kind == format.KindSig {
		var sigs []format.LegacySig
		sigs, bad = format.ParseLegacySigs(data)
		for _, s := range sigs {
			out = append(out, entrySource{val: s.Signer, source: src, sig: s.Sig})
		}
	} else {
		var vals []string
		vals, bad = format.ParseLegacyValues(data)
		for _, v := range vals {
			out = append(out, entrySource{val: strings.Clone(v), source: src})
		}
	}
	if bad.Count > 0 {
		p.report(malformed{where: key, n: bad.Count, first: bad.First[0].Error()})
	}
	// A signer listed twice: the last line wins, as a rewrite would have.
	slices.SortStableFunc(out, func(a, b entrySource) int { return strings.Compare(a.val, b.val) })
	for i := len(out) - 1; i > 0; i-- {
		if out[i].val == out[i-1].val {
			out = slices.Delete(out, i-1, i)
		}
	}
	return out, nil
}

// sigScan finds every signature, for by-signer: one listing of every page of
// "sig/" and, until the marker, of "sigs/" with one GET per legacy list. It
// is what by-signer costs on a store that is not folded; it is done once
// per open. The result maps each signer to the objects it signed, sorted.
func (p *prefixCache) sigScan(ctx context.Context) (map[string][]string, error) {
	v, err := p.do(ctx, "sigscan", func(ctx context.Context) (any, error) {
		by := map[string][]string{}
		mal := malformed{where: "the listing of sig/"}
		var objBuf [format.MaxObjectBytes]byte
		err := p.ix.st.List(ctx, format.KindSig.Prefix(), "", func(it store.ListItem) error {
			kind, ob, val, ok := format.SplitKey(it.Key, &objBuf)
			if !ok || kind != format.KindSig || it.Irregular != "" {
				mal.addItem(it)
				return nil
			}
			by[val] = append(by[val], hexString(ob))
			return nil
		})
		if err != nil {
			return nil, err
		}
		p.report(mal)
		if p.legacy {
			if err := p.legacySigScan(ctx, by); err != nil {
				return nil, err
			}
		}
		for s, objs := range by {
			slices.Sort(objs)
			by[s] = slices.Compact(objs)
		}
		return by, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(map[string][]string), nil
}

func (p *prefixCache) legacySigScan(ctx context.Context, by map[string][]string) error {
	var objs []string
	err := p.ix.st.List(ctx, format.LegacyLists()[format.KindSig].Prefix, "", func(it store.ListItem) error {
		if kind, obj, ok := format.ParseLegacyKey(it.Key); ok && kind == format.KindSig && it.Irregular == "" {
			objs = append(objs, obj)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	return par.ForEach(ctx, len(objs), legacyFetchParallel, func(ctx context.Context, i int) error {
		obj := objs[i]
		es, err := p.legacyEntries(ctx, format.KindSig, obj)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range es {
			by[e.val] = append(by[e.val], obj)
		}
		return nil
	})
}

// unionSorted merges two sorted, duplicate-free lists.
func unionSorted(a, b []string) []string {
	return unionBy(a, b, func(s string) string { return s })
}

// unionBy merges two lists sorted by key, each without duplicate keys; a
// wins on a tie.
func unionBy[T any](a, b []T, key func(T) string) []T {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]T, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && key(a[i]) < key(b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || key(b[j]) < key(a[i]):
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
