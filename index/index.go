package index

import (
	"context"
	"errors"
	"fmt"
	"log"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oxyfs/oxyfs/internal/lib/keylock"
	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
	"github.com/oxyfs/oxyfs/store/journal"
)

// Options configure an Index.
type Options struct {
	// SigCacheBytes bounds the signature byte cache; 0 = DefaultSigCacheBytes,
	// or an eighth of the process's Go memory limit (GOMEMLIMIT) when less.
	SigCacheBytes int64
	// ReaderBytes bounds the bytes open readers hold (OpenSig: the
	// readers' budget, sigopen.go); 0 = the signature cache's bound, or
	// format.MaxEntryBytes if that is more.
	ReaderBytes int64
	Warn        func(msg string) // warnings (malformed keys, unreadable lists); nil = log.Printf
	// ReadAhead is how many signatures past one read (ReadSig, SigStat, OpenSig) are
	// fetched ahead, in key order; 0 = DefaultReadAhead, < 0 = off.
	ReadAhead int
	// ReadAheadWorkers bounds the read-ahead GETs in flight; 0 = the
	// store's cap on requests in flight but an eighth (readAheadWorkers),
	// and never past that cap.
	ReadAheadWorkers int
	// KeepJournalText is the longest journal whose text a view keeps for
	// JournalText (.oxy/journal) without a request; 0 =
	// DefaultKeepJournalText, < 0 = none (every read is one GET).
	KeepJournalText int
	// ListCache, when set, keeps the live lists decoded on this host's
	// disk, so the next open maps them rather than read them
	// (listcache.go). nil: none.
	ListCache *ListCache
	// BuildWorkers says how each live list is decoded: 1 (or less than
	// 0) decodes it serially, as every open did before 2026-12-07; 2 or
	// more sizes every kind's arrays and the value table from samples of
	// the list's keys and has one more goroutine fault their pages in
	// ahead of the build (listprefault.go). 0 is the default: 2 when the
	// process may run on two CPUs or more (GOMAXPROCS), else 1. The set
	// built is the same either way; a 10,000,000-entry open took about a
	// third less CPU and wall with it (docs/performance.md).
	BuildWorkers int
}

// buildWorkers is Options.BuildWorkers n as the decode takes it: 0 is 2
// when GOMAXPROCS allows two goroutines to run at once, else 1.
func buildWorkers(n int) int {
	if n == 0 {
		if runtime.GOMAXPROCS(0) >= 2 {
			return 2
		}
		return 1
	}
	return n
}

// DefaultKeepJournalText is Options.KeepJournalText when left 0: 1 MiB,
// about 10,000 lines. Right after a complete fold every entry has a folded
// line for an hour (~100 B an entry): the view keeps the entries, not that
// text.
const DefaultKeepJournalText = 1 << 20

// DefaultSigCacheBytes bounds the signature byte cache when Options leave it 0.
const DefaultSigCacheBytes = 64 << 20

// Modes of an open (Status.Mode).
const (
	ModeFolded        = "folded"         // lookups answered from the lists and the journal
	ModePrefixListing = "prefix-listing" // a bucket that is not folded: lookups list per-object prefixes
	ModeDirectory     = "directory"      // a repository's own directory: lookups list per-object prefixes
)

// maxWarnings is how many warnings Status keeps (the most recent).
const maxWarnings = 100

// ErrClosed is returned by writes after Close.
var ErrClosed = errors.New("index is closed")

// ErrNotDir is returned by ReadDir of a file or symlink.
var ErrNotDir = errors.New("not a directory")

