package store

import (
	"context"
	"errors"
	"fmt"
	"github.com/oxyfs/oxyfs/store/format"
	"sync"
)

// ReadRecordIfChanged reads a record (the journal, the retired record) only
// if it is no longer at version v: one GET, conditional where the backend
// can make it so. It returns changed false, nil data and v itself when the
// record is still at v, else the record's bytes and new version. A record
// that is gone reads as changed, with nil data and the zero Version; a
// record absent at v (the zero Version) and still absent is unchanged.
//
// How the read is made conditional is the driver's (readIfChanged, in each
// driver_*.go): S3 and Azure send If-None-Match: <ETag> and are answered
// 304 while the record is unchanged; GCS asks GenerationNotMatch (which the
// client's XML-API reads drop: the record is then read in full and its
// generation compared); file and mem read in full and compare the SHA-256.
//
// A 304 is never an error. S3 ETags are content hashes, so a record
// rewritten with the same bytes reads as unchanged: its state is its bytes.
func (s *Store) ReadRecordIfChanged(ctx context.Context, key string, v Version) (data []byte, nv Version, changed bool, err error) {
	if !v.Exists {
		data, nv, err = s.ReadRecord(ctx, key)
		if err != nil {
			return nil, Version{}, false, err
		}
		return data, nv, nv.Exists, nil
	}
	data, tok, err := s.drv.readIfChanged(ctx, key, v.Token)
	switch {
	case errors.Is(err, ErrNotModified):
		return nil, v, false, nil
	case errors.Is(err, ErrNotFound):
		return nil, Version{}, true, nil
	case err != nil:
		return nil, Version{}, false, fmt.Errorf("read record %q if changed: %w", key, err)
	case tok == v.Token:
		return nil, v, false, nil
	}
	return data, Version{Token: tok, Exists: true}, true, nil
}

// ReadSnapshotSince reads the store's layout again after prev, a snapshot
// this handle read earlier: the journal and the retired record with one
// conditional GET each (ReadRecordIfChanged, in parallel). When neither
// changed and list is false, it returns prev itself and changed false: 2
// GETs, no LIST. Otherwise it lists the pack prefix (one LIST per page)
// after both reads, as ReadSnapshot does, and returns a new snapshot whose
// unchanged record is prev's (its lines shared, not copied); changed says
// whether either record changed. The cost is never more than ReadSnapshot's.
//
// Whether an unchanged journal and retired record mean an unchanged store
// is the caller's argument to make (index.Refresh makes it for a folded
// store); list true asks for the listing regardless.
func (s *Store) ReadSnapshotSince(ctx context.Context, prev *Snapshot, list bool) (sn *Snapshot, changed bool, err error) {
	var (
		wg                 sync.WaitGroup
		jdata, rdata       []byte
		jv, rv             Version
		jchanged, rchanged bool
		jerr, rerr         error
	)
	wg.Go(func() {
		jdata, jv, jchanged, jerr = s.ReadRecordIfChanged(ctx, format.JournalKey, prev.JournalVersion)
	})
	rdata, rv, rchanged, rerr = s.ReadRecordIfChanged(ctx, format.RetiredKey, prev.RetiredVersion)
	wg.Wait()
	if err := errors.Join(rerr, jerr); err != nil {
		return nil, false, fmt.Errorf("read store layout again: %w", err)
	}
	changed = jchanged || rchanged
	if !changed && !list {
		return prev, false, nil
	}
	sn = &Snapshot{
		Journal: prev.Journal, JournalVersion: prev.JournalVersion, JournalBad: prev.JournalBad, JournalText: prev.JournalText, JournalSum: prev.JournalSum,
		Retired: prev.Retired, RetiredVersion: prev.RetiredVersion, RetiredBad: prev.RetiredBad, RetiredText: prev.RetiredText,
	}
	if jchanged {
		sn.JournalVersion = jv
		sn.setJournal(jdata)
	}
	if rchanged {
		sn.RetiredVersion = rv
		sn.setRetired(rdata)
	}
	if err := s.listPacks(ctx, sn); err != nil {
		return nil, false, fmt.Errorf("read store layout again: %w", err)
	}
	sn.markRetired()
	return sn, changed, nil
}
