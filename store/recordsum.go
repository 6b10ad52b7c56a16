package store

import "hash/maphash"

// recordSeed seeds RecordSum: sums are compared only within this process.
var recordSeed = maphash.MakeSeed()

// RecordSum is a digest of a record's bytes (the journal, the retired
// record), for telling within one process whether two reads, or a read and
// a write, saw the same bytes: Snapshot.JournalSum, and the sums
// journal.Append reports of what its update read and wrote. It is not a
// version (equal bytes give equal sums, so a record that changed and
// changed back reads the same) and it is not stable across processes.
func RecordSum(data []byte) uint64 { return maphash.Bytes(recordSeed, data) }
