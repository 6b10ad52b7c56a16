package journal

import (
	"errors"

	"github.com/oxyfs/oxyfs/store"
)

// Errors of the journal's rules.
var (
	// ErrDirectoryLayout: a repository's own directory keeps no journal or
	// lists (spec §13.7 "Older writers"), so nothing there is appended or
	// folded.
	ErrDirectoryLayout = errors.New("a store with the directory layout keeps no journal or entry lists")
	// ErrPartialFold: Append's journal update landed, but the partial fold it
	// then ran failed. The lines are in the journal; the next update tries
	// the partial fold again. A caller may treat the append as done.
	ErrPartialFold = errors.New("journal lines added, but the partial fold failed")
	// ErrListRetired: the list a fold computed has a name the retired record
	// holds (the same set of keys was listed before, and a later fold retired
	// it). A collection may delete it within the hour, so the fold may not
	// rely on it: it retires and marks nothing, and says so.
	ErrListRetired = errors.New("list is retired")
)

// CheckLayout refuses a store that keeps no journal: ErrDirectoryLayout.
func CheckLayout(st *store.Store) error {
	if st.Layout() == store.LayoutDirectory {
		return ErrDirectoryLayout
	}
	return nil
}
