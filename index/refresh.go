package index

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// refreshSnapshot reads the snapshot an open or a refresh works from. A
// first open reads it in full (store.ReadSnapshot: 1 LIST + 2 GETs). A
// refresh re-reads the journal and the retired record with one conditional
// GET each (store.ReadSnapshotSince); on a folded view whose two records are
// both unchanged it returns nil: nothing the view shows can have changed,
// and the refresh is done for 2 GETs and no LIST. Otherwise it lists the
// pack prefix as an open does, and the caller reads only the lists prev
// does not hold (foldedBase).
//
// # Why two unchanged records mean an unchanged live set
//
// A folded reader's set is the live lists (listed, not named by the retired
// record) ∪ the journal's lines. With the journal and the retired record
// unchanged since prev's snapshot, the journal part is prev's and so is the
// retired set, so the set can differ only by a list that appeared (lists
// are only ever deleted after being retired, and retiring changes the
// record). Every path in fold that writes a list also changes a record:
//
//   - journal.Append adds its lines in one journal update, then
//     partialFrom writes pack-<id>.entries-part and marks the lines folded
//     (journal update). Its keys are journal lines: until the mark lands the
//     reader has every one of them already.
//   - fold.Complete writes pack-<id>.entries, then retires every other live
//     list of its snapshot (retired record update), then marks the
//     unfolded lines it read (journal update). When the set is one a live
//     list holds it writes nothing; when the list is retired it defers and
//     writes nothing.
//   - fold.Collect deletes only keys the retired record names and then
//     drops their lines (retired record update), drops expired or forgotten
//     journal lines (journal update), then runs fold.Complete.
//   - the legacy fold writes per-object keys and the marker, which a folded
//     reader does not read.
//
// And every entry a journaling writer adds reaches a folded reader through
// the journal: its line is appended after its key (journal update), is
// dropped only an hour after a fold marked it, and the list that fold wrote
// holds its key and stays live until a complete fold retires it (retired
// record update) in favour of a list that holds every per-object key it
// listed. So the one thing an unchanged pair of records can hide is a
// complete list written by a fold that neither retired nor marked anything:
// its snapshot had no live list, and no unfolded journal line (or another
// fold marked them first). Such a fold runs on a store that was not folded
// when it started. A reader of a store that is not folded is not in folded
// mode, and its refresh always lists (list = true below). The reader can be
// folded only if another fold's complete list appeared between that fold's
// snapshot and its write (two first folds at once): the second list, written
// after the reader's snapshot, then stays unseen until either record changes
// (the next writer's line, the next fold or collection). What it can hold
// beyond the reader's set are entries of older writers, which keep no
// journal and which spec §13.7 already lets a folded reader miss until a
// complete fold; no journaled entry is ever missed.
//
// In the prefix modes the listings may change with neither record (any
// per-object key), so a refresh there always lists the pack prefix and
// drops them; a directory re-reads its marker and drops them.
//
// # Why only within the hour
//
// Unchanged bytes are not an unchanged history: S3's ETag is the content's
// MD5, and the file and mem backends compare content, so a record that
// changed and changed back reads as "not modified". Both records can return
// to bytes a reader saw: a fold retires a list (a retired line) and marks
// lines (folded-at), a collection an hour later deletes the list and drops
// its retired line, and writers' updates drop the folded lines past their
// hour. Meanwhile the live lists changed. What bounds this is that every
// change above lasts at least format.GracePeriod: a retired line is dropped
// only after its key is deleted, an hour after it was retired, and a folded
// line only an hour after it was marked. So if the reader looked at the
// records less than an hour ago and saw prev's bytes, and sees them again
// now, no change can have come and gone in between. The hour is kept on
// the store's clock (writers stamp and compare its time, and folds and
// collections refuse a host clock over store.ClockMargin off it), and so
// is the window (storeclock.go: trustsRecords). trustWindow keeps a
// margin below the hour for the clocks of writers that stamp their own;
// a refresh whose last look at prev's records is older than that lists the
// pack prefix (1 LIST, and the lists it does not hold) — so does every
// refresh of a handle refreshed less often than every trustWindow.
//
// # An unchanged journal is not read again
//
// A view keeps the records' versions (view.rec), not the journal's lines:
// they would cost more than the set itself right after a fold, whose
// folded lines stay an hour. So when the journal is unchanged,
// ReadSnapshotSince hands back a snapshot with no journal lines, whether
// or not the lists changed. A refresh whose lists are prev's keeps prev's
// set and marks. One whose lists changed (a complete fold between its
// retire and its mark, a collection, a refresh past trustWindow) needs the
// journal's entries to build the new set: it takes them from prev's marks
// (journalFrom), which name exactly the entries of prev's set that have a
// line, with each signature's line counts. Those are the entries a fresh
// open would read from the journal (the same version is the same bytes),
// for no request more than the conditional GET that found it unchanged.
func (ix *Index) refreshSnapshot(ctx context.Context, prev *view) (*store.Snapshot, error) {
	if prev == nil || prev.rec == nil {
		return ix.st.ReadSnapshot(ctx)
	}
	list := prev.mode != ModeFolded || !ix.trustsRecords() // storeclock.go
	sn, changed, err := ix.st.ReadSnapshotSince(ctx, prev.rec, list)
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

// trustWindow is how long a look at the journal and the retired record lets
// a refresh trust their unchanged bytes (see refreshSnapshot): the hour
// every change to them lasts, less a margin for clocks.
const trustWindow = format.GracePeriod - 10*time.Minute

// lookOutlived reports whether this handle's last look at the records is
// trustWindow old or older on the store's clock, or of a time not known
// (lookAge): a refresh then cannot tell from the journal what came and went
// since (a line folded and dropped past its hour), so it trusts no
// signature it cached (sigCache.invalidateRefresh). It is the negation of
// the window trustsRecords asks for (lookWithin), skew aside: the same
// look, the same clock, the same arithmetic.
func (ix *Index) lookOutlived() bool { return !ix.lookWithin() }
