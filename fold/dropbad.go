package fold

import (
	"context"
	"errors"
	"fmt"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// DroppedLines says what a fold's --drop-malformed step moved out of the
// records (or, in a dry run, would move).
type DroppedLines struct {
	Journal []string `json:"journal"` // journal lines that did not parse, verbatim
	Retired []string `json:"retired"` // retired record lines that did not parse, verbatim
	// Rewritten names the records rewritten (a cut or blank line only is
	// rewritten too: the rewrite ends the cut line, drops the blank ones).
	Rewritten []string `json:"rewritten"`
	CASTries  int      `json:"cas_tries"`
}

// SaveLines saves the lines a repair removes from a record before it
// removes them (Options.SaveDropped): it must have them on stable storage
// (written and synced) when it returns nil. record is the record's key.
type SaveLines func(record string, lines []string) error

// dropMalformed removes the lines of the journal and of the retired record
// that do not parse (issue 42), each record in one compare-and-swap update
// (store.UpdateRecord) recomputed from the record as it is at each try, so a
// line another writer added meanwhile is never dropped: only lines that do
// not parse in the record the update replaces are. Before each try's write,
// save is given the lines of that try not saved by an earlier try; an error
// from it ends the update with nothing written. A blank line carries
// nothing: it is dropped, not saved. The rewrite keeps every line that
// parses (format.Record.Text: a CRLF line is written with "\n") and ends a
// cut last line. dry reads each record once (no update: the store may be
// read-only) and reports what would be dropped.
func dropMalformed(ctx context.Context, st *store.Store, dry bool, save SaveLines, w *warner) (DroppedLines, error) {
	var d DroppedLines
	for _, r := range []struct {
		key   string
		split func([]byte) ([]byte, []string, bool)
		out   *[]string
	}{
		{format.JournalKey, splitJournal, &d.Journal},
		{format.RetiredKey, splitRetired, &d.Retired},
	} {
		if dry {
			old, _, err := st.ReadRecord(ctx, r.key)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return d, fmt.Errorf("read %s: %w", r.key, err)
			}
			_, *r.out, _ = r.split(old)
			for _, l := range *r.out {
				w.warn("%s: line %s does not parse: to drop", r.key, quoteText(l, 80))
			}
			continue
		}
		saved := map[string]int{} // line → times saved by earlier tries
		res, err := st.UpdateRecord(ctx, r.key, func(old []byte, _ bool) ([]byte, error) {
			text, bad, changed := r.split(old)
			*r.out = bad
			if !changed {
				return nil, store.ErrNoChange
			}
			left := make(map[string]int, len(saved))
			for k, n := range saved {
				left[k] = n
			}
			var need []string
			for _, l := range bad {
				if left[l] > 0 {
					left[l]--
				} else {
					need = append(need, l)
				}
			}
			if len(need) > 0 {
				if save == nil {
					return nil, errors.New("no file to save the lines to")
				}
				if err := save(r.key, need); err != nil {
					return nil, fmt.Errorf("save %d lines of %s before dropping them: %w", len(need), r.key, err)
				}
				for _, l := range need {
					saved[l]++
				}
			}
			return text, nil
		})
		d.CASTries += res.Tries
		if err != nil {
			return d, fmt.Errorf("drop malformed lines of %s: %w", r.key, err)
		}
		if res.Wrote {
			d.Rewritten = append(d.Rewritten, r.key)
		}
		for _, l := range *r.out {
			w.warn("%s: line %s does not parse: saved and dropped", r.key, quoteText(l, 80))
		}
	}
	return d, nil
}

// splitJournal is the journal old without its lines that do not parse,
// those lines, and whether that differs from old.
func splitJournal(old []byte) ([]byte, []string, bool) {
	rec := format.ParseJournalRecord(old)
	var bad []string
	rec.Lines, bad = dropBadLines(rec.Lines, func(l format.RecordLine[format.JournalLine]) (string, bool) { return l.Raw, l.Bad() })
	return rec.Text(), bad, rec.Bad.Count > 0 || cut(old)
}

// splitRetired is splitJournal for the retired record.
func splitRetired(old []byte) ([]byte, []string, bool) {
	rec := format.ParseRetiredRecord(old)
	var bad []string
	rec.Lines, bad = dropBadLines(rec.Lines, func(l format.RecordLine[format.RetiredLine]) (string, bool) { return l.Raw, l.Bad() })
	return rec.Text(), bad, rec.Bad.Count > 0 || cut(old)
}

// dropBadLines keeps the lines bad says parse (in place, in order) and
// returns the raw text of the others.
func dropBadLines[L any](lines []L, bad func(L) (raw string, isBad bool)) ([]L, []string) {
	var dropped []string
	kept := lines[:0]
	for _, l := range lines {
		if raw, isBad := bad(l); isBad {
			dropped = append(dropped, raw)
		} else {
			kept = append(kept, l)
		}
	}
	return kept, dropped
}

// cut reports whether a record ends in the middle of a line.
func cut(data []byte) bool { return len(data) > 0 && data[len(data)-1] != '\n' }
