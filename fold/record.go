package fold

import (
	"strconv"

	"github.com/oxyfs/oxyfs/store"
)

// line is one line of a record (the journal or the retired record) as a
// fold rewrites it: a parsed line, or a line that did not parse, kept
// verbatim. A fold never drops a line it does not understand: another
// implementation (or a newer oxyfs) may have written it, and Check reports it.
type line struct {
	ms  int64  // folded-at (journal; 0 = unfolded) or retired-at (retired record)
	key string // entry key (journal) or store key (retired record)
	raw string // the line as read when it did not parse; "" for a parsed line
}

func (l line) bad() bool { return l.raw != "" }

// graceMs is store.GracePeriod in wall milliseconds.
var graceMs = store.GracePeriod.Milliseconds()

// expired reports whether a journal line was folded more than
// store.GracePeriod before now: the next update of the journal drops it
// (spec §13.7 "Folding"). An unfolded line never expires.
func expired(l line, now int64) bool {
	return !l.bad() && l.ms != 0 && now-l.ms > graceMs
}

// parseJournalRecord parses the journal for rewriting. bad counts the lines
// that did not parse (and keeps the first as examples); they are kept in
// lines verbatim, except blank lines, which carry nothing and are left out.
// Nothing is allocated per bad line beyond its place in lines.
func parseJournalRecord(data []byte) (lines []line, bad store.BadLines) {
	store.EachJournalLine(data, func(num int, raw string, l store.JournalLine, err error) {
		if err != nil {
			bad.Add(num, raw, err)
			if raw != "" {
				lines = append(lines, line{raw: raw})
			}
			return
		}
		lines = append(lines, line{ms: l.FoldedAt, key: l.Key})
	})
	return lines, bad
}

// parseRetiredRecord parses the retired record for rewriting, as
// parseJournalRecord does the journal.
func parseRetiredRecord(data []byte) (lines []line, bad store.BadLines) {
	store.EachRetiredLine(data, func(num int, raw string, l store.RetiredLine, err error) {
		if err != nil {
			bad.Add(num, raw, err)
			if raw != "" {
				lines = append(lines, line{raw: raw})
			}
			return
		}
		lines = append(lines, line{ms: l.RetiredAt, key: l.Key})
	})
	return lines, bad
}

// formatRecord formats lines as a record: "<ms> <key>\n" for a parsed line,
// the line verbatim for one that did not parse.
func formatRecord(lines []line) []byte {
	n := 0
	for _, l := range lines {
		n += len(l.key) + len(l.raw) + 16
	}
	dst := make([]byte, 0, n)
	for _, l := range lines {
		if l.bad() {
			dst = append(dst, l.raw...)
		} else {
			dst = strconv.AppendInt(dst, l.ms, 10)
			dst = append(dst, ' ')
			dst = append(dst, l.key...)
		}
		dst = append(dst, '\n')
	}
	return dst
}

// fromJournal converts the journal lines of a snapshot.
func fromJournal(jl []store.JournalLine) []line {
	out := make([]line, len(jl))
	for i, l := range jl {
		out[i] = line{ms: l.FoldedAt, key: l.Key}
	}
	return out
}

// dropExpired removes the folded lines past their hour, in place, and
// returns the lines kept and how many it dropped.
func dropExpired(lines []line, now int64) ([]line, int) {
	kept := lines[:0]
	for _, l := range lines {
		if !expired(l, now) {
			kept = append(kept, l)
		}
	}
	return kept, len(lines) - len(kept)
}

// unfolded counts the parsed lines not yet folded.
func unfolded(lines []line) int {
	n := 0
	for _, l := range lines {
		if !l.bad() && l.ms == 0 {
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
func markRead(cur, read []line, now int64) int {
	i, n := 0, 0
	for j := range cur {
		c := &cur[j]
		if c.bad() {
			continue
		}
		for i < len(read) && !sameLine(read[i], *c) {
			i++
		}
		if i == len(read) {
			break
		}
		if read[i].ms == 0 && c.ms == 0 {
			c.ms = now
			n++
		}
		i++
	}
	return n
}

// sameLine reports whether c may be the line r: the same key, and not
// unfolded now if it was folded when read.
func sameLine(r, c line) bool {
	return r.key == c.key && (r.ms == 0 || c.ms != 0)
}
