// Package sim is a model-based simulation of an oxy store (spec §13.7), in
// the manner of FoundationDB's deterministic simulation and TigerBeetle's
// VOPR: random operations against the real store, fold and index code,
// with injected faults, each followed by checks that every reader's view
// EQUALS what a small reference model says — not merely contains it.
//
// # The model
//
// The model (model.go) is the spec reduced to a set and a flag per key:
//
//   - E, the per-object entry keys that exist (sig/, seal/, receipt/,
//     approval/, cert/, accepted/), each with its signature bytes;
//   - per key, covered: a journal line names it, or a complete fold has
//     listed it since it was written. A key an older writer wrote (key
//     only, no journal line), or whose journal update failed, is not
//     covered until the next complete fold;
//   - folded: a complete fold made its list live; cleared only by a fold
//     that reports Unfolded (its list retired too long ago to revive, and the
//     lists it read holding keys that are gone: fold/revive.go).
//
// Every reader must then show exactly: E on a store that is not folded
// (readers list the prefixes; a journal line whose key is gone is not an
// entry), and E minus the uncovered keys on a folded store (the spec's one
// allowed difference, §13.7 "Older writers").
//
// # Operations (ops.go, weights in driver.go)
//
// Writes through a long-lived index handle (PutBatch), through store.Put +
// fold.Append, and by an older writer (store.Put only); partial folds, and
// appends past format.PartialFoldThreshold; complete folds, and a dry run
// followed at once by the real fold (the plan must be what it does);
// collections, their dry runs likewise, and collections forgetting an
// object (--forget-objects --apply, which removes its keys from E); clock
// jumps on the one fake clock every handle shares (seconds to hours, 59 and
// 61 minutes); refreshes and reopens of the long-lived handle. With
// Config.ReadAhead (the even seeds by default) the long-lived handle fetches
// signatures ahead of its reads as the product does: those GETs run beside
// whatever operation follows, so such a run replays its seed only up to
// their timing. A share of
// the operations (FaultPercent) runs with one fault armed in the blobtest
// driver under the store (faults.go): a final error or a 503 on the Nth
// LIST page, GET, HEAD, PUT or DELETE of some prefix, once or from then on,
// or a PUT that lands but loses its answer. After a faulty operation the
// model learns what landed from the store itself (deriveKeys,
// deriveCoverage, deriveFold), never by guessing.
//
// # Checks (check.go), after every operation
//
//   - the store is folded exactly when the model says (after a fault: it
//     may have become folded, never unfolded);
//   - the per-object keys in the bucket are exactly E;
//   - a fresh index on the store: its whole tree (ReadDir walk) equals the
//     expected set, by-signer/ names exactly its signatures, Stat of random
//     keys agrees, a signature reads back with the bytes last written
//     (after every operation that wrote the bucket or moved the clock, and
//     at the cadence below);
//   - the long-lived handle: right after a refresh or an open, exactly the
//     expected set; in between, at least what it showed then plus its own
//     acknowledged writes, at most that plus its failed writes (plus, in the
//     prefix modes, what the store holds: listings are made lazily);
//   - no journal line lost: per key, an unfolded line stays (unfolded, or
//     folded at now), a folded line keeps its folded-at until past its hour,
//     lines appear only as the operation appended them (exactly, when no
//     fault fired), and a successful forgetting leaves none;
//   - nothing deleted within its hour: an entry list that is gone was
//     retired over an hour before; a retired line goes only with its key;
//   - no DELETE after a read or listing failed for good in the same
//     operation (counted in the blobtest hook).
//
// A run stops at the first operation after which a check failed, and
// reports every violation found then, classified by the known defect it
// looks like (Classes) or NEW, with the seed and the operation log.
//
// Cadence. Every PUT and DELETE reaches the bucket through the fault
// injector's hooks, which note each key (injector.written), and nothing
// else writes it; so between two checks only those keys can have changed.
// A full check — every fullCheckEvery (8) operations, after an operation
// whose fault fired, and after the run's last — lists the six kinds'
// prefixes and the packs in the bucket, reads the snapshot (the journal,
// the retired record: the journal and retired checks use these), and
// opens a fresh index. In between, a check holds the bucket to E on the
// keys a request named and those the model added or dropped (a HEAD
// each), reads the snapshot only when a key outside the six kinds (a
// pack- key) was written and lists the packs only when an entry list's
// key was (else they are as the last check read them), and opens a fresh
// index after every operation that wrote a key or moved the clock (its
// view is a function of the store and the clock; in byte mode every
// operation moves the clock 1 ms, so a fresh index is opened after each,
// as before). The long-lived handle, the journal's and the retired
// record's rules and the bytes are checked after every operation as
// before. A bucket key that changed with no request naming it (a write
// around the hooks: none is known) would be found at the next full check.
// A check that skips the fresh index draws the random keys it would have
// drawn, so a seed runs the same operations as before the cadence.
//
// Waits the checks no longer make: a check's read that joins a GET held
// back (a slow read's, or a late body's: "Readers beside the operations")
// waited for it to be let go — slowMax, or up to lateReadAheadMax — while
// no operation could run to release it; after stallWait (5 ms) those GETs
// of its key are let go at once (sim.unstall). The reader's own late GETs
// land at once while an operation waits for the reader (afterOp). Neither
// changes the order of anything: the operations' goroutine was waiting.
// Result.OpTime "check/<part>" times the checks' parts (simtool prints
// them).
//
// # Determinism
//
// One seeded PCG (math/rand/v2) draws every operation, key and fault; the
// clock is a store.FakeClock; the driver runs one operation at a time. In
// byte mode a reader goroutine runs beside the operations ("Readers beside
// the operations"): its reads, and what they meet, are timing, not seed
// (forget-reput's choice of a key written last is the seed's).
// Faults pick their victim by key prefix and occurrence, not by a global
// request count, so requests a goroutine pool sends in any order fail the
// same way. The retries of a read that got a 503 sleep (wall time), which
// changes timing only.
//
// # Bytes (Config.Bytes; TestByteSimulation; simtool -bytes)
//
// The model keeps every signature's versions (bytes.go: hist), and per key
// the window of them a reader of the long-lived handle may be shown: only
// the newest after a refresh or an open (or after the handle's own write),
// older ones too between refreshes, and older ones after a refresh when
// the handle cannot know the key changed (an older writer's re-sign with no
// journal line, a write whose operation had a fault, a key whose lines a
// collection dropped before it failed and left the key). A re-sign another
// writer journaled is always the newest after a refresh, however its
// lines were folded, dropped past their hour or forgotten meanwhile (R1,
// fixed in index: there is no allowance for it). Byte mode adds operations:
// re-signs through the handle and by another writer (store.Put +
// fold.Append, put --force), each longer, shorter, the same length, or the
// same length with one byte changed (some past a page); forget then re-put;
// hold (a descriptor on the mount, its first 8 bytes read at once, and an
// OpenSig handle, kept across later operations); a write through the mount
// refused (EFBIG) between two that fit, whose close must fail and write
// nothing; forget-reput-held (issue 37 item 1: a signature whose only
// journal line is the last one, held open across a forget of its object's
// signatures and another writer's put again, the same length half the
// time, then a refresh: only the forget record tells, and every new open
// must read the new bytes); slow-read (a background GET that found the
// old bytes held back across another writer's re-sign and a refresh: a
// read that begins then must not join it); oxy-read (a stat of each, a
// refresh, then .oxy/journal and .oxy/retired through the mount must be
// the store's records, their stat their length: class O1, unless
// Config.TolerateOxyHold); path-held (with a mount: a signature held by an
// O_PATH descriptor, which no OPEN pins, across three re-signs by another
// writer, each refreshed, and stat'd after each with AT_STATX_FORCE_SYNC
// and as fstat does: ESTALE, the held version's size or the current one,
// never another — the only request from userspace on an older version's
// node with no handle keeping it; the concurrent reader waits meanwhile:
// pathheld.go). The sim's clock
// moves 1 ms before every operation, as real clocks do, so no re-sign is
// folded in the millisecond of the fold before.
//
// After each operation (bytecheck.go) — every signature of the model's set
// after a refresh or an open, the keys the handle wrote otherwise — the
// handle's ReadSig and OpenSig, and serve's handler (web.Handler, GET
// /<key>), must return one version of the window, byte for byte. On
// MountPercent of the refreshes, a FUSE mount of the handle (fs.Mount,
// Invalidate after each refresh as mount's refresh loop does) is read too:
// stat (a size of the window), read(2) to EOF, pread in 1000-byte pieces,
// and a MAP_PRIVATE and a MAP_SHARED mmap (of the same open, made and
// copied out in a child process, testkit/mapcopy: a page fault this
// process serves itself can deadlock with the garbage collector, even one
// taken inside write(2); a MAP_SHARED refused with ENODEV is a violation
// unless Config.TolerateSharedENODEV). After each refresh every held
// reader is read to its
// end (pread from 0, and read(2) after the first bytes): one whole version
// of those it may read (the window when it opened, and every later one),
// the same one its first bytes came from, fstat its size; half are closed.
// A reader of the mount whose life overlapped a write through the mount of
// its key (mountwrite.go) may read any bytes that write held ("" after its
// O_TRUNC open, then what it wrote), as on any filesystem; its first bytes
// may then be another version's.
// Classes: B1 a new open or read shows no allowed version, B2 a held reader
// not one whole version, B3 stat's size (a path descriptor's too:
// bytes-path-held), B4 a refused write not refused.
//
// # Readers beside the operations (concurrent.go, concheld.go)
//
// In byte mode one goroutine reads signatures all the time, while the
// operations run — writes, re-signs, forgets, refreshes, folds — through
// the handle's ReadSig and OpenSig, serve's handler, and (when mounted)
// the mount: read(2) to EOF, pread in pieces, a MAP_SHARED mapping. Each
// read must be one whole version that existed over the read's window: one
// of the key's versions from the oldest a reader could be shown when the
// read began (the window's lo; for the mount, lo as of the last refresh or
// open, since the kernel hears of own writes some time after) to the
// newest written or being written (the operation notes bytes before it
// sends them: conc.pending) when it ended. A key not found passes (the
// entry checks hold existence); any other error is a violation (an ESTALE
// on an open among them). Reads of a key with a write open through the
// mount are not made on the mount, and one a write there overlapped
// (begun after the reader looked: a mark taken before the read, compared
// after it, mountwrite.go) is not checked (a writer's open file shows its
// bytes, as on any filesystem, and a read may mix two of its states).
// Held descriptors (below) note the mark when they open, and may read the
// bytes of every write through the mount of their key from there on. Its
// requests, like read-ahead's, neither
// meet nor spend the operation's fault, and 30% of its signature GETs hold
// the bytes they found back up to 30 ms. The reader waits while the handle
// is replaced (sim.handleMu); its findings join the run after each
// operation, as violations of that operation (kinds conc-<way>, class B1
// for bytes of no such version; conc-<way>-error, class E1, for a read
// that failed).
//
// It also keeps readers across operations (concheld.go), as users' tools
// do:
//
//   - held readers: up to 6 at once, two thirds of them of the keys
//     written last — an OpenSig handle and a descriptor on the mount —
//     kept over later operations while it opens the same keys anew (half
//     its reads are of a key it holds). Ending one, the handle's bytes are
//     still those it opened with, and the descriptor reads with pread one
//     whole version of those it could be shown when it opened or any later
//     one, or bytes a write through the mount of its key held, begun
//     after it opened or open then (conc-held-handle, conc-held-mount:
//     class B2);
//   - after every refresh or open (afterOp: the operation's end, before
//     the checks, whose reads would hide it) the reader opens anew every
//     key it holds, through OpenSig and the mount, before any other read
//     of them: a new open after a change completed must see a version at
//     least as new (conc-reopen-held, conc-reopen-held-mount: B1); then it
//     holds the key written last. A new open handed the copy held readers
//     keep after a forget and a put again (issue 37 item 1, the
//     forget-held-shared mutation) shows here;
//   - slow reads: now and then a ReadSig in a goroutine of its own whose
//     GET (at most 2 at once) holds the bytes it found until a refresh,
//     the end of the third operation, or 200 ms. After a refresh, for each
//     held GET whose bytes no reader may be shown any more, the probe reads
//     the key: it must send a GET of its own and read a version it may be
//     shown, not join the held one (conc-stale-flight-probe: B1; the
//     stale-flight-joined mutation). The checks that read a held GET's key
//     wait for it: the price of the catch in operations per second.
//
// Config.SkipOps (-skip-ops) runs without named operations: with
// forget-reput-held and slow-read (the operations built for those two
// classes) skipped, the reader alone must catch them (docs/reliability.md).
//
// # Watchdog
//
// The tests that run the simulation arm testkit/testwatch and give it the
// mount point (Config.Mounted): a run that hangs (a FUSE request this
// process never answers, a stale mount of a killed run) fails the test by
// name with every goroutine's stack, its FUSE connection aborted.
// TestEveryMountingTestHasAWatchdog (testwatch.UnarmedThrough: Run mounts)
// holds every test of this package to it.
//
// # Backends
//
// mem (memblob), file (a temporary directory, bucket layout, CAS under an
// OS lock) and paged (memblob with LIST pages of PagedPageSize keys), each
// wrapped by testkit/blobtest for the faults; the checks read through a
// second store on the same bucket without faults. The long-lived handle has
// a store of its own on the same faults (injector.handleHooks): its reads
// that fail are not the operation's, so they never make a collection's
// DELETE one sent after a read it needed failed.
package sim
