// Package format is every on-store format of oxyfs (spec §13.7, DESIGN §3):
// bytes in, values out. It never sends a request and imports nothing of
// oxyfs but a leaf helper (internal/lib/termsafe, which quotes a key or a
// line in an error message as every output of oxyfs quotes it: a control
// byte as \xHH); store reads and writes the bytes, and store, store/journal, index
// and fold call this package to make sense of them.
//
// # Model
//
// Keys of the layout (names.go): PackPrefix, JournalKey, RetiredKey,
// LegacyFoldedMarker, and the entry keys
//
//	sig/<hh>/<rest>/<signer>                 one signer's signature (Entry)
//	seal/ receipt/ approval/ cert/ accepted/ <hh>/<rest>/<value>, empty (Entry)
//	pack-entries                             the journal (JournalLine)
//	pack-retired                             the retired record (RetiredLine)
//	pack-<id>.entries, pack-<id>.entries-part complete and partial entry lists
//	pack-legacy-folded                       marker: the older lists are folded
//	sigs/ seals/ receipts/ approvals/ certs/ accepted-lists/  older one-list keys
//
// An entry key is read in one place, splitKey (keysplit.go), on a string or
// bytes and without allocating: ParseKey wraps it, SplitKey hands it to the
// index's build, and ParseHH, DecodeObjectID and ValidValue check one piece
// of a key by the same rules. No package but this one and store reads a
// key (testkit/grammarcheck fails the tests if one does). Key validation
// errors (ErrBadKey) say which rule of DESIGN §3 failed.
//
// The records (record.go) are read two ways: ParseJournal and ParseRetired
// return the lines that parse, for readers; ParseJournalRecord and
// ParseRetiredRecord return every line, one that does not parse kept
// verbatim in place, for updates, whose AppendText writes the record back
// (through AppendLine, the one writer of "<ms> <key>" lines) without losing
// a line it does not understand. Journal and Retired format lines. LineTime
// is the one parser of a line's time, and hours.go holds the hour rules
// (RetiredOverAnHourAgo, RetiredDueAt, JournalLineExpired), one function
// each. Parsers never fail a whole record for one bad line: they return
// the lines that parse and count the others (BadLines, each example a
// LineError, which is ErrCorrupt), so a caller can warn and keep the line
// when it rewrites the record. The older one-list keys are legacy.go's
// (LegacyLists, ParseLegacyKey, ParseLegacySigs, ParseLegacyValues).
//
// An entry list (entrylist.go) is a zstd stream of "oxy-entries 1\n" and
// sorted unique keys, named by its text's SHA-256: EncodeEntryList(Sorted)
// write one, DecodeEntryList (Sized, Hashed, From an io.Reader) stream its
// keys, VerifyEntryList checks it against its name. EntryListText
// (listtext.go, listseek.go) serves a list's text at any offset.
//
// # Caps against hostile contents
//
// A store is shared and what it holds may be hostile, so nothing it holds
// can make a reader allocate without bound. store refuses a GET over its
// cap (ReadCap, limits.go); this package bounds what it decodes:
//
//	one GET of an entry's own key (a signature)   MaxEntryBytes      64 MiB (the write cap)
//	one GET of the journal or the retired record  MaxRecordBytes    256 MiB
//	one GET of an entry list (compressed)         MaxEntryListBytes   1 GiB
//	one GET of any other key (older lists)        MaxOtherBytes     256 MiB
//	an entry list's text (decompressed)           MaxEntryListSize    4 GiB
//	an entry list's keys                          MaxEntryListKeys   32 Mi
//	the keys of all live lists of an open         MaxEntryListKeys   32 Mi (index)
//	live lists read, not yet decoded (compressed) MaxEntryListsInFlight 256 MiB (index)
//	an open list text's decoded window            ListTextWindow     8 × ListTextBlock (1 MiB)
//	the decoded windows of the process            ListTextPool       64 blocks (64 MiB)
//	an entry list's zstd window                   MaxEntryListWindow 128 MiB (2^27)
//	an entry list's line                          MaxEntryListLine    4 KiB
//	bad lines kept of a record or an older list   MaxBadLineSamples  10 (the rest counted)
//
// A frame that declares a size over MaxEntryListSize or a window over
// MaxEntryListWindow is refused from its header, before anything is
// decoded; one that declares nothing stops at the cap. The window cap is
// what the reference `zstd -d` accepts without --long or --memory, so lists
// written with `zstd --long=27` or `--ultra -22` are read.
//
// # Memory
//
// An entry list is never held decompressed: readers stream it through a
// pooled zstd decoder with no allocation per key (a decoder that served a
// window over 8 MiB is dropped, not pooled); EntryListText keeps a
// checkpoint per 1 MiB block and a bounded window, from one pool for the
// process (ListTextPool). A record's parsed lines share one copy of its
// text; a record of junk costs no memory per bad line.
//
// # Concurrency
//
// Every function is safe for concurrent use; values returned are the
// caller's. An EntryListText is safe for concurrent ReadAt (its mu); the
// text pool's lock and the checkpoint codec's once are leaves, under which
// nothing else is locked. The zstd encoder and decoder pools are
// sync.Pools.
package format