// Index is an open handle on a store's signatures and index entries: the
// reading rules of spec §13.7 and the tree of DESIGN §4. It is safe for
// concurrent use.
type Index struct {
	keepJournal  int          // Options.KeepJournalText, resolved: -1 keeps none; read-only after Open
	lcache       *ListCache   // Options.ListCache (nil: none); read-only after Open
	lcacheStore  string       // the store's name in lcache (cacheStoreID); read-only after Open
	buildWorkers int          // Options.BuildWorkers, resolved (buildWorkers); read-only after Open
	listFrom     listCounts   // where the entry lists came from (listcachestats.go); atomic
	st           *store.Store // read-only after Open
	warnFn       func(string) // read-only after Open
	// appendFn is journal.Append; read-only after Open (a test sets it
	// before writing).
	appendFn func(ctx context.Context, st *store.Store, keys []string) (journal.AppendResult, error)

	loadMu      sync.Mutex                   // serializes Load and Refresh; the first lock taken (doc.go, "Locks")
	v           atomic.Pointer[view]         // atomic; nil until the first load; stored under loadMu
	gen         atomic.Uint64                // atomic
	refreshes   atomic.Int64                 // atomic
	lastRefresh atomic.Pointer[store.Counts] // atomic: requests the last Refresh sent
	refreshEnd  atomic.Pointer[refreshEnd]   // atomic: when the last Refresh ended, and how
	refreshFail atomic.Int64                 // atomic
	lookedAt    atomic.Int64                 // atomic: the store's ms when the current view's records were last read, or lookUnknown (storeclock.go)
	forgets     forgets                      // the forget records named (forgotten.go); guarded by loadMu

	own     overlay     // locks itself (overlay.mu)
	lists   listTexts   // the text length of live lists (records.go); locks itself (listTexts.mu)
	sigs    *sigCache   // read-only after Open; locks itself (sigCache.mu)
	ra      readAhead   // locks itself (readAhead.mu)
	commit  committer   // locks itself (committer.mu)
	chain   ownLog      // own appends, for a refresh (ownlines.go); locks itself (ownLog.mu)
	missing missingKeys // signatures listed but missing (missing.go); locks itself (missingKeys.mu)
	// putLocks orders the writes of one key: a PUT of the key and the
	// signature cache's copy of its bytes are made under the key's lock,
	// so when two writers put one key at once the cache keeps the bytes of
	// the PUT the store took last (without it the first PUT, its response
	// slower, recorded its bytes last: this handle served bytes the store
	// no longer held until the trust window lapsed). Locks itself.
	putLocks keylock.Map
	// changes is what refreshes showed replaced, for a watcher
	// (viewdiff.go); locks itself (refreshLog.mu).
	changes refreshLog

	warnMu   sync.Mutex      // protects the following
	warnings []string        // guarded by warnMu
	warned   map[string]bool // warnings said once per handle (unreadable lists); guarded by warnMu
}

// view is what one open or refresh learned. It is immutable once published,
// except for the caches of prefixCache, which lock themselves.
type view struct {
	// rec is the records of the snapshot read (nil for a directory): the
	// next refresh's conditional reads start from them. It holds the
	// versions, the retired lines and the journal's bad lines, never the
	// journal's lines: journal keeps what a refresh needs of them.
	rec           *store.Snapshot
	modTime       time.Time // the snapshot's ModTime
	journalText   bool      // rec holds the journal's text (JournalText)
	mode          string
	legacy        bool // the older one-list keys are read (no marker)
	base          *entrySet
	journal       *journalView // which entries have journal lines (journalmarks.go)
	pc            *prefixCache // nil when folded
	live, retired []store.ListInfo
	malformed     int
	mals          []malformed
	openReq       store.Counts
	listNames     []string
	read          readTicks // when the records were read (ownlines.go)
}

