package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// A Load and a Refresh are one sequence, run under loadMu, of four named
// steps over a refreshRun (docs/design.md §8 "The refresh sequence"):
//
//  1. read: the records (refreshSnapshot; a directory's marker), as of a
//     look whose time on the store's clock the run keeps (lookStart);
//  2. build: the view from them (buildView: load.go), or prev itself when
//     the records are unchanged and trusted;
//  3. invalidate: what the change makes old, before anyone sees the new
//     view: the signature cache (sigCache.invalidateRefresh, and the keys
//     this handle's own lines cannot vouch for: ownlines.go), a watcher's
//     log (noteRefresh: viewdiff.go), the forget records' objects
//     (invalidateForgotten: forgotten.go);
//  4. publish: the view stored, the list texts kept, read-ahead's plan
//     dropped, own writes the view holds pruned, what a collection forgot
//     dropped from the cache (dropAbsent: after the swap, so that no read
//     starting after it caches it again from the view before), the
//     generation bumped, and the subscribers told (Subscribe: subscribe.go).
//
// Why unchanged records are trusted, and only within trustWindow: docs/
// design.md §8, "Why an unchanged journal and retired record mean an
// unchanged set" and "Why only within the hour".

// refreshRun is one Load or Refresh: what each step leaves for the next.
// It lives on the goroutine that holds loadMu.
type refreshRun struct {
	ctx     context.Context
	load    bool  // a Load: no view was published before, nothing to invalidate
	prev    *view // the published view (nil before the first)
	trusted bool  // prev's last look is within the trust window (lookTrusted)
	mark    uint64
	before  store.Counts // the store's requests at start
	looked  func() int64 // lookStart's: the look's time on the store's clock
	begun   uint64       // ownLog's tick at start (ownlines.go)

	sn     *store.Snapshot // read: the records; nil when prev is kept or a directory
	marker bool            // read: a directory's legacy-folded marker exists
	v      *view           // build: the view; prev itself when nothing changed
	read   readTicks       // build: when the records were read (ownlines.go)
	absent bool            // invalidate: a collection may have forgotten cached signatures (dropAbsent)
}

// Load opens the index: reads what the store's layout asks for (spec §13.7
// "Reading"). It is idempotent; a failed Load is retried by the next lookup.
func (ix *Index) Load(ctx context.Context) error {
	if ix.v.Load() != nil {
		return nil
	}
	ix.loadMu.Lock()
	defer ix.loadMu.Unlock()
	if ix.v.Load() != nil {
		return nil
	}
	_, err := ix.run(ctx, true)
	return err
}

// Refresh reads the lists and the journal again, for no more requests than
// an open. On a folded store it first re-reads the journal and the retired
// record with a conditional GET each; when neither changed (and the last
// look is within the trust window) it is done (2 GETs, no LIST). Otherwise
// it lists the pack prefix and reads the lists it does not hold. In the
// prefix modes it always lists and drops the listings. Own writes stay
// visible. It returns once the subscribers have been told (Subscribe).
func (ix *Index) Refresh(ctx context.Context) (err error) {
	told, err := ix.refreshLocked(ctx)
	if err == nil {
		ix.sigs.waitTold(ctx, ix.ra.ctx, told) // outside loadMu
	}
	return err
}

func (ix *Index) refreshLocked(ctx context.Context) (told uint64, err error) {
	ix.loadMu.Lock()
	defer ix.loadMu.Unlock()
	defer ix.countRefresh(ix.st.Counts(), &err)
	return ix.run(ctx, false)
}

// countRefresh records a Refresh's end for Status: its requests (since
// before), its time and its error.
func (ix *Index) countRefresh(before store.Counts, err *error) {
	ix.refreshes.Add(1)
	d := ix.st.Counts().Sub(before)
	ix.lastRefresh.Store(&d)
	end := &refreshEnd{at: time.Now()}
	if *err != nil {
		ix.refreshFail.Add(1)
		end.err = termsafe.Redact((*err).Error()) // Status shows it: .oxy/status, serve's JSON
	}
	ix.refreshEnd.Store(end)
}

// run is the sequence: read, build, invalidate, publish. It returns the
// publish's number for waitTold. loadMu is held.
func (ix *Index) run(ctx context.Context, load bool) (uint64, error) {
	var r0 refreshRun // on the stack: a quiet refresh allocates no more than before
	r := &r0
	ix.begin(ctx, r, load)
	if err := ix.readRecords(r); err != nil {
		return 0, err
	}
	if err := ix.buildView(r); err != nil {
		return 0, err
	}
	ix.invalidate(r)
	return ix.publish(r), nil
}

// begin starts a run: the view it starts from, the trust window's answer
// (asked once: the read and the invalidation take the same one), and
// what the later steps measure from.
func (ix *Index) begin(ctx context.Context, r *refreshRun, load bool) {
	*r = refreshRun{ctx: ctx, load: load, prev: ix.v.Load()}
	r.mark = ix.own.mark() // own writes before it are in what the read sees
	if r.prev != nil {
		r.trusted = ix.lookTrusted() // storeclock.go
	}
	r.before = ix.st.Counts()
	r.looked = ix.lookStart() // storeclock.go
	r.begun = ix.chain.now()
}

// readRecords is the read step: a directory's marker, or a bucket's
// records (refreshSnapshot). r.sn stays nil when prev's records are
// unchanged and trusted.
func (ix *Index) readRecords(r *refreshRun) error {
	if ix.st.Layout() == store.LayoutDirectory {
		marker, err := ix.st.Exists(r.ctx, format.LegacyFoldedMarker)
		if err != nil {
			return fmt.Errorf("open index: %w", err)
		}
		r.marker = marker
		return nil
	}
	sn, err := ix.refreshSnapshot(r)
	if err != nil {
		return fmt.Errorf("open index: %w", err)
	}
	r.sn = sn
	return nil
}

