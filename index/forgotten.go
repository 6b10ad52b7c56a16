package index

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/oxyfs/oxyfs/store/format"
)

// What a forget tells readers (format/forgotten.go).
//
// A collection that forgets objects first retires a forget record naming
// them. A refresh whose retired record names a forget record its previous
// view's did not reads it (one GET; forgets are rare) and takes every
// signature of the objects it names as changed: its cached bytes and size
// are dropped and its version moves, so the mount gives it a new node. That
// is what closes R1's last case (journalmarks.go): a key whose only line
// was the view's last unfolded one, forgotten and put again — the journal,
// the lists and every count then read as the view saw them.
//
// A record the refresh cannot read or parse (gone: the line landed before
// the record's PUT, or the PUT failed; a store that lies) says that a
// collection forgot something, not what: the refresh then trusts no cached
// signature (sigCache.clearAll), which costs reads, never bytes.
//
// A collection that does not write forget records (another implementation)
// still leaves that case unseen until the trust window ends.

// forgottenSince returns the signature keys the forget records new since
// prev name (of prev's set, v's, this handle's own writes and the cache),
// or all when one of them cannot be read. It reads nothing when prev is
// nil or either view has no records.
func (ix *Index) forgottenSince(ctx context.Context, prev, v *view) (keys []string, all bool) {
	if prev == nil || prev.rec == nil || v.rec == nil {
		return nil, false
	}
	seen := make(map[string]bool)
	for _, r := range prev.rec.Retired {
		if format.IsForgottenName(r.Key) {
			seen[r.Key] = true
		}
	}
	var objs []string
	for _, r := range v.rec.Retired {
		if !format.IsForgottenName(r.Key) || seen[r.Key] {
			continue
		}
		seen[r.Key] = true
		rec, err := ix.readForgotten(ctx, r.Key)
		if err != nil {
			ix.warnOnce("forgotten:"+r.Key, fmt.Sprintf("%v; a collection forgot objects this handle cannot name, so it reads every signature again", err))
			return nil, true
		}
		for _, o := range rec.Objects {
			if o.Kind == format.KindSig {
				objs = append(objs, o.Object)
			}
		}
	}
	if len(objs) == 0 {
		return nil, false
	}
	slices.Sort(objs)
	objs = slices.Compact(objs)
	for _, obj := range objs {
		for _, set := range []*entrySet{prev.base, v.base} {
			if set == nil {
				continue
			}
			for _, s := range set.values(format.KindSig, obj) {
				keys = append(keys, format.Entry{Kind: format.KindSig, Object: obj, Value: s.val}.Key())
			}
		}
		for _, e := range ix.own.object(format.KindSig, obj) {
			keys = append(keys, e.Key())
		}
		keys = append(keys, ix.sigs.keysUnder(format.KindSig.ObjectPrefix(obj))...)
	}
	slices.Sort(keys)
	return slices.Compact(keys), false
}

// readForgotten reads and parses one forget record.
func (ix *Index) readForgotten(ctx context.Context, name string) (format.ForgottenRecord, error) {
	data, err := ix.st.Get(ctx, name)
	if err != nil {
		return format.ForgottenRecord{}, fmt.Errorf("read forget record %q: %w", name, err)
	}
	return format.ParseForgottenRecord(name, data)
}

// keysUnder lists the keys under prefix the cache knows: bytes held, a
// size remembered, or a change noted.
func (c *sigCache) keysUnder(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for k := range c.m {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	for k := range c.sizes {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	for k := range c.changes.at {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	return keys
}
