package fold

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// LegacyReport says what folding the older one-list keys did (spec §13.7
// "Older lists").
type LegacyReport struct {
	Skipped   bool     `json:"skipped"`   // the marker was there: they were folded before
	Lists     int      `json:"lists"`     // older one-list keys read
	Copied    int      `json:"copied"`    // per-object entries written from them (or that would be)
	Kept      int      `json:"kept"`      // entries already there, whose own bytes were kept
	Malformed []string `json:"malformed"` // keys under an older prefix that do not parse: left alone
	BadLines  []string `json:"bad_lines"` // lines of older lists that do not parse: not copied
	Marker    bool     `json:"marker"`    // this fold wrote pack-legacy-folded (or, in a dry run, would)
}

// legacyEntry is one per-object entry an older list holds.
type legacyEntry struct {
	key  string
	data []byte // a signature's bytes; nil for the other kinds
}

// foldLegacy copies every older one-list key's contents into per-object
// entries, create-only, so an entry already there keeps its own bytes, then
// writes the marker once (spec §13.7 "Older lists"). It runs before the
// entry prefixes are listed, so that listing finds what it copied. Any
// failed listing, read or write stops it before the marker is written; the
// next fold copies again (create-only makes that harmless).
//
// With dry set it writes nothing and returns the keys it would copy or keep,
// sorted; the caller tells the two apart by the listing.
//
// skip, if not nil, names entries not to copy: a collection's forgotten
// objects, whose older lists it deletes after the fold.
func foldLegacy(ctx context.Context, st *store.Store, dry bool, skip func(key string) bool, rep *LegacyReport, w *warner, prog *progress) ([]string, error) {
	type olderList struct {
		key    string
		kind   format.Kind
		object string
	}
	var lists []olderList
	for _, ll := range format.LegacyLists() {
		n, bad := len(lists), len(rep.Malformed)
		err := list(ctx, st, ll.Prefix, "", func() { lists, rep.Malformed = lists[:n], rep.Malformed[:bad] }, func(it store.ListItem) error {
			if it.IsDir {
				return nil
			}
			kind, object, ok := format.ParseLegacyKey(it.Key)
			if !ok || it.Irregular != "" {
				rep.Malformed = append(rep.Malformed, it.Shown())
				return nil
			}
			lists = append(lists, olderList{it.Key, kind, object})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("fold older lists: %w", err)
		}
	}
	rep.Lists = len(lists)
	for _, k := range rep.Malformed {
		w.warn("older list %q: not <prefix><hh>/<rest>; left alone", k)
	}

	entries := make([][]legacyEntry, len(lists))
	var mu sync.Mutex
	var read atomic.Int64
	err := forEach(ctx, len(lists), func(ctx context.Context, i int) error {
		l := lists[i]
		data, err := st.Get(ctx, l.key)
		if errors.Is(err, store.ErrNotFound) {
			w.warn("older list %s vanished while folding; nothing to copy", l.key)
			return nil
		}
		if err != nil {
			return fmt.Errorf("fold older list %s: %w", l.key, err)
		}
		es, bad := decodeLegacy(l.kind, l.object, data)
		entries[i] = es
		if bad.Count > 0 {
			mu.Lock()
			for _, b := range bad.Messages() {
				rep.BadLines = append(rep.BadLines, fmt.Sprintf("%s: %s", l.key, b))
				w.warn("older list %s: %s: not copied", l.key, b)
			}
			mu.Unlock()
		}
		prog.report(read.Add(1), int64(len(lists)), "legacy")
		return nil
	})
	if err != nil {
		return nil, err
	}
	var flat []legacyEntry
	for _, es := range entries {
		for _, e := range es {
			if skip == nil || !skip(e.key) {
				flat = append(flat, e)
			}
		}
	}
	if dry {
		keys := make([]string, len(flat))
		for i, e := range flat {
			keys[i] = e.key
		}
		rep.Marker = true // what the real fold writes once every copy landed
		return sortedUnique(keys), nil
	}

	var copied, kept atomic.Int64
	err = forEach(ctx, len(flat), func(ctx context.Context, i int) error {
		e := flat[i]
		err := st.PutIfAbsent(ctx, e.key, e.data)
		switch {
		case err == nil:
			copied.Add(1)
		case errors.Is(err, store.ErrConflict):
			kept.Add(1)
		default:
			return fmt.Errorf("copy older entry %s: %w", e.key, err)
		}
		return nil
	})
	rep.Copied, rep.Kept = int(copied.Load()), int(kept.Load())
	if err != nil {
		return nil, err
	}
	switch err := st.PutIfAbsent(ctx, format.LegacyFoldedMarker, nil); {
	case err == nil:
		rep.Marker = true
	case errors.Is(err, store.ErrConflict): // written by a fold running beside this one
	default:
		return nil, fmt.Errorf("write marker %s: %w", format.LegacyFoldedMarker, err)
	}
	return nil, nil
}

// decodeLegacy turns one older list into per-object entries. A signer listed
// twice keeps its last signature (a new signature by the same signer
// replaces the old one); a value listed twice is one entry.
func decodeLegacy(kind format.Kind, object string, data []byte) ([]legacyEntry, format.BadLines) {
	var out []legacyEntry
	at := map[string]int{}
	add := func(value string, sig []byte) {
		key := format.Entry{Kind: kind, Object: object, Value: value}.Key()
		if i, ok := at[key]; ok {
			out[i].data = sig
			return
		}
		at[key] = len(out)
		out = append(out, legacyEntry{key: key, data: sig})
	}
	if kind == format.KindSig {
		sigs, bad := format.ParseLegacySigs(data)
		for _, s := range sigs {
			add(s.Signer, s.Sig)
		}
		return out, bad
	}
	values, bad := format.ParseLegacyValues(data)
	for _, v := range values {
		add(v, nil)
	}
	return out, bad
}
