package index

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store/format"
)

// Entries listed but missing.
//
// A journal line or a live list may name a signature whose key is gone: a
// store damaged by hand, a collection that forgot an object a line still
// names, a list copied from another store. Its entry is in the view (ReadDir
// and Stat show it) but the GET of its bytes finds nothing. Such a read
// fails with an error wrapping ErrListedMissing and fs.ErrNotExist (the
// mount answers ENOENT, serve 404), and the first one of each key is
// reported once (a warning naming the key, what names it and how it heals)
// and counted (Status.ListedMissing). Nothing is remembered in place of the
// bytes: the next read of the key GETs it again, so a signature put again
// reads at once.

// ErrListedMissing is the error of a read of a signature the view lists
// (a journal line, a live list, a prefix listing or an own write names it)
// whose key the store does not have. It comes with fs.ErrNotExist.
var ErrListedMissing = errors.New("listed but missing from the store")

// maxMissingNamed bounds the keys listed but missing that are named one by
// one (a warning each) and counted; past it one warning says there are
// more.
const maxMissingNamed = 1 << 10

// missingKeys remembers the keys found listed but missing, to report each
// once.
type missingKeys struct {
	mu    sync.Mutex          // protects keys; a leaf
	keys  map[string]struct{} // guarded by mu: the keys reported, at most maxMissingNamed
	count atomic.Int64        // atomic: distinct keys found (Status.ListedMissing)
}

// listedMissing reports whether view v lists signature e (whose GET found
// no key) and what names it; the first time for each key it warns and
// counts it. It sends no request: a folded view answers from memory; in
// the prefix modes the entry was found by a listing (or is an own write).
func (ix *Index) listedMissing(v *view, e format.Entry) (source string, ok bool) {
	switch {
	case ix.own.has(e):
		source = sourceOwnWrite
	case v == nil:
		return "", false
	case v.pc == nil:
		if source, ok = v.base.lookup(e.Kind, e.Object, e.Value); !ok {
			return "", false
		}
	default:
		source = "prefix listing"
	}
	key := e.Key()
	m := &ix.missing
	m.mu.Lock()
	if m.keys == nil {
		m.keys = map[string]struct{}{}
	}
	_, seen := m.keys[key]
	full := len(m.keys) >= maxMissingNamed
	if !seen && !full {
		m.keys[key] = struct{}{}
	}
	m.mu.Unlock()
	switch {
	case seen:
	case full:
		ix.warnOnce("missing:more", fmt.Sprintf("more than %d signatures are listed but missing from the store; no more are named (oxyfs check lists them)", maxMissingNamed))
	default:
		m.count.Add(1)
		ix.warn(fmt.Sprintf("signature %q is listed but missing from the store: %s names it, its key is gone; reads of it fail with \"no such file\" (ENOENT, 404). It heals when nothing names it any more — a journal line leaves after its hour and a collection (oxyfs gc), a list when a fold writes one without it (oxyfs check names what to run) — or at once when the signature is put again", termsafe.Value(key), source))
	}
	return source, true
}
