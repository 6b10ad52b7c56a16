package index

import (
	"context"
	"slices"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// Listing streams the entry keys the per-object prefixes hold, kind by
// kind in key order, one LIST page at a time (store.ListPage): a page is
// all it holds. A key under an entry prefix that is not an entry key
// (format.ParseKey refuses it: an S3 console "folder", a stray file, an
// irregular file of a file store) is skipped and counted (Malformed).
type Listing struct {
	ctx      context.Context
	st       *store.Store
	prefixes []string
	page     []store.ListItem
	i        int
	token    []byte
	started  bool // the current prefix's first page was asked for
	item     store.ListItem
	buf      []byte
	err      error
	bad      int
	firstBad string
}

// ListingKeys lists the per-object prefixes of kinds (all if none).
func ListingKeys(ctx context.Context, st *store.Store, kinds []format.Kind) *Listing {
	l := &Listing{ctx: ctx, st: st}
	for _, k := range format.Kinds {
		if len(kinds) == 0 || slices.Contains(kinds, k) {
			l.prefixes = append(l.prefixes, k.Prefix())
		}
	}
	slices.Sort(l.prefixes)
	return l
}

// Next returns the next entry key.
func (l *Listing) Next() ([]byte, bool) {
	for l.err == nil {
		if l.i < len(l.page) {
			it := l.page[l.i]
			l.i++
			if it.IsDir {
				continue
			}
			if _, err := format.ParseKey(it.Key); err != nil || it.Irregular != "" {
				if l.bad == 0 {
					l.firstBad = it.Shown()
				}
				l.bad++
				continue
			}
			l.item = it
			l.buf = append(l.buf[:0], it.Key...)
			return l.buf, true
		}
		if len(l.prefixes) == 0 {
			return nil, false
		}
		if l.started && l.token == nil {
			l.prefixes, l.started = l.prefixes[1:], false
			continue
		}
		l.page, l.token, l.err = l.st.ListPage(l.ctx, l.prefixes[0], "", l.token, 0)
		l.i, l.started = 0, true
	}
	return nil, false
}

// Item is the listing's item of the key Next returned last: its size and
// the key's own time (ModTime), as the listing gave them.
func (l *Listing) Item() store.ListItem { return l.item }

// Malformed counts the keys skipped, and names the first.
func (l *Listing) Malformed() (n int, first string) { return l.bad, l.firstBad }

// Err is the listing's error, if one ended it.
func (l *Listing) Err() error { return l.err }

// Close ends the listing.
func (l *Listing) Close() { l.prefixes, l.page = nil, nil }