// records is the part of sn a view keeps for the next refresh's
// conditional reads (store.ReadSnapshotSince): the records' versions and
// what ReadSnapshotSince copies of an unchanged record, but for the
// journal's lines. An unchanged journal then comes back with no lines, and
// the refresh takes its entries from the view's marks (journalFrom).
// It keeps the records' text for JournalText and RetiredText too
// (snapshotView drops a long journal's).
func records(sn *store.Snapshot) *store.Snapshot {
	return &store.Snapshot{
		JournalVersion: sn.JournalVersion, JournalBad: sn.JournalBad, JournalText: sn.JournalText, JournalSum: sn.JournalSum,
		Retired: sn.Retired, RetiredVersion: sn.RetiredVersion, RetiredBad: sn.RetiredBad, RetiredText: sn.RetiredText,
	}
}

// Open returns a handle on st. It is lazy: nothing is read until the first
// lookup or Load.
func Open(ctx context.Context, st *store.Store, opts Options) (*Index, error) {
	if st == nil {
		return nil, errors.New("index: nil store")
	}
	ix := &Index{st: st, warnFn: opts.Warn, appendFn: journal.Append, warned: map[string]bool{}, lcache: opts.ListCache, lcacheStore: cacheStoreID(st.URL()), buildWorkers: buildWorkers(opts.BuildWorkers)}
	if ix.warnFn == nil {
		ix.warnFn = func(msg string) { log.Printf("oxyfs: %s", msg) }
	}
	max := opts.SigCacheBytes
	if max <= 0 {
		max = defaultSigCacheBytes()
	}
	ix.sigs = newSigCache(max, knownSizesFor(memoryLimit()))
	if opts.ReaderBytes > 0 {
		ix.sigs.readers.max = opts.ReaderBytes
	}
	ix.ra.init(ix, opts.ReadAhead, opts.ReadAheadWorkers)
	switch ix.keepJournal = opts.KeepJournalText; {
	case ix.keepJournal == 0:
		ix.keepJournal = DefaultKeepJournalText
	case ix.keepJournal < 0:
		ix.keepJournal = -1
	}
	ix.own.init()
	ix.commit.init(ix)
	return ix, nil
}

// Store returns the store the index reads.
func (ix *Index) Store() *store.Store { return ix.st }

// ModTime is the store's last change as the current view knows it (the
// newest key its pack listing showed: store.Snapshot.ModTime), or zero
// before the first open, in the directory layout, or when the backend
// reports no times. It costs nothing: the open already read it.
func (ix *Index) ModTime() time.Time {
	if v := ix.v.Load(); v != nil {
		return v.modTime
	}
	return time.Time{}
}

// Generation bumps whenever the visible tree changes: a refresh that changed
// something, an own write. Caches of the tree (FUSE) invalidate on it.
func (ix *Index) Generation() uint64 { return ix.gen.Load() }

// current returns the published view, loading it on first use.
func (ix *Index) current(ctx context.Context) (*view, error) {
	if v := ix.v.Load(); v != nil {
		return v, nil
	}
	if err := ix.Load(ctx); err != nil {
		return nil, err
	}
	return ix.v.Load(), nil
}

// warn reports a warning and keeps it for Status.
func (ix *Index) warn(msg string) {
	ix.warnMu.Lock()
	ix.warnings = append(ix.warnings, termsafe.Redact(msg))
	if len(ix.warnings) > maxWarnings {
		ix.warnings = slices.Delete(ix.warnings, 0, len(ix.warnings)-maxWarnings)
	}
	ix.warnMu.Unlock()
	ix.warnFn(msg)
}

// warnOnce reports a warning the first time its id is seen by this handle.
func (ix *Index) warnOnce(id, msg string) {
	ix.warnMu.Lock()
	seen := ix.warned[id]
	ix.warned[id] = true
	ix.warnMu.Unlock()
	if !seen {
		ix.warn(msg)
	}
}

