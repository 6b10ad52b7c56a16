package journal

import (
	"context"
	"fmt"

	"github.com/oxyfs/oxyfs/store"
	"github.com/oxyfs/oxyfs/store/format"
)

// The journal is read and written through format.JournalRecord, which keeps
// every line a fold does not understand verbatim in place: a fold never
// drops such a line (another implementation, or a newer oxyfs, may have
// written it). The hour rule is format.JournalLineExpired.

// Mark marks the lines of read (see markRead) folded at the store's now, in
// one compare-and-swap update of the journal that also drops folded lines
// past their hour, as every update does. Partial and a complete fold mark
// the lines they read through it.
func Mark(ctx context.Context, st *store.Store, read []format.JournalLine) (marked, dropped, tries int, err error) {
	res, err := st.UpdateRecord(ctx, format.JournalKey, func(old []byte, _ bool) ([]byte, error) {
		now := st.Clock().NowMs()
		cur := format.ParseJournalRecord(old)
		marked = markRead(cur.Lines, read, now)
		cur.Lines, dropped = dropExpired(cur.Lines, now)
		if marked == 0 && dropped == 0 {
			return nil, store.ErrNoChange
		}
		return cur.Text(), nil
	})
	if err != nil {
		return 0, 0, res.Tries, fmt.Errorf("mark journal lines folded: %w", err)
	}
	if !res.Wrote {
		marked, dropped = 0, 0
	}
	return marked, dropped, res.Tries, nil
}

// dropExpired removes the folded lines past their hour, in place, and
// returns the lines kept and how many it dropped.
func dropExpired(lines []format.RecordLine[format.JournalLine], now int64) ([]format.RecordLine[format.JournalLine], int) {
	kept := lines[:0]
	for _, l := range lines {
		if l.Bad() || !l.Line.Expired(now) {
			kept = append(kept, l)
		}
	}
	return kept, len(lines) - len(kept)
}

// unfolded counts the lines not yet folded.
func unfolded(lines []format.JournalLine) int {
	n := 0
	for _, l := range lines {
		if !l.Folded() {
			n++
		}
	}
	return n
}

// markRead marks as folded at now, in the journal cur, exactly the lines of
// read (the journal as a fold read it, parsed lines only, in order) that were
// unfolded when read and still are. It returns how many it marked.
//
// Journal lines carry no identity, so markRead finds "the same line" by
// order. Every update of the journal only appends lines at its end, removes
// lines, or sets a folded-at from 0 to a time; none inserts a line or
// unfolds one. So the lines of read that survive appear in cur in the same
// order, before every line added since. markRead walks both in step: a line
// of read that cannot be the current line of cur (another key, or folded
// when read but unfolded now) was removed meanwhile and is passed over. Once
// read is used up, the rest of cur was added meanwhile and stays unmarked,
// however many times its keys occur in read (a signer who signs again adds
// the same key again).
//
// The walk is exact unless a line this fold read unfolded was removed while
// it ran (a collection forgot its object, or another fold marked it and its
// hour passed). Then a later line with the same key may be taken for it and
// marked. That is still safe: a line is only ever marked when its key is one
// the fold read unfolded, so its key is in the list the fold wrote.
func markRead(cur []format.RecordLine[format.JournalLine], read []format.JournalLine, now int64) int {
	i, n := 0, 0
	for j := range cur {
		c := &cur[j]
		if c.Bad() {
			continue
		}
		for i < len(read) && !sameLine(read[i], c.Line) {
			i++
		}
		if i == len(read) {
			break
		}
		if !read[i].Folded() && !c.Line.Folded() {
			c.Line.FoldedAt = now
			n++
		}
		i++
	}
	return n
}

// sameLine reports whether c may be the line r: the same key, and not
// unfolded now if it was folded when read.
func sameLine(r, c format.JournalLine) bool {
	return r.Key == c.Key && (!r.Folded() || c.Folded())
}
