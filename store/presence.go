package store

import (
	"context"
	"fmt"
	"github.com/oxyfs/oxyfs/store/format"
	"strings"
)

// Presence is what one LIST of a location's root says of it: whether it
// holds anything of an oxy store (Held), anything at all (Empty is false),
// and, for a message, a few of the names it holds.
//
// The root of a store holds at most a handful of names (a LIST with the
// delimiter "/" folds every per-object key into its kind's prefix): the
// pack- keys, the kinds' prefixes (sig/, seal/, …) and the older one-list
// prefixes (sigs/, seals/, …). A photo archive, /etc, an empty bucket or a
// prefix= typo holds none of them.
type Presence struct {
	Held  bool     // a pack- key or a kind's or older list's prefix is there
	Empty bool     // nothing at all is there
	Names []string // up to presenceShown of the names found, in key order
	// Unsure: the page was full and ended before the last name a store
	// may hold, so a store's names may be on a later page. Callers take
	// the location for a store (they never refuse one on a guess).
	Unsure bool
}

// presencePage is the page size of the one LIST Presence sends: a store's
// root holds a handful of names, but a location that is not a store may
// hold many that sort before them (/etc holds about 150), and a page of 100
// left such a root unsure, taken for a store. 1000 is the most S3 and GCS
// return in one page, so the one LIST costs the same and says all of a
// root of up to 1000 names.
const presencePage = 1000

// presenceShown is how many of a location's names Presence keeps.
const presenceShown = 3

// rootNames are the names at the root of an oxy store (spec §13.7): the
// kinds' prefixes and the older one-list prefixes. pack- keys are matched by
// PackPrefix.
var rootNames = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range format.Kinds {
		m[k.String()+"/"] = true
	}
	for _, l := range format.LegacyLists() {
		m[l.Prefix] = true
	}
	return m
}()

// lastRootName is the greatest of rootNames and PackPrefix in key order: a
// page that ends past it has shown every name a store may hold.
var lastRootName = func() string {
	last := format.PackPrefix
	for n := range rootNames {
		last = max(last, n)
	}
	return last
}()

// Presence lists the root of the location once (one LIST, counted) and
// reports whether it holds anything of an oxy store.
func (s *Store) Presence(ctx context.Context) (Presence, error) {
	items, next, err := s.ListPage(ctx, "", "/", nil, presencePage)
	if err != nil {
		return Presence{}, fmt.Errorf("look for a store at %s: %w", s.url, err)
	}
	p := Presence{Empty: len(items) == 0 && next == nil}
	for _, it := range items {
		if len(p.Names) < presenceShown {
			p.Names = append(p.Names, it.Key)
		}
		if strings.HasPrefix(it.Key, format.PackPrefix) || rootNames[it.Key] {
			p.Held = true
		}
	}
	if !p.Held && next != nil && (len(items) == 0 || items[len(items)-1].Key < lastRootName) {
		p.Unsure = true
	}
	return p, nil
}
