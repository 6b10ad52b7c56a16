package store

import (
	"context"
	"errors"
	"fmt"
	"github.com/oxyfs/oxyfs/store/format"
	"sort"
	"strings"
	"sync"
	"time"
)

// ListInfo describes one entry list found by the pack listing.
type ListInfo struct {
	Name     string `json:"name"`
	ID       string `json:"id"`
	Complete bool   `json:"complete"`
	Size     int64  `json:"size"`
	Retired  bool   `json:"retired"`
}

// Snapshot is what an open learns from one LIST of the pack prefix and one
// GET each of the retired record and the journal: the store's layout at one
// moment. It is read once per open and per refresh.
type Snapshot struct {
	Lists          []ListInfo // every entry list the pack listing found, sorted by name
	Packs          int        // other pack- keys (packs, indexes, dictionaries)
	Marker         bool       // pack-legacy-folded is present
	Irregular      []string   // pack- keys naming no regular file (file://: a symbolic link...), as ListItem.Shown: never read
	Journal        []format.JournalLine
	JournalVersion Version
	JournalBad     format.BadLines // the journal's lines that do not parse
	JournalSum     uint64          // RecordSum of the journal's bytes as read
	Retired        []format.RetiredLine
	RetiredVersion Version
	RetiredBad     format.BadLines // the retired record's lines that do not parse
	// JournalText and RetiredText are the two records as read ("" when
	// absent). The lines' keys share their bytes, so keeping them costs
	// nothing the lines did not already hold.
	JournalText, RetiredText string
	// ModTime is the newest modification time of the keys the pack listing
	// showed (the journal, the retired record, the lists, the packs): the
	// store's last change as this snapshot knows it, at no extra request.
	// Zero when the backend reports none.
	ModTime time.Time
}

// LiveLists returns the lists that are listed and not retired (spec §13.7).
func (sn *Snapshot) LiveLists() []ListInfo {
	var live []ListInfo
	for _, l := range sn.Lists {
		if !l.Retired {
			live = append(live, l)
		}
	}
	return live
}

// Folded reports whether the live lists include a complete one: only then
// may a reader answer lookups from the lists and the journal alone.
func (sn *Snapshot) Folded() bool {
	for _, l := range sn.Lists {
		if !l.Retired && l.Complete {
			return true
		}
	}
	return false
}

// RetiredSet returns the keys the retired record names.
func (sn *Snapshot) RetiredSet() map[string]int64 {
	m := make(map[string]int64, len(sn.Retired))
	for _, r := range sn.Retired {
		if _, ok := m[r.Key]; !ok {
			m[r.Key] = r.RetiredAt
		}
	}
	return m
}

// UnfoldedLines counts journal lines not yet folded.
func (sn *Snapshot) UnfoldedLines() int {
	n := 0
	for _, l := range sn.Journal {
		if !l.Folded() {
			n++
		}
	}
	return n
}

// ReadSnapshot reads the retired record and the journal (one GET each, in
// parallel), then lists the pack prefix (one LIST per page).
//
// The retired record is read BEFORE the listing: a collection deletes a
// retired list and only then drops its retired line, so a listing made after
// the record was read cannot show a list as live that the collection already
// deleted. (Listing first, a list deleted between the two reads would look
// live and be gone.)
func (s *Store) ReadSnapshot(ctx context.Context) (*Snapshot, error) {
	sn := &Snapshot{}
	var wg sync.WaitGroup
	var jerr, rerr error
	var jdata, rdata []byte
	wg.Add(1)
	go func() {
		defer wg.Done()
		jdata, sn.JournalVersion, jerr = s.ReadRecord(ctx, format.JournalKey)
	}()
	rdata, sn.RetiredVersion, rerr = s.ReadRecord(ctx, format.RetiredKey)
	var lerr error
	if rerr == nil {
		lerr = s.listPacks(ctx, sn)
	}
	wg.Wait()
	if err := errors.Join(rerr, jerr, lerr); err != nil {
		return nil, fmt.Errorf("read store layout: %w", err)
	}
	sn.setJournal(jdata)
	sn.setRetired(rdata)
	sn.markRetired()
	return sn, nil
}

// setJournal keeps the journal's text and parses it.
func (sn *Snapshot) setJournal(data []byte) {
	sn.JournalText = string(data)
	sn.JournalSum = RecordSum(data)
	sn.Journal, sn.JournalBad = format.ParseJournalText(sn.JournalText)
}

// setRetired keeps the retired record's text and parses it.
func (sn *Snapshot) setRetired(data []byte) {
	sn.RetiredText = string(data)
	sn.Retired, sn.RetiredBad = format.ParseRetiredText(sn.RetiredText)
}

// listPacks lists the pack prefix (one LIST per page) into sn: the entry
// lists, the marker, the count of other pack- keys.
func (s *Store) listPacks(ctx context.Context, sn *Snapshot) error {
	return s.List(ctx, format.PackPrefix, "", func(it ListItem) error {
		if it.IsDir {
			return nil
		}
		if it.Irregular == "" && it.ModTime.After(sn.ModTime) {
			sn.ModTime = it.ModTime
		}
		switch {
		case it.Irregular != "":
			sn.Irregular = append(sn.Irregular, it.Shown())
		case it.Key == format.JournalKey || it.Key == format.RetiredKey:
		case it.Key == format.LegacyFoldedMarker:
			sn.Marker = true
		case format.IsForgottenName(it.Key):
			// a forget record (format/forgotten.go): read through the
			// retired record, which names it
		default:
			if id, complete, ok := format.ParseEntryListName(it.Key); ok {
				sn.Lists = append(sn.Lists, ListInfo{Name: it.Key, ID: id, Complete: complete, Size: it.Size})
			} else if strings.HasPrefix(it.Key, format.PackPrefix) && !strings.Contains(it.Key, "/") {
				sn.Packs++
			}
		}
		return nil
	})
}

// markRetired flags the lists the retired record names and sorts the lists
// by name.
func (sn *Snapshot) markRetired() {
	retired := sn.RetiredSet()
	for i := range sn.Lists {
		_, sn.Lists[i].Retired = retired[sn.Lists[i].Name]
	}
	sort.Slice(sn.Lists, func(i, j int) bool { return sn.Lists[i].Name < sn.Lists[j].Name })
}

// UncertainLists returns the live lists (listed, no retired line names
// them) that a line of the retired record which does not parse holds by
// name, each with the first such line: the record may retire them or not,
// so a reader cannot tell whether they are live (spec §13.7 "Reading").
// Nil when every line parses.
func (sn *Snapshot) UncertainLists() map[string]*format.LineError {
	if sn.RetiredBad.Count == 0 {
		return nil
	}
	var names []string
	for _, l := range sn.Lists {
		if !l.Retired {
			names = append(names, l.Name)
		}
	}
	return format.BadRetiredLinesNaming(sn.RetiredText, names)
}
