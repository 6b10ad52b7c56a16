// Package store is oxyfs's only door to a bucket: it opens a gocloud.dev/blob
// URL, names the keys of the oxy store layout (spec §13.7), counts every
// request it sends, compare-and-swaps one record, and owns the clock the
// formats record. The formats themselves (keys, records, entry lists, caps)
// are store/format's; the file:// gocloud driver is store/fileblob.
//
// # Model
//
// A Store is a bucket plus a Layout (bucket: journal and entry lists beside
// the per-object keys; directory: a repository's own .oxy/objects, per-object
// keys only), a Clock (wall ms) and request counters. The keys and what
// they hold are store/format's (its doc lists them); a store reads and
// writes their bytes.
//
// ReadSnapshot is the pack listing an open makes: one LIST of "pack-" and
// one GET each of the journal and the retired record, from which the live
// lists (listed, not retired) and whether the store is folded follow.
// ReadSnapshotSince is a refresh's: the two records re-read with one
// conditional GET each (ReadRecordIfChanged: If-None-Match on S3 and Azure,
// a generation compare on GCS, a content-hash compare on file and mem, each
// in its driver), and the LIST only when one changed (or when asked).
//
// # Requests
//
// Every method sends a known number of requests and counts them by kind
// (Counts): Get, GetAdmitted, GetStream, ReadRecord and ReadRecordIfChanged one GET (a 304 too),
// Exists and Size one HEAD, Put one PUT, ListPage one LIST (List one per
// page), Presence one LIST (of the root, delimiter "/", a page of 1000: does
// the location hold anything of a store? presence.go), Delete one DELETE (on S3 also the HEAD s3blob sends first:
// DeleteRequests says which). A compare-and-swap write is one PUT on S3 and
// Azure, one PUT and (where the answer names no MD5) one GET on GCS, and one GET plus one PUT under the lock on file and mem. A
// process's first write to an S3, GCS or Azure store is preceded by the
// conditions probe (below), whose requests are counted apart
// (ConditionsVerdict.Requests). On S3 the HTTP client also counts requests
// on the wire (WireCounts, the probe's left out), and the conformance kit
// checks both agree. Bucket() bypasses the counters.
//
// # The store's clock
//
// Every on-store time (folded-at, retired-at) and every hour rule's "now"
// is the store's time, not this host's (adr-0055 D5; storeclock.go):
// Clock() reads it once measured. The S3, GCS and Azure clients take a
// sample from the Date header of every answer (driver_http.go), a file://
// store from the mtime of a probe (MeasureClock; this kernel's clock until
// then), a mem:// store is the process's Clock, and Options.StoreClock sets
// it outright (tests). StoreNowMs is the newest sample plus the local
// monotonic time since: no request. Skew is how far the local clock
// (Options.Clock, LocalClock) is off it; CheckClock fails with a SkewError
// (ErrClockSkew) beyond ClockMargin (4 min), or ErrNoStoreClock when the
// store gives no time, sending one HEAD only when nothing was measured yet.
//
// # Timeouts and retries
//
// Each request runs under Options.RequestTimeout (DefaultRequestTimeout,
// 30 s; `--timeout` in the CLI), body included, so a server that accepts
// connections and never answers fails a caller within the bound instead of
// hanging it. A read (GET, HEAD, LIST) that fails transiently — connection
// refused or reset, no answer in time, 5xx or 429 — is sent again after a
// jittered 100 ms, then 200 ms: MaxReadTries (3) attempts in all. NotFound,
// Conflict, other 4xx, a 304 and the caller's own cancellation are final. A
// write (PUT, DELETE, a create-only or conditional PUT) is sent once:
// whether a write whose answer was lost landed is unknown. UpdateRecord
// turns such a loss into a new compare-and-swap round (see UpdateRecord: a
// record holding exactly the bytes sent means it landed; otherwise the
// update is recomputed, at worst duplicating a journal line, which readers
// and folds tolerate). What still fails transiently after its tries wraps
// ErrUnavailable, whose message names the store.
//
// Every attempt also holds one of the Store's Options.MaxRequests slots
// (DefaultMaxRequests, 256; `--max-requests` in the CLI; MaxRequests
// reports it) from before it is
// sent until its body is read, so all the parallel work above the store
// (a fold's reads of the lists, an open's, read-ahead, which adapts its own
// count below the cap) together has at most that many requests in flight.
// An attempt past the cap waits for a slot as long as its context lets it;
// one canceled while waiting sends nothing and is not counted.
//
// Every attempt is one request in Counts (Retries says how many were
// repeats), so the counters stay exact: the S3 SDK's own retryer is off
// (aws.NopRetryer), and so are the GCS client's (RetryNever) and Azure's
// (per request, through the context). Only URLs openS3 hands to gocloud's
// own opener (ssetype, kmskeyid, accelerate) keep the SDK's retries.
//
// # Answers that lie
//
// A server's answer is never taken on its word (adr-0055 D6). Every page a
// listing returns is checked before it is used (listcheck.go): a key or
// common prefix outside the prefix asked for, a continuation equal to the
// one asked with, and on S3 a page marked truncated with no continuation
// fail the listing; a listing walked whole (List) also fails on a
// continuation any earlier page carried, on more than 2^20 pages or 2^28
// keys, and on more than 64 empty pages in a row that still say "more".
// One ListPage may cost several LISTs (gocloud, and the GCS client's pager,
// fill a page from as many server pages as it takes): on S3, GCS and Azure
// it sends at most 65 and never one continuation twice (driver_http.go).
// Each failure wraps ErrBadListing and names the key and prefix, or what
// repeated: a listing that went wrong is an error, never "no more keys".
//
// The S3, GCS and Azure clients share one HTTP guard (driver_http.go): an
// error answer's body is read to at most 4 KiB (the SDKs buffer error
// bodies whole; the status stays in the error, so a 503 is still
// transient), a LIST answer's body past 16 MiB fails the listing
// (ErrTooLarge, final), and a redirect is followed only to the same scheme
// and host:port, so no signature or bearer token goes to another host, port
// or to plain http (the error says "redirect refused" and names both
// origins; it is final). gs:// URLs take endpoint=URL (a GCS-compatible
// service or a proxy). gRPC gs:// URLs and the S3 URLs gocloud's own opener
// handles (ssetype, kmskeyid, accelerate) get the listing checks but not the
// HTTP guard.
//
// # Compare-and-swap
//
// Records (the journal, the retired record) change only through
// ReadRecord/WriteRecord/UpdateRecord: a write succeeds only if the record is
// still at the Version read — S3 If-Match/If-None-Match on the ETag, GCS
// generation preconditions, Azure ETag access conditions, and for file:// an
// exclusive flock(2) on the store's directory around read-compare-write
// (correct across processes; it leaves no file behind; on Windows LockFileEx
// on a lock file named as a temporary file, file_lock_windows.go), for
// mem:// a mutex.
// Every conditional write that succeeded confirms what it wrote
// (confirm.go): the answer proves the bytes where it names their MD5 (S3's
// ETag of a single-part PUT, Azure's Content-MD5, GCS's X-Goog-Hash md5=);
// otherwise (fake-gcs-server's answers name none) one GET reads the key
// back, and it must hold the bytes or a version other than the one
// replaced. A write acknowledged but not held fails with ErrUnconfirmed:
// an acknowledged line that is not in the record is never reported
// written. WritesConfirmed counts both ways.
// A lost race is ErrConflict; UpdateRecord retries up to MaxCASTries with
// exponential, jittered backoff scaled by the round trip. A backend without
// compare-and-swap refuses to write records (ErrNoCAS); nothing is written
// blindly. S3's ETag is the content's MD5, so rewriting identical bytes keeps
// the version (ABA): harmless here, since a record's only state is its bytes.
//
// # Conditions verified, not assumed (probe.go)
//
// Compare-and-swap on S3, GCS and Azure is the server's: a server (or a
// proxy in front of it) that accepts If-Match / If-None-Match /
// ifGenerationMatch and ignores them would let concurrent writers drop
// each other's journal lines while every write "succeeds". So before a
// process's first write to such a store (Put, PutIfAbsent, WriteRecord,
// UpdateRecord, Delete) the Store asks the server, on a scratch key of its
// own (ProbePrefix + 16 hex, at the root: outside pack- and every kind's
// prefix, so no reader, fold, gc or check lists it): create-only over the
// key must be refused, a replace conditional on a wrong ETag or generation
// must be refused, one on the right one must land and read back. The key
// is then deleted and confirmed gone (a HEAD). A server that fails any
// question is refused every write, with one error naming what it ignored,
// the probe key, and that nothing was written, wrapping
// ErrConditionsIgnored; reads keep working. The verdict is kept per
// process and store URL (every Store opened on it shares it; a probe that
// failed on a network error is not kept), shown by ConditionsVerdict and
// in .oxy/status ("conditions"). A verdict that the server honours them is
// kept ReprobeAfter (10 min); the first write after that probes again, so
// a long-lived process finds a server whose behaviour changed. A server
// that honours the conditions while probed and ignores them between probes
// is found by no probe: check names the keys whose lines it lost. The
// probe's key is removed whatever its create answered (a create whose
// answer or confirmation failed may have landed). file:// and mem://
// compare and swap under a lock of this host: trivially honoured, no
// probe.
//
// Cost, once per process and store: 4 PUTs, 2 GETs, the DELETE (on S3 also
// the HEAD s3blob sends first) and one HEAD — 8 requests on GCS and Azure,
// 9 on S3 — measured at 122 ms on Azurite, 176 ms on versitygw and 808 ms
// on fake-gcs-server over loopback (TestConditionsProbe logs them); a
// round trip each on a real bucket. They are counted apart
// (ConditionsVerdict.Requests), not in Counts, so an operation's count
// stays what the operation sends.
//
// # Memory and concurrency
//
// A Store holds no data, only the bucket, counters (atomics) and its
// driver; it is safe for concurrent use. The compare-and-swap locks of
// mem:// buckets (memLocks) live while a write holds or waits for one.
//
// # Locks
//
// A struct's fields say what guards them: "guarded by mu" after the lock
// that "protects the following", "atomic", or "read-only after" its
// constructor. A Store is read-only after newStore (Open, New) but for its atomics and its request slots
// (Options.MaxRequests: a channel used as a semaphore). The locks, in the
// order in which they may be held together:
//
//  0. A store's conditions verdict (verdictCell.mu, probe.go), held
//     across the probe's requests so a process's first writers wait for
//     one probe; request slots are taken under it. verdicts.mu, which
//     finds the cell, is a leaf.
//  1. The compare-and-swap lock of file:// and mem:// (lockedWrites.lock:
//     dirLock, then the OS lock of the directory; memLocker: a bucket's
//     memLockRefs.mu), held across
//     one GET and one PUT of a record. A request slot is taken under it,
//     so a conditional write holds the lock while it waits for a slot;
//     nothing takes the lock while holding a slot.
//  2. The leaves, under which no other lock is taken and no request is
//     sent: pageGuard.mu (one ListPage attempt's LIST requests),
//     pipeline.mu (its idle connections: pipeline.go), FakeClock.mu, memLocks.mu (taken under a memLocker too), and below
//     store, an EntryListText's mu and the text pool's (store/format) and
//     the openat2 probe's (store/fileblob).
//
// The S3, GCS and Azure drivers hold no lock: their compare-and-swap is
// the server's (a conditional request).
//
// # Drivers
//
// What differs per backend is one unexported interface, backendDriver
// (driver.go), implemented once per backend in its own file, as gocloud's
// drivers are: driver_s3.go (with driver_s3_open.go, the opener that counts
// requests on the wire, and driver_s3_list.go, the ListObjectsV2 page
// scanner), driver_gcs.go (driver_gcs_open.go), driver_azure.go
// (driver_azure_open.go), driver_http.go (the HTTP guard of the three),
// driver_file.go (around store/fileblob, below) and driver_mem.go. Each lists at its top the
// As types it uses; no code outside them asks which backend a store is
// (TestNoBackendNameComparisonOutsideDrivers checks it), and Backend() is a
// name for display. A driver answers:
//
//	changeToken         the version token of a GET: S3/Azure ETag, GCS
//	                    generation, SHA-256 of the bytes on file and mem
//	createOnly          ErrConflict when the key exists (one winner)
//	replaceIfUnchanged  ErrConflict when the key changed or vanished
//	readIfChanged       one GET; ErrNotModified (a 304) while unchanged, else
//	                    the bytes and token (the caller compares), ErrNotFound
//	deleteRequests      what a Delete sends (S3: a HEAD first), for Counts
//	listRetries,        a page listed again after ErrNotFound (file: a key
//	listItem            that vanished under it); ListItem.Irregular (file)
//	requestContext      the SDK's own retries off per request (Azure)
//	mapErr              its errors to ErrNotFound, ErrConflict, ErrNotModified
//	                    and the HTTP status transient reads (mapStatus)
//
// S3, GCS and Azure share preconditionPuts (one PUT carrying its
// precondition, set by the driver's BeforeWrite), file and mem lockedWrites
// (read-compare-write under a lock); a name New does not know gets noCAS.
// Open finds the backend by URL scheme, New by name (backendOf, driverNamed).
//
// # file://
//
// A file:// write never replaces a key with a failed write
// (store/fileblob): a write (ENOSPC, EDQUOT, EIO), sync or close of the
// temporary file that fails abandons it — removed, the key untouched, no
// empty or cut key made — and the error wraps the errno (errors.Is
// syscall.ENOSPC), so the mount and the CLI can say so. TestFileStoreDiskFull
// fills a real 512 KiB tmpfs: the journal never shrinks, no 0-byte key.
//
// file:// stores use oxyfs's own gocloud driver, store/fileblob, not
// gocloud's fileblob: a key is exactly the file root/key (no escaping, no
// sidecar), no symbolic link below the root is followed, and a listing
// fails on any error but a name that vanished (NotFound: listed again,
// listRetries). driver_file.go opens it (fileblob.Root, OpenURL), reads a
// listed item's mode into ListItem.Irregular, and locks a lock file in the
// directory (.oxytmp-0000000000000000, opened read-write, so only those
// who may write the store take it) around a compare-and-swap, waiting no
// longer than the request's context (file_lock*.go; older oxyfs's lock
// of the directory itself is taken too while it is free within a second).
// A listing enters no directory deeper than fileblob.MaxDepth. A test that needs a listing to
// fail opens the bucket with fileblob.Options.Fault and wraps it with New.
//
// # Caps against hostile contents
//
// A store is shared and what it holds may be hostile, so no GET may bring
// more than its key's cap into memory (format.ReadCap; store/format lists
// every cap). A GET over its cap is refused before its body is read when
// the response declares its size (every backend's does), else one byte past
// the cap; the error wraps ErrTooLarge and says the size and the cap, and
// is final (not retried). A body is never grown by copying (readCapped,
// readcap.go): a declared size is read into one buffer of that size, and a
// body of no declared size (S3's SDK reports a chunked answer as 0 bytes)
// or one running past it into slabs (32 KiB doubling to 1 MiB), joined
// once at the end, so a flooded GET holds at most its cap plus one slab:
// 64.1 MiB of heap for a signature's 64 MiB cap, where growing a buffer by
// append took 183.5 MiB (BenchmarkFloodedRead, through versitygw and
// lyingproxy.FloodBody). GetAdmitted lets a caller that bounds what it
// holds (the index's readers' budget) refuse a body the same way: its
// admission is asked with the response's size before the body is read,
// and with each slab of a body of no declared size before the slab is
// read, so a flooded read is refused at the caller's budget, not its cap.
// GetStream hands an entry list's body to format.DecodeEntryListFrom as it
// arrives; no list is held decompressed.
//
// # One get (get.go)
//
// Every read of a key's body is one private get(ctx, key, getOpts): Get
// (the key's bytes), GetAdmitted (a signature's: admission, Last-Modified,
// the lean path), GetStream (an entry list's, handed over as it arrives,
// within a lower cap) and readWithToken (a record's bytes and version
// token, the read conditional where readIfChanged asks: ReadRecord,
// ReadRecordIfChanged, the confirmation's read-back, the probe's reads).
// The options are the cap (the key's, or lower), the admission, the lean
// path, the driver's condition, the token and the stream; get sends the
// GET through s.read (a request slot, the timeout, the retries, one GET in
// Counts) on the path the options allow, and every whole body is read by
// readAdmitted: refused over the cap from its declared size, admitted,
// then readCapped. Its error is not wrapped; each caller names its
// operation and the key ("get %q", "read record %q").
//
// # The lean GET (leanget.go)
//
// Signature reads (GetAdmitted) on S3, GCS and Azure skip
// the SDKs: the store builds the one GET itself and signs it (SigV4 with
// the client's cached credentials and the endpoint its rules resolved at
// open; the GCS client's bearer-token transport, XML-API media read;
// Shared Key or the container URL's SAS) and sends it on the driver's own
// HTTP client, so the guard above, the wire counts, the request slots,
// timeouts, retries, caps, admission, ErrNotFound and Last-Modified are
// the same as on the SDK path. The body's full-object checksum is checked
// where the answer names one (S3 x-amz-checksum-*, GCS crc32c), as the
// SDKs do. Which path a store reads with is decided once at open and
// shown by ReadPath (LeanGets counts what the lean path sent); what it
// does not know (gocloud's own S3 opener, gRPC GCS, Azure connection
// strings and Entra ID tokens, SigV4a endpoints, stores made with New)
// and Options.SDKReads stay on the SDK path, and so does a key gocloud
// would escape. Records, entry lists and conditional reads always take
// the SDK path. BenchmarkGetPath measures both (docs/performance.md).
//
// # Pipelined GETs (pipeline.go, pipeline_conn.go, getbatch.go)
//
// Read-ahead reads signatures in batches (GetAdmittedBatch): on the lean
// path, where the driver's transport dials itself and no proxy serves the
// origin, up to Options.PipelineDepth GETs are written on one HTTP/1.1
// connection at once and their answers read in order on the caller's
// goroutine — a write and about a read a batch instead of a round trip,
// two goroutines' hand-overs and a poll a GET. Each GET is otherwise
// GetAdmitted's: a request slot, one GET in Counts and on the wire, the
// Date to the store clock, the observer, the cap, the admission, the
// checksum, ErrNotFound. What a server does not take is survived, not
// assumed: the depth starts at 2 and grows as batches come back whole;
// GETs owed when it closes the connection or falls silent are sent again
// one at a time (counted as retries); such a cut halves the depth, and
// from 2 pins it at 1; an error answer other than 404 ends its batch; an answer that came unasked on an idle
// connection (the peek) or a 408 first on a reused one is never read as
// a GET's. Pipeline reports the depth, the batches and the cuts
// (`.oxy/status`: read_ahead.pipeline).
//
// # Credentials
//
// Open looks for the backend's credentials before any request
// (credentials.go): a store without them fails with one line naming what to
// set, wrapping ErrNoCredentials, and the SDKs say nothing on stdout or
// stderr (the S3 logger is off; gs:// is opened by openGCS, not gocloud's
// opener, which prints a warning; EC2's instance metadata is asked only on
// EC2). A store's URL is shown redacted (termsafe.Redact).
//
// # Errors
//
// Backend errors map to ErrNotFound, ErrConflict and ErrNotModified in
// errors.go (mapStatus: by gcerrors code, else by the HTTP status the
// driver's mapErr read from its SDK's error), are wrapped with the operation
// and key, and keep the backend's text. A record or list that does not
// parse is format.ErrCorrupt, a malformed key format.ErrBadKey.
package store