// Status is what an open learned and what it cost, for .oxy/status.
type Status struct {
	URL             string           `json:"url"`
	Layout          string           `json:"layout"`
	Loaded          bool             `json:"loaded"`
	Folded          bool             `json:"folded"` // the entries are a folded set (Mode ModeFolded)
	Mode            string           `json:"mode"`
	LiveLists       []store.ListInfo `json:"live_lists"`
	RetiredLists    []store.ListInfo `json:"retired_lists"`
	JournalLines    int              `json:"journal_lines"`
	JournalFolded   int              `json:"journal_folded"`
	JournalUnfolded int              `json:"journal_unfolded"`
	EntriesPerKind  map[string]int   `json:"entries_per_kind"`
	Entries         int              `json:"entries"`
	// EntriesCounted is whether Entries and EntriesPerKind count the
	// store's entries: true when folded (the set is held). In the prefix
	// modes nothing holds the set — names are listed per directory when
	// asked — and the counts are only what memory holds: journal lines
	// and own writes. A renderer says so rather than show the counts as
	// the store's.
	EntriesCounted bool `json:"entries_counted"`
	OwnWrites      int  `json:"own_writes"`
	Malformed      int  `json:"malformed"`
	// ListedMissing counts the signatures a journal line, a list or a
	// listing names whose key a read found gone (missing.go): distinct
	// keys since the open, each warned of once.
	ListedMissing  int64        `json:"listed_missing"`
	Warnings       []string     `json:"warnings"`
	Requests       store.Counts `json:"requests"`
	OpenRequests   store.Counts `json:"open_requests"`
	LegacyRead     bool         `json:"legacy_read"`
	MemoryBytes    int64        `json:"memory_bytes"`
	Generation     uint64       `json:"generation"`
	JournalAppends int64        `json:"journal_appends"`
	JournalKeys    int64        `json:"journal_keys"`
	SigCacheBytes  int64        `json:"sig_cache_bytes"`
	SigCacheBound  int64        `json:"sig_cache_bound"` // what the signature cache may hold (Options.SigCacheBytes)
	// SigSizesBound is what the table of the sizes of signatures read
	// may hold (sigCache.sizes: its most sizes × sizeItemBytes), beside
	// the cache's bound. MemoryBound is the heap a process serving the
	// index is held to once its open settled (memory.go): the set
	// (MemoryBytes), the signature cache's bound, the sizes' bound and
	// the collector's headroom past them (gcHeadroomBytes, 64 MiB), which
	// the rest — the runtime, go-fuse, buffers — lives in.
	SigSizesBound   int64        `json:"sig_sizes_bound"`
	MemoryBound     int64        `json:"memory_bound"`
	Refreshes       int64        `json:"refreshes"`
	LastRefresh     store.Counts `json:"last_refresh_requests"` // what the last Refresh sent (concurrent requests included)
	RefreshFailures int64        `json:"refresh_failures"`      // Refreshes that returned an error (counted in Refreshes too)
	// LastRefreshTime is when the last Refresh ended (zero: none yet),
	// LastRefreshError its error ("" if it succeeded), redacted as every
	// error of the store is.
	LastRefreshTime  time.Time      `json:"last_refresh_time,omitzero"`
	LastRefreshError string         `json:"last_refresh_error,omitempty"`
	SigCache         SigCacheStats  `json:"sig_cache"`
	Readers          ReadersStats   `json:"readers"` // the bytes open readers hold (OpenSig)
	ReadAhead        ReadAheadStats `json:"read_ahead"`
	// ListCache: the entry lists mapped from the list cache and read from
	// the store, and the cache's directory, bound and use.
	ListCache ListCacheStats `json:"list_cache"`
	// Conditions is whether the server honours conditional writes, as
	// this process found before its first write (store.ConditionsVerdict).
	Conditions store.ConditionsVerdict `json:"conditions"`
}

// refreshEnd is when a Refresh ended and its error ("" if none).
type refreshEnd struct {
	at  time.Time
	err string
}

