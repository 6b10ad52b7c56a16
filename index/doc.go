// Package index is an open handle on the signatures and index entries of an
// oxy store: the reading rules of spec §13.7, the tree of DESIGN §4, own
// writes with a group-committed journal, a signature byte cache, and a
// read-only io/fs view of the same tree.
//
// # Model
//
// An Index reads nothing until its first lookup (or Load). What it reads
// then depends on the store (spec §13.7 "Reading"):
//
//   - A bucket whose live lists (listed by the pack- listing and not
//     retired) include a complete one is folded. The open is one snapshot
//     (store.ReadSnapshot: 1 LIST page of pack-, 1 GET of the journal, 1 GET
//     of the retired record, in parallel) and one GET per live list, in
//     parallel. The set is every live list ∪ every journal line, folded lines
//     included. Every ReadDir, Stat and by-signer lookup is then answered
//     from memory: no LIST, ever. Neither the per-object prefixes nor the
//     older one-list keys (sigs/ ...) are read, and retired lists are not
//     read even while still listed. Mode "folded".
//   - A bucket that is not folded: the open is the snapshot alone; lookups
//     list the per-object prefix (ReadDir "sig" = LIST "sig/" with delimiter
//     "/", an object directory or a Stat of an entry = LIST of the object's
//     prefix), merged, until the marker pack-legacy-folded is listed,
//     with the older one-list keys (one GET of
//     sigs/ab/<rest> per object read, listings of sigs/ for directories). A
//     per-object key wins over a legacy line; legacy signatures' bytes come
//     from the legacy list. Each listing is done once per open (concurrent
//     callers share it) and dropped by Refresh, but for one begun before
//     its parent directory's landed that may contradict it (still running,
//     empty where the parent names it, or not where it does not): dropped
//     then and listed again when next asked (prefix.go settle), so a
//     listing never names a directory that reading says is absent (unless
//     the store removed it since). by-signer needs every
//     signature: one listing of all of "sig/" (and of "sigs/" with one GET
//     per legacy list), once per open. Mode "prefix-listing".
//   - A directory (a repository's own .oxy/objects): no journal, no lists;
//     the open is one HEAD of the marker; lookups list prefixes as above, at
//     the cost of a directory read. Mode "directory".
//
// A live list that cannot be read or decoded (corrupt zstd, bad header, keys
// out of order, a failed GET) is reported once and the open falls back to
// prefix listing: never a wrong answer, never a lost entry. A live list
// whose GET finds nothing (deleted by a collection after the LIST) makes the
// open read the snapshot once more before it falls back. A malformed key in
// a list, the journal or a listing is skipped, counted (Status.Malformed)
// and reported in one warning per source with the count and the first
// example.
//
// The journal's lines are not entries of an unfolded view: every journaled
// key was written before its line, so the listing shows it, and a line whose
// key is gone (a forgotten object) would show an entry that cannot be read.
//
// Refresh costs no LIST when nothing changed. It re-reads the journal and
// the retired record with one conditional GET each
// (store.ReadSnapshotSince); on a folded store with both unchanged since a
// look less than trustWindow (50 min) ago — measured on the store's clock,
// not this host's (storeclock.go: none while the store gives no time or
// this host's clock is over store.ClockMargin off it) — it is done (2 GETs, view and
// generation kept; docs/design.md §8 argues why that is safe, why only within
// the hour — unchanged bytes can hide a change that came and went — and
// names the one case it is not: two first folds at once; forgotten.go then
// still has the signatures of the objects a forget record names read again,
// once, at the refresh that first meets the record — or the whole cache
// start over, once, for a record it cannot read — with no request once
// each record was met). A refresh shows
// exactly what a fresh open would: the journal's part of the set (entries
// no list holds) is recomputed from the journal as it is (journalpart.go),
// and own writes that landed before it began leave the overlay. When
// one changed it lists pack- and reads only the lists it does not hold: the
// same live names keep the lists' part of the set and recompute the
// journal's; the same
// names plus partial lists read just those; a held list retired builds the
// set afresh from the live lists (after a complete fold, only its new list).
// A view keeps no journal line, only marks on the set of which entries have
// one (journalmarks.go); a refresh that finds the journal unchanged but the
// lists changed takes the journal's entries from those marks, exactly what
// reading the journal again would give, for no request more.
// In the prefix modes a refresh always lists pack- and drops the listings.
// Generation bumps when a refresh changed what the tree shows (always in the
// prefix modes) and on every own write. Status.LastRefresh says what the
// last refresh sent. A refresh that gets 404 for the journal or the retired
// record after the handle read it fails with ErrRecordVanished, logged
// once, and the view stays as it was: nothing deletes either record, so the
// answer is a lie or a stale read (refresh.go).
//
// JournalText and RetiredText return the records as the view read them (a
// mount's .oxy/journal and .oxy/retired: what its tree shows, at no
// request), but a journal longer than Options.KeepJournalText, which the
// view does not keep: JournalText reads it (one GET). ListTextSize returns the length of a live list's text (its
// .oxy/lists/<name>): a folded open counts it while decoding the list; in
// the prefix modes the first call reads and decodes the list once. ReadList
// reads a list for serving its text.
//
// # Paths
//
// The tree's paths are read in path.go and nowhere else: ParsePath, and
// Path.Child one level at a time, say what a path names (its Level, kind,
// object, value or signer) and whether a name may stand there; Path.Make
// says what mkdir and create may make in a directory; PathIno and ChildIno
// number the nodes (FNV-64a of the path, never 0 or 1). The mount, the web
// view and the CLI take these; keys inside paths are read by format.SplitKey.
//
// # Read-ahead
//
// ReadSig, SigStat and OpenSig of a signature schedule the signatures after it in key
// order (the object's other signers, then the following objects'), fetched
// in parallel into the signature cache (sizes remembered): a window of 8
// that doubles while reads follow each other, up to Options.ReadAhead
// (DefaultReadAhead or four times the most GETs in flight, whichever is
// more; negative: off) and never past a quarter of what the cache holds. The GETs in flight are adapted from their round trips
// (readahead.go congestionWindow, a delay-based window as TCP Vegas/BBR): from 4, one more per
// GET that did not queue (≤ 1.5 × the shortest round trip seen) while keys
// wait, a quarter fewer per round trip when GETs queue (> 3 ×), half on a
// failure, up to Options.ReadAheadWorkers (0: the store's cap on requests
// in flight, store.Options.MaxRequests or `--max-requests`, but an eighth
// left to readers and the rest: 224 of the default 256; never past the
// store's cap; Status.ReadAhead reports the cap, the limit and the peak),
// with a probe at the floor every 2048 GETs to re-learn the unqueued round
// trip. Far from the server the depth grows until the wire is no longer
// the bound, or to that cap; next to it, a handful. Each worker sends a
// batch: as many keys as the store pipelines on one connection
// (store.Pipeline's depth, store.GetAdmittedBatch; 1 where it does not),
// and the window then counts workers, each a batch in flight, learning
// from each batch's first answer, with the GETs in flight still within
// the cap (prefetchBatch registers a batch's keys as read, so readers
// wait on its GETs rather than send their own). ReadDir and
// Stat do not trigger it, but listings do when stats follow them
// (statprefetch.go): SigsListed, told by the mount of a listing of
// sig/<hh>/<rest>/, schedules that directory's signatures and the window
// after them when a signature was stated (Stat) since the previous such
// listing, else at the first Stat of one of them; a walk that stats no
// signature (find -type f, ls -R) sends nothing; StatHeld (the mount's
// check of held names after a refresh) is not a stat. Readers and read-ahead share one GET per key; a
// key the reader overtook is not fetched; Close cancels what is in flight.
//
// # Shared reads
//
// Callers that ask for the same signature (ReadSig, SigStat, OpenSig) or the same
// prefix listing while it is being read share one request (a sharedRead,
// sharedread.go; a signature's is sigread.go's fetch). It runs on a context of its own, detached from every caller's
// (context.WithoutCancel; the store's per-request timeout still bounds
// each attempt), so one caller that goes away — an HTTP client of `oxyfs
// serve` that disconnects — does not fail the others: each waiter returns
// when the read ends or when its own context is done. The read is canceled
// when every waiter has gone, or when the index closes. A signature's
// read that a refresh, a recheck or this handle's own write made stale
// is shared no more (sigCache.staleLocked): its result is not kept and a
// caller that asks after sends a GET of its own, never taking the bytes
// the change made old. A signature over
// format.MaxEntryBytes is refused by the store (store.ErrTooLarge) before its
// body is read.
// A sequential cat of every signature sends exactly one GET each. In the
// prefix modes the window is what memory holds; read-ahead never lists.
//
// The io/fs view (FS) reads on context.Background; FSContext(ctx) is the
// same view reading on ctx, every lookup, size and read of a file opened
// from it: once ctx is done they fail with its error and start no request.
// A server makes one per request (serve's WebDAV), so a client that leaves
// stops the reads it asked for.
// # Versions and open readers
//
// A signature's version (SigVersion) is the identity of its bytes as this
// handle knows them: it moves when a refresh shows a new journal line for
// it (journalView.replaced: a line more, an unfolded line more, or more
// lines unfolded or folded after the previous view's newest fold than it
// had unfolded — a re-sign whose old folded line left as its new one came,
// folded since, has one folded line before and after), or a line after a
// line of the previous view gone (journalView.gone: a collection forgot an
// object, and its signature may have been put again with as many lines),
// on an own write, and when a read finds other bytes than the last read
// of the key (size or a maphash digest, computed on every GET). Every
// signature's moves at once, and the cache starts over, on a refresh whose
// last look at the records is not within its window (lookTrusted: older
// than trustWindow, of unknown time, or on a host whose clock is off the
// store's): a line
// that came and went meanwhile leaves no trace (journalmarks.go "What
// counting cannot tell"). A folded view drops the cached signatures it no
// longer holds after a refresh that may have seen a collection (a line
// gone, a list retired): their versions move, and a read finds the key
// gone as a fresh reader does. SigChangedAt is when it last
// moved; Subscribe hands each move to the subscribers (the mount, which
// tells the kernel) from a goroutine of its own (subscribe.go); the
// versions are kept in sigstate.go.
//
// SigState is all of it at one moment, with no request, under one lock: the
// version, when it began, and — when the bytes were read or written since —
// their size, their key's time and their identity (size and digest). A
// mount takes it once per kernel request — LOOKUP, GETATTR, OPEN — and once
// more only after a read the request had to make (a GETATTR that learnt
// the size, an OPEN whose bytes are of another version than its first
// look) (fs: entry.go, look; a LOOKUP's and a GETATTR's is StatSig, the
// name's node with its state, its size the state's, in one holding of the
// lock), where asking SigVersion, SigIdentity,
// SigChangedAt and the size one by one could pair one version with
// another's size or time.
//
// # Signatures, file by file
//
// One type, sigCache, and one lock, sigCache.mu, hold the state of the
// signatures, a file per concern:
//
//   - sigcache.go: the LRU of bytes bounded by Options.SigCacheBytes, and
//     the sizes, digests and times of the signatures read (sigMeta);
//   - sigread.go: the read, in the order a cold read takes it: ReadSig,
//     OpenSig's read and SigStat share one private read (readSig: the
//     cache, a legacy list, or fetch: one GET shared by every caller of the
//     key, a sigSharedRead in sigCache.reading, whose land caches the
//     bytes unless a change made them stale while it ran);
//   - sharedread.go: the shared read's generic part (sharedRead: its
//     detached context and waiters, which the prefix cache's listings use
//     too), staleLocked, and prefetch, read-ahead's way into the cache;
//   - sigstate.go: the versions (sigChanges), SigState, SigVersion,
//     SigChangedAt, SigIdentity; subscribe.go: the subscribers told of changes;
//   - siginvalidate.go: what a refresh, a forget record or a collection
//     drops (invalidate, recheck, clearAll, invalidateRefresh, dropAbsent);
//   - sigopen.go: the readers' copies and their budget (sigReaders, sigBuf,
//     SigHandle).
//
// Read-ahead (readahead.go) is outside that lock: its queue under
// readAhead.mu, and how many of its GETs may be in flight under its
// congestion window's (congestionWindow, the same file); its GETs go
// through the shared reads (sigCache.prefetch), so a reader and read-ahead
// never GET one key twice at once.
//
// # Refresh, and who hears of it
//
// Load and Refresh are one sequence (refresh.go; docs/design.md §8 "The
// refresh sequence"): read the records, build the view, invalidate what it
// makes old, publish it. Whoever keeps something of the index subscribes
// (Subscribe) and hears each signature whose version moved (ChangeSig,
// ChangeAllSigs) and each view published (ChangePublished); nobody wires a
// refresh to a cache by hand. The order they may rely on:
//
//   - the invalidation comes before the publish: a lookup that sees the
//     new view never finds a cached signature it made old; what a
//     collection forgot (dropAbsent) and the own writes the view holds
//     (overlay prune) leave after it, so no lookup misses an entry and
//     no read that starts after the swap caches a forgotten one again;
//   - the subscribers hear a refresh's signature moves, then its
//     ChangePublished, from one goroutine, never under a lock of the
//     index, after the view is stored: what they look up is the new view
//     (or a later one);
//   - Refresh returns only once the subscribers returned from its
//     ChangePublished (waiting outside loadMu; or its context is done, or
//     the index closed), so a caller that refreshes one at a time (oxyfs's
//     refresh loop) has each refresh told before the next begins and
//     before it logs "refreshed". A subscriber therefore must not call
//     Refresh. Load does not wait: it runs inside a lookup, which may be
//     a FUSE request a mount's kernel notice waits for;
//   - a failed Refresh publishes nothing and tells nothing.
//
// A watcher of the store (oxyfs watch) holds views instead (Mark: a view
// is immutable, so a quiet refresh gives the same one back), compares two
// with key streams (ViewMark.Keys, DiffKeys: keystream.go, no request),
// and with WatchRefreshes on takes from TakeRefreshChanges what each
// refresh's comparison of journal lines, and each forget record new to
// it, showed of the signatures replaced (viewdiff.go). The lists of a
// store stream the same way (ListKeys, UnionKeys, ListingKeys; the sides
// of oxyfs diff: diffsource.go), a few batches of keys at a time.
//
// OpenSig opens a signature for a reader that keeps it (a mount's read
// handle, serve's answer, the io/fs view's open file): a handle on one
// shared, read-only copy per version, refcounted, the cache's own slice
// when cached; Release gives it back. A forget record's recheck (whose
// version moves only when a read finds other bytes) stops sharing the held
// copy: the next open reads the key, the held handles keep theirs. The bytes all handles hold, and the
// bodies being read for an open, stay within the readers' budget
// (Options.ReaderBytes; by default the cache's bound or
// format.MaxEntryBytes, whichever is more): an open past it is ErrBusy,
// refused from the GET's response size before the body is read
// (store.GetAdmitted). ReadSig returns a copy the caller owns.
//
// # Writes
//
// Put and PutBatch validate every entry first (format.Entry.Validate; a
// signature needs bytes, any other kind must have none) and send nothing if
// one is invalid. They write each per-object key first (store.Put), then, on
// a bucket, hand the keys to the group commit: one goroutine takes every key
// waiting and appends them in ONE journal update (journal.Append, which also
// folds a partial list past format.PartialFoldThreshold lines), then wakes
// every waiter of that update with its result. A Put returns only once its
// key and its journal line both landed; the entry is then visible to this
// handle at once (an overlay merged into every lookup, "own write"). A
// refresh drops from the overlay what the new set holds. Putting a signer's
// signature again replaces it (same key) and replaces the cached bytes.
//
// # Memory
//
// The set is flat, pointer-free arrays (the GC never scans them), per kind,
// sorted by key:
//
//	objs    W bytes per distinct object: the id packed from hex (hex/2; W=32 for 64-hex ids)
//	objOff  0 while every id of the kind has one width, else 4 B per object
//	first   4 B per object: where its entries start in vals
//	vals    4 B per entry: a value id (uint32) into the value table
//	srcs    1 B per entry: which list, or the journal, the entry came from
//	hh      257 × 4 B per kind: the object index where each <hh> starts
//
// and one value table for all kinds: each distinct value once, its bytes
// (lowercase hex values packed to half) plus a 4 B offset and a 1-bit flag.
// No per-key string header, no map, no pointer.
//
// For a signature key sig/<hh>/<62 hex>/<signer> (79 bytes of key text with
// a 9-byte signer) on an object with one entry, that is 32 (id) + 4 (first)
// + 4 (value id) + 1 (source) = 41 B, 0.52 × the key text; a second signer
// on the same object costs 5 B more. 16 signers add 16 × ~13 B in total.
//
// The journal costs no line. Its entries are in the set already; the view
// keeps only marks on it (journalmarks.go): one bit per entry of each kind
// the journal names (n/8 bytes, only while it names one), and 6 B per
// signature whose lines are not exactly one folded line (its line counts,
// for the signature cache), and the newest folded-at (8 B). While a
// refresh builds a view it also holds the folded-at of every signature
// line (16 B a line), dropped once compared with the previous view. A folded line whose key a list holds — every
// line right after a complete fold, for the hour they stay — costs its bit;
// an unfolded line no list holds costs its entry in the set (above) and
// 6 B if a signature. The journal's bytes, its parsed lines and the map of
// their keys (~160 B a line) are the open's, dropped when it ends.
//
// BenchmarkOpen measures each state with the mix Generate writes (70%
// signatures, 1–2 entries per object, unique 64-hex seal and accepted
// values, 87 B of key text per entry), as the heap the loaded index keeps
// per entry (after GC) and over the key text of the set's entries:
//
//	clean folded store (one complete list)    1e5: 39.2 B 0.45   1e6: 39.5 B 0.45   1e7: 38.6 B 0.44
//	right after a fold, its lines folded      1e5: 39.3 B 0.45   1e6: 39.0 B 0.45   1e7: 38.7 B 0.44
//	1,000 unfolded lines beside the list      1e5: 39.4 B 0.45
//	half the entries unfolded lines           1e5: 41.5 B 0.48
//	10 partial lists beside a complete one    1e5: 39.4 B 0.45
//	signatures only, 16 signers               1e6: 42.3 B 0.53
//	not folded (journal only: its own set)    1e5: 43.5 B 0.50
//
// (at 1e7 the journal holds the last 1e6 lines: its cap is ~2.5e6). The
// 1e6 figures of the first, second and sixth rows are from after the last
// kind's arrays kept their slack (listsizer.go: 38.7, 38.8 and 41.0 B
// before, +0.8, +0.2 and +1.2 B); the others from before, which it raises
// by as much at most (a set merged from several runs is copied, trimmed,
// as it was). Before
// the view dropped the journal's lines: 204 B, 195 B, 116 B, 122 B and 152 B
// in the states whose journal is long. Status.MemoryBytes is the
// sum of the arrays' capacities, the marks' included.
//
// Not in those figures: own writes since the last refresh (a Go map and
// strings, ~150 B each), the signature cache (Options.SigCacheBytes), the
// bytes open readers hold (Options.ReaderBytes), the sizes, digests and
// times of signatures read (sizeItemBytes, 208 B each at the most, 192 B
// measured with a full table; at most 1<<20 remembered: 208 MiB, which
// Status.SigSizesBound states and Status.MemoryBound counts; longer keys
// than a 9-byte signer's make the table start over sooner, their
// allocations counted, so it stays within that bound), the text
// length of each live list (~100 B each), the
// signature objects of the forget records named (at most 100,000 ids, a
// copy each: forgotten.go), the records'
// text (which their parsed lines' keys share), and in the prefix modes the
// listings of the open. Under a Go
// memory limit (GOMEMLIMIT) an Options.SigCacheBytes of 0 bounds the cache
// to an eighth of the limit, and the sizes to as many as another eighth
// holds (memory.go).
//
// While an open builds the set it also holds the compressed lists (those
// in flight: at most format.MaxEntryListsInFlight, 256 MiB, together; each
// list is decoded as its body arrives, store.GetStream, and only what the
// decoder has not read yet is held, listload.go), the runs being merged and the builder's map of distinct values, and the
// journal's bytes, lines and sort records: a peak of about 180 MB of heap
// for 1e6 entries with an empty journal (4.7 × the set), 525 MB with
// 1e6 journal lines (102 MB of journal). None of it is kept: the heap
// after the open is the set. A refresh that changes the lists builds the
// new set beside the old one. SettleMemory, which oxyfs mount and serve
// call after an open and after a refresh that changed the view, returns
// that transient to the operating system (else the process stays at its
// peak until the runtime's scavenger returns it) and sets GOGC so the
// collector lets the heap grow 64 MiB past a big set rather than a whole
// set (the set is pointer-free: the collector marks each array once).
//
// Lookups are binary searches within one <hh> bucket: O(log n). ReadDir of a
// kind walks the 256 bucket bounds; ReadDir of <kind>/<hh> is O(log n + k)
// for k objects. by-signer/<signer> scans the signatures' value ids once
// (uint32 compares, no allocation but for the names returned).
// Signers and SignedBy return one page of by-signer/ and of a signer's
// objects (signers.go) the same way, allocating only the page: a store of
// millions is browsed a page at a time.
//
// Loading decodes each list once, in key order, straight into the arrays
// (keys of a list come sorted, so no sort is needed), from its body as it
// arrives, in three goroutines that hand chunks of 256 KiB of keys on
// (listdecode.go): zstd decompression and the list's line checks, the
// split of each key (format.SplitKey, in place in the chunk), and the
// build, which only interns values and appends; each is about a third of
// the decode's CPU, so on two cores none waits on one doing two thirds.
// The arrays of the kind whose keys sort last (sig, most of a list) are
// sized once from a sample of its first 32,768 keys and the text the
// frame declares (listsizer.go), and kept with their slack (at most a
// sixteenth; about 3%) rather than copied to trim it; an earlier kind is
// trimmed when the next begins, and the value table as the last begins,
// while the decoder still works, not after it. Each list is decoded
// into a value table of its own (decodeEntryList); the open then adopts
// them, the one with the most values first: its table becomes the base of
// the set's (vtab.base, shared, not copied) and its arrays the run's; the
// others' values are interned into the set's table after it, then the
// journal's (a journal line's attestation id is found in the list that
// holds it: internJournal). A run merged with an empty one is kept as it
// is, not copied. Several lists and the journal are merged pairwise,
// smallest first.
//
// # The list cache
//
// With Options.ListCache (`--cache-dir`, listcache.go) each list an open
// decoded is written, in the background, to a file on this host laid out
// as its arrays lie in memory (listfile.go), and the next open of the
// same store maps it read-only (syscall.Mmap) instead of sending its GET:
// no decode, no copy; its pages are the page cache's, shared by every
// mount of the store on the host, and not heap (Status.MemoryBytes still
// counts them). A file is believed only whole and of the list asked for:
// a CRC-32C over all of it, then the store's URL hash, the list's name (the
// SHA-256 of its text) and the size the pack listing gave, then every
// bound a lookup indexes by; else it is removed, reported once, and the
// list read from the store. The set keeps the mapping in pins (a cleanup
// unmaps it once no set holds it). An open that sees a list retired
// removes its file; the directory is bounded (Options of OpenListCache),
// the files used longest ago removed first (at the cache's opening too).
// Status.ListCache (listcachestats.go) counts the lists mapped from the
// cache and those read from the store, with their sizes, since the open,
// and says the cache's directory, bound and what its files held when last
// counted (evict).
//
// # Concurrency
//
// An Index is safe for concurrent use. What an open learned is an immutable
// view published through an atomic pointer: lookups take no lock on the set.
// Load and Refresh are serialized; a refresh builds its view beside the old
// one and swaps it in. The overlay, the signature cache and the listings of
// the prefix modes each have their own lock; a listing, and a signature's
// GET, run once however many callers ask at the same time. The group commit
// is one goroutine, started by the first write; Close waits for it to finish
// every pending update.
//
// Options.BuildWorkers (by default 2 when GOMAXPROCS is 2 or more; 1 is
// the decode above, exactly) set to 2 or more changes how each list is
// decoded, not what: the same three goroutines, but every kind's arrays are sized from
// a sample of its keys (the kinds before sig: kindSizer, once
// kindSample keys are in: where the last object id falls in the id space
// says what share of the kind is in; sig: lastKindSizer, as always), as
// is the value table, and one more goroutine per list being decoded (the
// prefaulter, listprefault.go) faults in the pages of what was reserved
// (madvise MADV_POPULATE_WRITE, 512 KiB a call), up to 32 MiB ahead of
// where the build writes in each array, so a reservation the list does
// not fill costs at most that window of resident memory. It holds no
// memory of its own: it holds the arrays it is given until it is done
// with them, and the decode stops it and waits for it before it returns,
// on every path (a failure, a canceled context). The arrays reserve 2% more than the estimate of the kinds
// before sig (3% for sig), kept if the slack is at most a sixteenth,
// else trimmed by a copy; the set's heap is the same within that.
//
// The keys of all live lists together are capped at
// format.MaxEntryListKeys, the cap of one list: past it an open falls back to
// prefix listing and says why, as for one list over its cap (listload.go).
//
// Parallel work (an open's GETs of the lists, 8 at once and within the
// bytes in flight (listload.go); the legacy
// signature lists, 16; a write batch's PUTs, 16) runs through
// internal/lib/par: the first error stops what has not started, what is in
// flight finishes, and that first error, wrapped with the operation and
// key, is returned. A write batch alone tries every key whatever befalls
// the others (the keys that landed are journaled; the error names the
// failures). The store caps the requests of all of them together
// (store.Options.MaxRequests); read-ahead adapts its own count below it.
//
// # Locks
//
// A struct's fields say what guards them: "guarded by mu" after the lock
// that "protects the following", "atomic", "read-only after" the
// constructor, or "locks itself" for a field with a lock of its own. The
// order in which locks may be held together:
//
//  1. Index.loadMu, the first: Load and Refresh hold it across a whole open
//     (every request of it) and the swap of views, and take under it the
//     overlay's lock (own.mark, own.prune), the list texts' (lists.learn,
//     lists.keep), the signature cache's (sigs.invalidateRefresh,
//     sigs.keysOf and sigs.invalidate for the forget records: forgotten.go,
//     which also GETs the record under loadMu),
//     the own appends' (chain.between, chain.since, chain.prune: ownlines.go),
//     read-ahead's (ra.forget) and warnMu (warn). Nothing takes loadMu while
//     holding another lock: lookups reach Load only through current, which
//     holds none. Refresh waits for its subscribers after releasing it.
//  2. readAhead.mu: trigger and the workers take under it the signature
//     cache's lock (sigs.has, sigs.itemsFitting), the prefix cache's
//     (pc.peek) and the congestion window's (cwnd.allowed, cwnd.done). The fetch itself runs
//     outside it, and sigCache.prefetch calls its read (which takes
//     readAhead.mu, in stale) with sigCache.mu released.
//     A key's write lock (Index.putLocks) ranks with readAhead.mu,
//     neither taken under the other: a write holds it across its PUT of
//     the key and sigs.put, and takes nothing else under it but the
//     leaves.
//  3. The leaves, under which no other lock is taken and no request is
//     sent: sigCache.mu (the LRU, the sizes, the shared reads and each
//     one's waiters, the versions, what waits to be told to the
//     subscribers (sigWatch), sigReaders and each sigBuf's refs: every
//     field of the signature files but the atomics; the subscribers run
//     outside it, a GET and its digest too),
//     prefixCache.mu (and each call's waiters and what settle holds to a
//     landed listing; a listing runs outside it),
//     overlay.mu, listTexts.mu, congestionWindow.mu, refreshLog.mu, committer.mu (the journal
//     update runs outside it; the committer records an append in ownLog.mu
//     after it, outside committer.mu), ownLog.mu and Index.warnMu (warnFn
//     is called outside it).
//
// So a goroutine holds at most one lock of each rank, in rank order.
//
// # Errors
//
// A path that does not exist is an *fs.PathError wrapping fs.ErrNotExist;
// ReadDir of a file or symlink wraps ErrNotDir. An entry that breaks the key
// rules is refused with an error wrapping format.ErrBadKey. Request failures
// are returned wrapped with the operation and the key ("read entry list
// %q: ..."). A failed open (the snapshot cannot be read) fails the lookup
// that triggered it; the next lookup tries again. A failed journal update
// fails every Put of that update with an error saying their per-object keys
// exist but are not journaled (a folded reader sees them only after the next
// complete fold; putting them again fixes it); they are not added to the
// overlay. Nothing panics on bad input.
//
// A signature the view lists (a journal line, a live list, a listing, an own
// write) whose GET finds no key is an error wrapping ErrListedMissing and
// fs.ErrNotExist; the first read of each such key warns, naming the key,
// what names it and how it heals, and counts it (Status.ListedMissing):
// missing.go.
//
// # Times
//
// A signature's time is its key's own Last-Modified, read by the GET that
// reads its bytes (store.GetAdmitted: no extra request) and kept with its
// size, digest and bytes (sigMeta.mod): SigStat, Node.ModTime (once the size
// is known), SigHandle.ModTime. A change that drops the bytes drops the time
// with them, so the next read gives the new key's. This handle's own write
// keeps the store's time when it landed as the handle's clock of the store
// tells it (sigTime). Every other time is the store's last change (ModTime).
package index
