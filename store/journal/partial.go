package journal

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// PartialResult says what a partial fold did.
type PartialResult struct {
	List     string `json:"list"`     // the partial list, "" when no line was unfolded
	Entries  int    `json:"entries"`  // keys in it
	Bytes    int    `json:"bytes"`    // its compressed size
	Existed  bool   `json:"existed"`  // a list with the same content was there already
	Marked   int    `json:"marked"`   // journal lines marked folded
	Dropped  int    `json:"dropped"`  // folded lines past their hour the marking update dropped
	Tries    int    `json:"tries"`    // compare-and-swap attempts of the marking update
	Deferred string `json:"deferred"` // why nothing was marked, when the list is retired
}

// Partial folds the journal's unfolded lines into a partial list,
// pack-<id>.entries-part, and marks exactly those lines folded at the store's
// now (spec §13.7 "Folding": "A writer whose update leaves more than 1000
// unfolded lines folds them into a partial list and marks them"). Lines added
// while it runs stay unmarked. It reads the journal once; Append passes the
// journal it just wrote instead.
//
// The list is written create-only; one already there with the same name has
// the same keys. Should the retired record name it (the same keys were
// folded before and a complete fold has retired that list since), Partial
// marks nothing and says why in Deferred: a collection may delete that list
// within the hour, so the lines must stay unfolded.
func Partial(ctx context.Context, st *store.Store) (PartialResult, error) {
	if err := CheckLayout(st); err != nil {
		return PartialResult{}, fmt.Errorf("partial fold: %w", err)
	}
	data, _, err := st.ReadRecord(ctx, format.JournalKey)
	if err != nil {
		return PartialResult{}, fmt.Errorf("partial fold: %w", err)
	}
	lines, _ := format.ParseJournal(data)
	return partialFrom(ctx, st, lines)
}

// partialFrom folds the unfolded lines of the journal read as lines.
func partialFrom(ctx context.Context, st *store.Store, read []format.JournalLine) (PartialResult, error) {
	var res PartialResult
	keys := unfoldedKeys(read)
	if len(keys) == 0 {
		return res, nil
	}
	id, data, err := format.EncodeEntryListSorted(keys)
	if err != nil {
		return res, fmt.Errorf("partial fold: %w", err)
	}
	res.List, res.Entries, res.Bytes = format.EntryListName(id, false), len(keys), len(data)
	res.Existed, err = EnsureList(ctx, st, res.List, data)
	if errors.Is(err, ErrListRetired) {
		res.Deferred = fmt.Sprintf("%s is retired; its lines stay unfolded until a collection has deleted it", res.List)
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("partial fold: %w", err)
	}
	res.Marked, res.Dropped, res.Tries, err = Mark(ctx, st, read)
	if err != nil {
		return res, fmt.Errorf("partial fold into %s: %w", res.List, err)
	}
	return res, nil
}

// unfoldedKeys returns the keys of the unfolded lines, sorted and unique.
func unfoldedKeys(lines []format.JournalLine) []string {
	var keys []string
	for _, l := range lines {
		if !l.Folded() {
			keys = append(keys, l.Key)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// EnsureList makes sure the entry list name holds data, writing it
// create-only (spec §13.7 "Entry lists": written once). A list is named by
// the SHA-256 of its text, so finding it there already is as good as writing
// it (existed is then true), unless the retired record names it: then a
// collection may delete it within the hour, and EnsureList returns
// ErrListRetired. A list that vanished between the failed create and the
// look (a collection deleted it and dropped its retired line) is written
// again. Partial and a complete fold both write their lists through it.
func EnsureList(ctx context.Context, st *store.Store, name string, data []byte) (existed bool, err error) {
	for range store.MaxCASTries {
		err := st.PutIfAbsent(ctx, name, data)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return false, fmt.Errorf("write list %s: %w", name, err)
		}
		retired, err := isRetired(ctx, st, name)
		if err != nil {
			return true, fmt.Errorf("write list %s: %w", name, err)
		}
		if retired {
			return true, fmt.Errorf("write list %s: %w", name, ErrListRetired)
		}
		ok, err := st.Exists(ctx, name)
		if err != nil {
			return true, fmt.Errorf("write list %s: %w", name, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, fmt.Errorf("write list %s: %w", name, store.ErrTooManyTries)
}

// isRetired reads the retired record and reports whether it names key.
func isRetired(ctx context.Context, st *store.Store, key string) (bool, error) {
	data, _, err := st.ReadRecord(ctx, format.RetiredKey)
	if err != nil {
		return false, err
	}
	lines, _ := format.ParseRetired(data)
	for _, l := range lines {
		if l.Key == key {
			return true, nil
		}
	}
	return false, nil
}
