// Package fold keeps the entry lists of a store in the bucket layout (spec
// §13.7): it folds the journal and a listing of the entry prefixes into
// complete lists, collects what folds replaced (`oxyfs gc`), and checks a
// store (`oxyfs check`). The journal's own rules (a writer's append, the
// partial fold past format.PartialFoldThreshold lines, writing a list
// create-only, marking the lines a fold read) are store/journal's, which
// both fold and index stand on.
//
// # Model
//
// The per-object keys (sig/<hh>/<rest>/<signer>, seal/…, receipt/…,
// approval/…, cert/…, accepted/…) are the truth: every writer writes them
// first. The journal pack-entries and the lists pack-<id>.entries(-part) are
// indexes derived from them, so that a reader of a bucket reads a few
// objects per open instead of sending a LIST per lookup. Nothing here keeps a
// tally of its own: every fold derives its list again from the journal and a
// listing of the entry prefixes (DESIGN §6).
//
//   - journal.Append (writers; the index's group commit) adds "0 <key>"
//     lines in one compare-and-swap update, which also drops folded lines
//     past their hour; past format.PartialFoldThreshold unfolded lines it
//     folds them (journal.Partial) into a partial list and marks them.
//   - Complete (oxyfs fold, and the end of every collection) copies the
//     older one-list keys into per-object entries once, lists every entry
//     prefix, writes the complete list of journal and listing, retires every
//     other live list and marks the lines it read.
//   - Collect (oxyfs gc) deletes what was retired over an hour ago, drops
//     folded lines past their hour, forgets deleted objects' entries, folds.
//   - Check (oxyfs check) reports what does not match the spec, and what a
//     write that failed left (checkdamage.go: a 0-byte signature key, a
//     journal cut or shorter than its partial lists prove, keys no list or
//     line names that readers of a folded store miss; checklegacy.go: an
//     older list beside the marker holding entries no per-object key does;
//     checkretired.go: retired keys gone already or due, forget records
//     that do not parse). Its steps run in order over one state (checking),
//     as a complete fold's do over folding.
//     Each finding is a Problem (problem.go): a stable code, the keys of
//     one cause (a count and the first MaxItems), what it means and the
//     command that fixes it; docs/operations.md lists every code.
//   - Complete with Options.DropMalformed (oxyfs fold --drop-malformed
//     FILE) first moves the lines of the journal and the retired record
//     that do not parse out of them (dropbad.go), each record in one
//     compare-and-swap update, the lines saved (SaveDropped) before each
//     write.
//
// One word, one place: "what happens to a journal line" is store/journal's
// (journal.Mark, its markRead), "what a retirement is" in lists.go (retire;
// writing a list create-only is journal.EnsureList), "when a retired list
// may be revived" in revive.go (revivable). The records are read and written through store's
// JournalRecord and RetiredRecord, which keep the lines a fold does not
// understand verbatim in place, and the hour rules are store's
// (format.JournalLineExpired, format.RetiredOverAnHourAgo), on the store's
// clock (st.Clock(): the Date of its answers, a file store's mtimes).
// Complete and Collect first check this host's clock against it
// (skew.go: checkClock): more than store.ClockMargin off, they refuse with
// store.ErrClockSkew naming the skew, and on a store that gives no time
// with store.ErrNoStoreClock; a dry run is not checked.
//
// # Which lines a fold marks
//
// Journal lines carry no identity, and a key can be in the journal many
// times (a signer who signs again writes the same key and adds a line).
// A fold marks exactly the lines it read that were unfolded and still are,
// found by order (journal.Mark): every update appends at the end, removes lines,
// or sets a folded-at from 0; none inserts or unfolds a line. So the lines
// read appear in the journal in the same order, before every line added since;
// lines added while the fold ran, duplicates of keys it read included, stay
// unfolded. Only if a line the fold read was removed while it ran (a
// collection forgot its object, or another fold marked it and its hour
// passed, both rare) may a later line of the same key be taken for it, and
// that is safe: a fold marks a line only if it read its key unfolded, so the
// key is in the list the fold wrote.
//
// # Journal keys with no object
//
// A journal line whose key the listing does not show should not happen (a
// writer writes the object first). A complete fold keeps such a key in its
// list, since the journal is what a writer claimed and a listing may lag,
// and reports it (Report.JournalOnly, Warn). It leaves the next complete list
// by itself once its line is folded and past its hour. Check reports it as a
// problem. Malformed keys under an entry prefix or in a live list, and
// journal or record lines that do not parse, are never dropped silently:
// folds leave them where they are (a journal line that does not parse is
// kept verbatim when the journal is rewritten) or out of their list (a key
// a list holds that is not an entry key is malformed, not gone: it is not
// looked up, since it may name no file) and report them; only
// --drop-malformed removes a record's bad lines, saving them first.
//
// # Concurrency
//
// Within one fold, collection or check, work runs in parallel only through
// internal/lib/par (forEach: up to 16 at once; the listing of every entry
// prefix: one lister per kind, listShards listings at once), under one
// error policy: the first error stops what has not started, what is in
// flight finishes (so every request sent has a known outcome before
// anything is written or deleted), and that first error, wrapped with the
// operation and key, is returned. The store caps the requests of all of
// them together (store.Options.MaxRequests).
//
// Every record (journal, retired record) changes only by compare-and-swap
// (store.UpdateRecord), recomputing its change from the record as it is at
// each try, so concurrent writers, partial folds and complete folds never
// lose each other's lines. Lists are written create-only and named by their
// content, so two folds that computed the same list agree. Any number of
// writers and folds may run at once on any number of hosts.
//
// Run one collection at a time per store, as oxy gc runs. Beside writers and
// folds a collection is safe: it deletes only keys retired over an hour ago,
// and drops a retired line only after deleting its key. A fold that finds
// its list name in the retired record (the same set of keys was folded
// before, and retired since: entries left the store) revives that list if
// it was retired within reviveWindow (50 minutes: no collection may delete
// it yet, whatever the clocks of other hosts), dropping its retired line in
// the same update that retires the lists read; past that window it defers
// (Report.Deferred) until a collection has deleted the old list, and if the
// lists read hold entries whose keys are gone it retires them anyway, so
// the store reads as not folded (exact, slower) rather than showing them
// (revive.go). That retirement is stamped after the newest folded-at of
// the journal lines the fold read, one past it when they fall in the
// clock's millisecond (lists.go retireStamp): a collection's cross-check
// takes lines folded after every retirement whose keys no live list holds
// for a list the pack listing hid, and lines folded in the same
// millisecond as the retirement that left no list holding them were read
// as such (seed 49010 of the byte simulation). Two collections at once could both plan to delete such a
// list, one before and one after a fold wrote it afresh; the store would
// then read as not folded until the next fold.
//
// # Locks
//
// A fold, a collection and a check hold no state between calls. Within one,
// the locks are leaves, each held for a few lines and never while a request
// is sent: the warner's and the progress reporter's (held while the
// caller's Warn or Progress runs, so that calls never overlap: those must
// not call back into the fold), and the local mutexes that gather what
// parallel workers found (guard.go, forget.go, crosscheck.go, legacy.go;
// legacy.go warns under its own, so it comes before the warner's).
// Counters shared by workers are atomics. The store's compare-and-swap
// lock (file://, mem://) is taken inside store.UpdateRecord, with none of
// these held.
//
// # Nothing found today is dropped while its key exists
//
// A complete fold's new set comes from a listing, and a listing can be
// wrong (a server that answers a short or empty page). Before it writes
// anything, a complete fold reads the live lists and looks up (HEAD) every
// entry they hold that the new set leaves out: normally their keys are gone
// (forgotten objects, journal keys past their hour); one that exists stops
// the fold with ErrIncompleteListing, having written, retired and marked
// nothing (guard.go). A collection passes the keys it deleted, which need
// no look-up.
//
// Snapshots read the retired record before the pack listing (readSnapshot):
// read side by side, the listing may still show a list a collection has
// deleted while the retired record no longer names it, and the deleted list
// would look live. A listing that fails because a key vanished under it (the
// file backend lists a directory, then looks at each file) starts again.
//
// # Answers that lie
//
// A server may answer a LIST with keys outside its prefix, a cut or empty
// page, a page that leaves keys out; a DELETE with success while it keeps the
// object; a GET or HEAD with 404 for a key that is there (issue 23). Nothing
// is deleted, and no record changed, on one answer's word (adr-0055 D6):
//
//   - A forget plans from two sources that must agree (forget.go): the
//     listing of the object's prefixes, each key the object's entry and
//     confirmed by a HEAD (a 404 for a key just listed stops it), and the
//     journal's and live lists' keys of the object (one the listing lacks
//     that a HEAD finds stops it).
//   - A collection cross-checks the pack listing with the retired record and
//     the journal before it plans (crosscheck.go), reading it again while a
//     contradiction may be a fold running beside it.
//   - Every DELETE is confirmed by a HEAD (deleteKeys); a key still there is
//     a failed deletion, and its retired line stays.
//   - A complete fold looks up the journal keys the listing lacks
//     (journalOnlyGone), as leftOut looks up the live lists' entries.
//   - Check looks up a key before it calls it missing (confirmMissing).
//
// # Crash safety
//
// Each step leaves every entry findable by a fresh reader, whatever happens
// after it:
//
//   - journal.Append: the objects are written before their lines; a crash
//     before the journal update leaves objects no line names, which the
//     next complete fold picks up (as an older writer's).
//   - journal.Partial and Complete: the list is written before any list is
//     retired, and retired before any line is marked; a line is marked only
//     when a live list holds its key, and dropped only an hour after it was
//     marked.
//     A crash before the marking leaves lines unfolded (folded again later);
//     before the retirement, two live lists (readers read both).
//   - The older lists: entries are copied create-only (an entry already there
//     keeps its bytes), and the marker is written only after every copy
//     landed; a crash before it means the next fold copies again.
//   - Collect's dry run plans its fold on the store the collection would
//     leave (journal lines past their hour and forgotten objects' lines
//     dropped, due keys deleted), so it reports what gc then does.
//   - Collect fails closed: it plans with reads only, and a failed listing,
//     read or the first compare-and-swap ends it before anything is deleted.
//     So do answers that contradict each other (see "Answers that lie").
//     It then drops journal lines (folded past their hour, or of forgotten
//     objects), deletes forgotten objects' keys, deletes keys retired over
//     an hour ago, and only then drops the retired lines of keys gone. A
//     crash in between leaves retired lines naming missing keys (dropped by
//     the next collection) or forgotten keys still there (forgotten again).
//
// # Memory
//
// A complete fold holds the set of keys it writes: each listed key once as a
// string (its bytes plus a 16-byte header), the union slice (16 bytes per
// key, sharing the bytes), the journal, and the compressed list. For a
// million keys of about 70 bytes that is about 110 MB at its peak, bounded by
// the set as DESIGN §7 asks. A partial fold holds only the unfolded lines.
// Check holds the listing (the per-object keys, as a fold does, with each
// key's modification time: 8 bytes) and a bit per listed key for what the
// live lists name; it streams each live list once
// (decode, id, keys, merge with the listing as they come), at most
// checkListsParallel (2) at a time, and never holds a list's text: a list
// costs its compressed bytes (format.MaxEntryListBytes at most) and a
// decoder's window. What it reports per list is capped (MaxItems examples,
// then a count), and so are a record's lines that do not parse
// (format.MaxBadLineSamples examples, then a count). A list that names keys
// that do not exist counts each in ListEntries once per list naming it.
// Folds keep a record's lines that do not parse verbatim when they rewrite
// it, with no error kept per line.
//
// # Errors
//
// Errors name the operation and the key ("retire [pack-….entries]: …",
// "copy older entry sig/ab/cd/alice: …") and wrap the store's sentinels
// (store.ErrConflict, store.ErrNotFound, store.ErrTooManyTries), and
// journal.ErrDirectoryLayout for a store that keeps no journal. Nothing
// here panics on bad input.
package fold
