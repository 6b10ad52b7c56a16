package store

import "strconv"

// JournalLine is one line of the journal JournalKey (spec §13.7): an entry
// key and the wall time in milliseconds at which a fold folded it, 0 until
// one does.
type JournalLine struct {
	FoldedAt int64 // wall ms; 0 = unfolded
	Key      string
}

// Folded reports whether a fold has folded the line.
func (l JournalLine) Folded() bool { return l.FoldedAt != 0 }

// ParseJournal parses the journal: UTF-8 lines "<folded-at> <key>\n" in
// append order (DESIGN §3). An absent or empty journal has no lines; a final
// line without "\n" is accepted.
//
// folded-at is decimal digits only (no sign) and fits an int64. The line is
// split at its first space, since a key's value may hold spaces. A line that
// breaks a rule is skipped and returned in bad: a blank line, a line ending
// in "\r", a line without a space, a bad folded-at, and a key that does not
// ParseKey (that LineError wraps the ParseKey error, so it is ErrBadKey too).
// The keys of lines share one copy of data.
func ParseJournal(data []byte) (lines []JournalLine, bad []*LineError) {
	eachLine(string(data), func(num int, line string) {
		ms, key, err := parseTimedLine(line, "folded-at")
		if err == nil {
			_, err = ParseKey(key)
		}
		if err != nil {
			bad = append(bad, lineError(num, line, err))
			return
		}
		lines = append(lines, JournalLine{FoldedAt: ms, Key: key})
	})
	return lines, bad
}

// FormatJournal formats lines as the journal. It never fails: the caller
// guarantees valid keys and non-negative times.
func FormatJournal(lines []JournalLine) []byte {
	n := 0
	for _, l := range lines {
		n += len(l.Key) + 16
	}
	dst := make([]byte, 0, n)
	for _, l := range lines {
		dst = AppendJournalLine(dst, l)
	}
	return dst
}

// AppendJournalLine appends the journal line "<folded-at> <key>\n" to dst.
func AppendJournalLine(dst []byte, l JournalLine) []byte {
	dst = strconv.AppendInt(dst, l.FoldedAt, 10)
	dst = append(dst, ' ')
	dst = append(dst, l.Key...)
	return append(dst, '\n')
}
