// Package journal keeps the rules of the journal, pack-entries (spec §13.7
// "The journal" and "Folding"), for everything that writes it: a writer's
// append (the index's group commit, `oxyfs put`, store/storegen) and a fold
// (package fold). It stands on store alone, below both index and fold, so
// that the reader does not import the maintainer.
//
//   - Append adds "0 <key>" lines in ONE compare-and-swap update of the
//     journal (store.UpdateRecord, retried up to store.MaxCASTries), which
//     also drops folded lines past their hour (format.JournalLineExpired).
//   - Past format.PartialFoldThreshold unfolded lines, Append then folds them
//     (Partial): it writes the unfolded keys as a partial list,
//     pack-<id>.entries-part, and marks exactly those lines.
//   - EnsureList writes an entry list create-only, and Mark marks the lines a
//     fold read: a complete fold (fold.Complete) writes and marks through
//     them, so every fold follows the same rules.
//
// # Which lines are marked
//
// Journal lines carry no identity, and a key can be in the journal many
// times (a signer who signs again adds the same key again). A fold marks
// exactly the lines it read that were unfolded and still are, found by
// order (markRead): every update appends at the end, removes lines, or sets
// a folded-at from 0; none inserts or unfolds a line. Lines added while a
// fold runs, duplicates of keys it read included, stay unfolded.
//
// # Lines that do not parse
//
// Append keeps every line it does not understand verbatim (another
// implementation, or a newer oxyfs, may have written it), reading only a
// line's folded-at field (format.LineTime), so an update of n lines costs a
// copy of n lines rather than n key parses; Mark rewrites the journal
// through format.JournalRecord, which keeps such lines in place too.
//
// # Locks
//
// None: the package holds no state. Every change of the journal is one
// compare-and-swap update recomputed from the record as it is at each try,
// so any number of writers and folds, on any number of hosts, never lose
// each other's lines.
//
// # Errors
//
// Errors name the operation and the key ("append 3 keys to journal: …",
// "write list pack-….entries-part: …") and wrap the store's sentinels.
// Append returns ErrPartialFold when its lines landed but the partial fold
// after them failed; ErrDirectoryLayout for a store that keeps no journal;
// EnsureList returns ErrListRetired for a list the retired record names.
package journal