// refreshSnapshot reads the snapshot an open or a refresh works from. A
// first open reads it in full (store.ReadSnapshot: 1 LIST + 2 GETs). A
// refresh re-reads the journal and the retired record with one conditional
// GET each (store.ReadSnapshotSince); on a folded view whose two records are
// both unchanged, and whose last look is within the trust window
// (r.trusted), it returns nil: nothing the view shows can have changed
// (docs/design.md §8), and the refresh is done for 2 GETs and no LIST.
// Otherwise it lists the pack prefix as an open does, and the build reads
// only the lists prev does not hold (foldedBase). In the prefix modes the
// listings may change with neither record (any per-object key), so it
// always lists.
//
// A view keeps the records' versions (view.rec), not the journal's lines:
// an unchanged journal comes back with no lines, and a build whose lists
// changed takes the journal's entries from prev's marks (journalFrom) —
// exactly what reading the journal again would give (the same version is
// the same bytes), for no request more.
func (ix *Index) refreshSnapshot(r *refreshRun) (*store.Snapshot, error) {
	prev := r.prev
	if prev == nil || prev.rec == nil {
		return ix.st.ReadSnapshot(r.ctx)
	}
	list := prev.mode != ModeFolded || !r.trusted
	sn, changed, err := ix.st.ReadSnapshotSince(r.ctx, prev.rec, list)
	if err != nil {
		return nil, err
	}
	if err := recordVanished(prev.rec, sn); err != nil {
		ix.warnOnce("vanished:"+err.Error(), err.Error()+"; keeping the previous view")
		return nil, err
	}
	if !changed && !list {
		return nil, nil
	}
	return sn, nil
}

// ErrRecordVanished is the error of a refresh that got 404 for the journal
// or the retired record although this handle had read it. Nothing deletes
// either record (spec §13.7: both change only by compare-and-swap), so the
// answer is a lie or a stale read, not the record's absence: taken at its
// word it would drop every journal-only entry (the journal) or make every
// retired list live again and bring forgotten entries back (the retired
// record). The refresh
// fails, and the handle keeps serving its previous view, as it does when
// the server does not answer.
var ErrRecordVanished = errors.New("a record this handle read answers 404")

// recordVanished returns an error wrapping ErrRecordVanished when sn lacks
// a record prev held.
func recordVanished(prev, sn *store.Snapshot) error {
	if sn == nil {
		return nil
	}
	for _, r := range []struct {
		key        string
		was, isNow bool
	}{
		{format.JournalKey, prev.JournalVersion.Exists, sn.JournalVersion.Exists},
		{format.RetiredKey, prev.RetiredVersion.Exists, sn.RetiredVersion.Exists},
	} {
		if r.was && !r.isNow {
			return fmt.Errorf("refresh: %s: %w (nothing deletes it: a lying server or a stale read)", r.key, ErrRecordVanished)
		}
	}
	return nil
}

// invalidate is the invalidate step: what the new view makes old, before
// anyone sees it. A Load has nothing to compare (only a refresh compares
// lines with a view before); an unchanged view, only the keys this
// handle's own lines cannot vouch for and the forget records.
func (ix *Index) invalidate(r *refreshRun) {
	prev, v := r.prev, r.v
	switch {
	case r.load:
		v.journal.take()
		return
	case v == prev:
		// Both records read as prev's, yet an own line that landed since
		// must have changed the journal: a collection took it away and the
		// journal came back to the same bytes (ownlines.go).
		for k := range ix.chain.since(prev.read, r.read) {
			ix.sigs.invalidate(k)
		}
		// A forget record still named: its objects may have been put
		// again since, the records left as they were (forgotten.go).
		ix.invalidateForgotten(r.ctx, prev, prev)
		ix.chain.prune(r.read)
		return
	}
	outlived := prev != nil && !r.trusted
	var own ownLines
	if prev != nil && prev.rec != nil && v.rec != nil {
		own.only, _ = ix.chain.between(prev.rec.JournalSum, v.rec.JournalSum)
		own.since = ix.chain.since(prev.read, v.read)
	}
	ix.noteRefresh(prev, v, outlived) // before invalidateRefresh takes the lines (viewdiff.go)
	r.absent = ix.sigs.invalidateRefresh(prev, v, outlived, own)
	ix.invalidateForgotten(r.ctx, prev, v) // forgotten.go
	ix.chain.prune(v.read)
}

// publish is the publish step: the view stored and what hangs on it
// brought along, the generation bumped when the tree changed, and the
// subscribers told. It returns the publish's number (waitTold).
func (ix *Index) publish(r *refreshRun) uint64 {
	prev, v := r.prev, r.v
	if v != prev {
		changed := prev == nil || v.mode != ModeFolded || prev.mode != v.mode ||
			!slices.Equal(prev.listNames, v.listNames) || prev.journal.version != v.journal.version || prev.legacy != v.legacy
		ix.v.Store(v)
		ix.lists.keep(v.listNames)
		if !r.load {
			ix.ra.forget()
			if v.mode == ModeFolded {
				ix.own.prune(v.base, r.mark)
			} else {
				// Prefix listings see the per-object keys every own write
				// wrote first; the listings are read afresh after a refresh.
				ix.own.prune(nil, r.mark)
			}
			if r.absent {
				ix.dropAbsent(v)
			}
		}
		if changed {
			ix.gen.Add(1)
		}
	}
	return ix.sigs.notePublished(prev)
}
