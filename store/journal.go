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
// breaks a rule is skipped and counted in bad, which keeps the first
// MaxBadLineSamples as examples: a blank line, a line ending in "\r", a line
// without a space, a bad folded-at, and a key that does not ParseKey (that
// LineError wraps the ParseKey error, so it is ErrBadKey too). The keys of
// lines share one copy of data.
func ParseJournal(data []byte) (lines []JournalLine, bad BadLines) {
	return parseJournalText(string(data))
}

// parseJournalText is ParseJournal of text the lines' keys then share.
func parseJournalText(text string) (lines []JournalLine, bad BadLines) {
	eachJournalLine(text, func(num int, raw string, l JournalLine, err error) {
		if err != nil {
			bad.Add(num, raw, err)
			return
		}
		lines = append(lines, l)
	})
	return lines, bad
}

// EachJournalLine calls fn for every line of the journal, in order, with its
// 1-based number and text (without "\n"), and either the parsed line or the
// rule it broke (err, as ParseJournal reports it). The strings share one
// copy of data.
func EachJournalLine(data []byte, fn func(num int, raw string, l JournalLine, err error)) {
	eachJournalLine(string(data), fn)
}

func eachJournalLine(text string, fn func(num int, raw string, l JournalLine, err error)) {
	eachLine(text, func(num int, line string) {
		ms, key, err := parseTimedLine(line, "folded-at")
		if err == nil {
			_, err = ParseKey(key)
		}
		if err != nil {
			fn(num, line, JournalLine{}, err)
			return
		}
		fn(num, line, JournalLine{FoldedAt: ms, Key: key}, nil)
	})
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
