package fold

import (
	"context"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/journal"
)

// The journal's rules (append, partial fold) live in store/journal, below
// both fold and index. These names stay for callers not yet moved to it.

// AppendResult is journal.AppendResult.
//
// Deprecated: use journal.AppendResult.
type AppendResult = journal.AppendResult

// PartialResult is journal.PartialResult.
//
// Deprecated: use journal.PartialResult.
type PartialResult = journal.PartialResult

// Append is journal.Append.
//
// Deprecated: call journal.Append.
func Append(ctx context.Context, st *store.Store, keys []string) (AppendResult, error) {
	return journal.Append(ctx, st, keys)
}

// Partial is journal.Partial.
//
// Deprecated: call journal.Partial.
func Partial(ctx context.Context, st *store.Store) (PartialResult, error) {
	return journal.Partial(ctx, st)
}
