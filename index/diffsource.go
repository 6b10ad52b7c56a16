package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// The sides oxyfs diff compares: an entry list by name, the journal's own
// set, or the store's current view; and what the newest complete fold
// changed (LastFold).

// Source names what one side of a diff is.
type Source struct {
	// List is an entry list's name (pack-<id>.entries or
	// pack-<id>.entries-part), live or retired while it exists; "" for
	// the other sources.
	List string
	// Journal is the journal's own set: the keys of all its lines, folded
	// lines included.
	Journal bool
	// Now is the store's current view: on a folded store every live list
	// ∪ every journal line (spec §13.7 "Reading"), else what listing the
	// per-object prefixes shows.
	Now bool
}

func (s Source) String() string {
	switch {
	case s.Journal:
		return "journal"
	case s.Now:
		return "now"
	}
	return s.List
}

// ErrBadSource is wrapped by ParseSource's errors.
var ErrBadSource = errors.New("not a diff source")

// ParseSource reads a side of a diff: "now", "journal", or an entry
// list's name (its store key, or the mount's .oxy/lists/<name>).
func ParseSource(arg string) (Source, error) {
	switch arg {
	case "now":
		return Source{Now: true}, nil
	case "journal", ".oxy/journal", format.JournalKey:
		return Source{Journal: true}, nil
	}
	name := strings.TrimPrefix(arg, ".oxy/lists/")
	if _, _, ok := format.ParseEntryListName(name); !ok {
		return Source{}, fmt.Errorf("%w: %q: want now, journal, pack-<id>.entries or pack-<id>.entries-part (<id>: 64 lowercase hex)", ErrBadSource, arg)
	}
	return Source{List: name}, nil
}

// OpenSource streams the keys of src in key order. sn is a snapshot of the
// store (store.ReadSnapshot; nil for a directory-layout store, which has
// only "now"): the journal's lines and the live lists come from it. A list
// is streamed from one GET (ListKeys); the journal's keys are sorted in
// memory (the journal is within its cap, format.MaxRecordBytes); "now"
// on a store that is not folded lists the per-object prefixes a page at a
// time (ListingKeys).
func OpenSource(ctx context.Context, st *store.Store, sn *store.Snapshot, src Source) (KeyStream, error) {
	switch {
	case src.List != "":
		if sn == nil {
			return nil, fmt.Errorf("%s: a directory-layout store has no entry lists", src)
		}
		return ListKeys(ctx, st, src.List), nil
	case src.Journal:
		if sn == nil {
			return nil, fmt.Errorf("journal: a directory-layout store has no journal")
		}
		return journalKeys(sn.Journal, func(format.JournalLine) bool { return true }), nil
	}
	if sn != nil && sn.Folded() {
		var in []KeyStream
		for _, l := range sn.LiveLists() {
			in = append(in, ListKeys(ctx, st, l.Name))
		}
		in = append(in, journalKeys(sn.Journal, func(format.JournalLine) bool { return true }))
		return UnionKeys(in...), nil
	}
	if sn != nil && !sn.Marker {
		for _, l := range format.LegacyLists() {
			items, _, err := st.ListPage(ctx, l.Prefix, "", nil, 1)
			if err != nil {
				return nil, fmt.Errorf("now: %w", err)
			}
			if len(items) > 0 {
				return nil, fmt.Errorf("now: the store holds older one-list keys (%s…) no fold has copied yet; `oxyfs fold` copies them into entries", l.Prefix)
			}
		}
	}
	return ListingKeys(ctx, st, nil), nil
}

// journalKeys streams the distinct keys of the journal lines keep keeps.
func journalKeys(lines []format.JournalLine, keep func(format.JournalLine) bool) KeyStream {
	keys := make([]string, 0, len(lines))
	for _, l := range lines {
		if keep(l) {
			keys = append(keys, l.Key)
		}
	}
	return SliceKeys(keys)
}

// LastFoldSides are the two sides of what the newest complete fold
// changed (LastFold).
type LastFoldSides struct {
	// Retired are the lists the fold retired (all retired at one time,
	// RetiredAt), and MarkedAt the folded-at of the journal lines it
	// marked (0 if none is still in the journal): together, what it read.
	Retired   []string
	RetiredAt int64
	MarkedAt  int64
	// Wrote is the complete list it relied on: the live complete list.
	Wrote string
}

// ErrNoFold is the error of LastFold on a store with no complete fold to
// show.
var ErrNoFold = errors.New("no complete fold to show")

// LastFold finds what the newest complete fold of sn's store read and
// wrote (spec §13.7 "Folding": a complete fold writes its list, retires
// every other live list it read in one update of the retired record, then
// marks the journal lines it read with a later time). The lists it retired
// are the retired record's lines of the newest time that name an entry
// list; the lines it marked, those folded at the first folded-at at or
// after that time; what it wrote, the live complete list. A fold that
// found the set unchanged writes and retires nothing: the one shown is
// the newest that retired a list (or, on a store whose only fold retired
// none, its marked lines against its list). A collection deletes the
// retired lists an hour after, and an update drops the marked lines an
// hour after: past that hour the sides are gone (OpenLastFold fails,
// naming the list).
func LastFold(sn *store.Snapshot) (LastFoldSides, error) {
	var sides LastFoldSides
	var complete []string
	for _, l := range sn.LiveLists() {
		if l.Complete {
			complete = append(complete, l.Name)
		}
	}
	switch len(complete) {
	case 0:
		return sides, fmt.Errorf("%w: the store has no live complete list (not folded)", ErrNoFold)
	case 1:
		sides.Wrote = complete[0]
	default:
		return sides, fmt.Errorf("%w: %d live complete lists (%s): folds ran at once; compare two of them with oxyfs diff STORE OLD NEW", ErrNoFold, len(complete), strings.Join(complete, ", "))
	}
	for _, r := range sn.Retired {
		if _, _, ok := format.ParseEntryListName(r.Key); ok && r.Key != sides.Wrote {
			sides.RetiredAt = max(sides.RetiredAt, r.RetiredAt)
		}
	}
	for _, r := range sn.Retired {
		if _, _, ok := format.ParseEntryListName(r.Key); ok && r.Key != sides.Wrote && r.RetiredAt == sides.RetiredAt && sides.RetiredAt != 0 && !slices.Contains(sides.Retired, r.Key) {
			sides.Retired = append(sides.Retired, r.Key)
		}
	}
	slices.Sort(sides.Retired)
	for _, l := range sn.Journal {
		if l.Folded() && l.FoldedAt >= sides.RetiredAt && (sides.MarkedAt == 0 || l.FoldedAt < sides.MarkedAt) {
			sides.MarkedAt = l.FoldedAt
		}
	}
	return sides, nil
}

// OpenLastFold streams the two sides of LastFold: what the fold read (the
// union of the lists it retired and the journal lines it marked) and
// what it wrote.
func OpenLastFold(ctx context.Context, st *store.Store, sn *store.Snapshot, sides LastFoldSides) (old, new KeyStream) {
	var in []KeyStream
	for _, name := range sides.Retired {
		in = append(in, ListKeys(ctx, st, name))
	}
	at := sides.MarkedAt
	in = append(in, journalKeys(sn.Journal, func(l format.JournalLine) bool { return at != 0 && l.FoldedAt == at }))
	return UnionKeys(in...), ListKeys(ctx, st, sides.Wrote)
}
