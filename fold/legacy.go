package fold

import (
	"context"
	"errors"
	"fmt"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
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
	l := &legacyFold{ctx: ctx, st: st, skip: skip, rep: rep, w: w, prog: prog}
	if err := l.listOlder(); err != nil {
		return nil, err
	}
	if err := l.readOlder(); err != nil {
		return nil, err
	}
	if dry {
		return l.planned(), nil
	}
	if err := l.copyEntries(); err != nil {
		return nil, err
	}
	return nil, l.writeMarker()
}

// olderList is one older one-list key, parsed.
type olderList struct {
	key    string
	kind   format.Kind
	object string
}

// legacyFold is foldLegacy as it goes, each field set by the step named.
type legacyFold struct {
	ctx   context.Context
	st    *store.Store
	skip  func(key string) bool
	rep   *LegacyReport // filled in as the steps go (readOlder's workers under mu)
	w     *warner
	prog  *progress
	lists []olderList   // listOlder: the older one-list keys
	flat  []legacyEntry // readOlder: the entries they hold, less skip's
	mu    sync.Mutex    // guards rep.BadLines while readOlder's workers run
}

// listOlder lists every older prefix: the older one-list keys, and the
// keys under them that do not parse (reported, left alone).
func (l *legacyFold) listOlder() error {
	rep := l.rep
	for _, ll := range format.LegacyLists() {
		n, bad := len(l.lists), len(rep.Malformed)
		err := list(l.ctx, l.st, ll.Prefix, "", func() { l.lists, rep.Malformed = l.lists[:n], rep.Malformed[:bad] }, func(it store.ListItem) error {
			if it.IsDir {
				return nil
			}
			kind, object, ok := format.ParseLegacyKey(it.Key)
			if !ok || it.Irregular != "" {
				rep.Malformed = append(rep.Malformed, it.Shown())
				return nil
			}
			l.lists = append(l.lists, olderList{it.Key, kind, object})
			return nil
		})
		if err != nil {
			return fmt.Errorf("fold older lists: %w", err)
		}
	}
	rep.Lists = len(l.lists)
	for _, k := range rep.Malformed {
		l.w.warn("older list %s: not <prefix><hh>/<rest>; left alone", termsafe.DoubleQuote(k))
	}
	return nil
}

// readOlder reads and decodes every older list (one that vanished holds
// nothing; its lines that do not parse are reported, not copied), and
// keeps the entries they hold but skip's, in the lists' order.
func (l *legacyFold) readOlder() error {
	entries := make([][]legacyEntry, len(l.lists))
	var read atomic.Int64
	err := forEach(l.ctx, len(l.lists), func(ctx context.Context, i int) error {
		ol := l.lists[i]
		data, err := l.st.Get(ctx, ol.key)
		if errors.Is(err, store.ErrNotFound) {
			l.w.warn("older list %s vanished while folding; nothing to copy", ol.key)
			return nil
		}
		if err != nil {
			return fmt.Errorf("fold older list %s: %w", ol.key, err)
		}
		es, bad := decodeLegacy(ol.kind, ol.object, data)
		entries[i] = es
		if bad.Count > 0 {
			l.mu.Lock()
			for _, b := range bad.Messages() {
				l.rep.BadLines = append(l.rep.BadLines, fmt.Sprintf("%s: %s", ol.key, b))
				l.w.warn("older list %s: %s: not copied", ol.key, b)
			}
			l.mu.Unlock()
		}
		l.prog.report(read.Add(1), int64(len(l.lists)), "legacy")
		return nil
	})
	if err != nil {
		return err
	}
	for _, es := range entries {
		for _, e := range es {
			if l.skip == nil || !l.skip(e.key) {
				l.flat = append(l.flat, e)
			}
		}
	}
	return nil
}

// planned is a dry run's end: the keys a fold would copy or keep, sorted,
// and the marker it would write once every copy landed.
func (l *legacyFold) planned() []string {
	keys := make([]string, len(l.flat))
	for i, e := range l.flat {
		keys[i] = e.key
	}
	l.rep.Marker = true
	return sortedUnique(keys)
}

// copyEntries writes every entry create-only: one already there keeps its
// own bytes (Kept).
func (l *legacyFold) copyEntries() error {
	var copied, kept atomic.Int64
	err := forEach(l.ctx, len(l.flat), func(ctx context.Context, i int) error {
		e := l.flat[i]
		err := l.st.PutIfAbsent(ctx, e.key, e.data)
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
	l.rep.Copied, l.rep.Kept = int(copied.Load()), int(kept.Load())
	return err
}

// writeMarker writes the marker once every copy landed; one a fold running
// beside this one wrote is as good.
func (l *legacyFold) writeMarker() error {
	switch err := l.st.PutIfAbsent(l.ctx, format.LegacyFoldedMarker, nil); {
	case err == nil:
		l.rep.Marker = true
	case errors.Is(err, store.ErrConflict): // written by a fold running beside this one
	default:
		return fmt.Errorf("write marker %s: %w", format.LegacyFoldedMarker, err)
	}
	return nil
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