// Status reports the handle's state. It sends no request. In the prefix
// modes the entry counts are what memory holds (journal lines and own
// writes), not the store's total, and EntriesCounted is false.
func (ix *Index) Status() Status {
	s := Status{
		URL:            ix.st.URL(),
		Layout:         ix.st.Layout().String(),
		EntriesPerKind: map[string]int{},
		Requests:       ix.st.Counts(),
		Generation:     ix.gen.Load(),
		JournalAppends: ix.commit.appends.Load(),
		JournalKeys:    ix.commit.keys.Load(),
		SigCacheBytes:  ix.sigs.used(),
		SigCacheBound:  ix.sigs.max,
		SigSizesBound:  ix.sigs.sizesBound(),
		OwnWrites:      ix.own.len(),
		Refreshes:      ix.refreshes.Load(),
		ListedMissing:  ix.missing.count.Load(),
		Conditions:     ix.st.ConditionsVerdict(),
	}
	if c := ix.lastRefresh.Load(); c != nil {
		s.LastRefresh = *c
	}
	if e := ix.refreshEnd.Load(); e != nil {
		s.LastRefreshTime, s.LastRefreshError = e.at, e.err
	}
	s.RefreshFailures = ix.refreshFail.Load()
	s.MemoryBound = s.SigCacheBound + s.SigSizesBound + gcHeadroomBytes // and the set's, once loaded
	s.SigCache = ix.sigs.stats()
	s.Readers = ix.ReadersStats()
	s.ReadAhead = ix.ra.stats()
	s.ListCache = ix.listCacheStats()
	for _, k := range format.Kinds {
		s.EntriesPerKind[k.String()] = 0
	}
	ix.warnMu.Lock()
	s.Warnings = slices.Clone(ix.warnings)
	ix.warnMu.Unlock()
	v := ix.v.Load()
	if v == nil {
		s.Mode = "not loaded"
		return s
	}
	// Folded is what the mode says (ModeFolded: the entries are the set
	// of the lists and the journal), not whether the store has a live
	// complete list: a folded store whose lists are not trusted (a
	// retired line that may retire one) or cannot be read is read by
	// listing prefixes.
	s.Loaded, s.Folded, s.Mode = true, v.mode == ModeFolded, v.mode
	s.EntriesCounted = v.pc == nil
	s.LiveLists, s.RetiredLists = slices.Clone(v.live), slices.Clone(v.retired)
	s.JournalLines, s.JournalFolded, s.JournalUnfolded = v.journal.lines, v.journal.folded, v.journal.lines-v.journal.folded
	s.Malformed = v.malformed
	if v.pc != nil {
		s.Malformed += int(v.pc.malformed.Load())
	}
	s.OpenRequests, s.LegacyRead = v.openReq, v.legacy
	s.MemoryBytes = v.base.memoryBytes() + v.journal.bytes()
	s.MemoryBound += s.MemoryBytes
	for _, k := range format.Kinds {
		n := v.base.kinds[k].nEntries() + ix.own.countNew(k, v.base)
		s.EntriesPerKind[k.String()] = n
		s.Entries += n
	}
	return s
}

// Close waits for pending journal appends and stops the committer, and
// cancels the read-ahead GETs in flight and waits for them. Reads keep
// working (with no read-ahead); writes fail with ErrClosed.
func (ix *Index) Close() error {
	ix.commit.close()
	ix.ra.close()
	if ix.lcache != nil {
		ix.lcache.Wait() // the lists decoded are there for the next open
	}
	return nil
}

// EntriesText is the entry count of s in words: the count when the set is
// held, else that the store's entries are not counted in this mode and
// how many memory holds.
func (s Status) EntriesText() string {
	if !s.Loaded || s.EntriesCounted {
		return fmt.Sprintf("%d entries", s.Entries)
	}
	if s.Entries == 0 {
		return fmt.Sprintf("entries not counted (%s: names are listed per directory when asked)", s.Mode)
	}
	return fmt.Sprintf("entries not counted (%s: names are listed per directory when asked; %d of this handle's own writes held)", s.Mode, s.Entries)
}
