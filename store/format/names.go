package format

import "time"

// Keys and prefixes of the store layout (spec §13.7, §13.4).
const (
	// PackPrefix is the prefix of every key the pack listing of an open finds,
	// entry lists included.
	PackPrefix = "pack-"
	// JournalKey is the journal of entries written since the last fold.
	JournalKey = "pack-entries"
	// RetiredKey is the retired record: what repacks and folds replaced.
	RetiredKey = "pack-retired"
	// LegacyFoldedMarker is written once a complete fold has folded the older one-list keys.
	LegacyFoldedMarker = "pack-legacy-folded"
)

// Named constants of the spec's rules.
const (
	// PartialFoldThreshold: a writer whose update leaves more than this many
	// unfolded journal lines folds them into a partial list.
	PartialFoldThreshold = 1000
	// GracePeriod is how long retired keys and folded journal lines are kept for readers.
	GracePeriod = time.Hour
)
