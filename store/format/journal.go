package format

import "strings"

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
// line without "\n" is accepted. A line that breaks a rule of
// ParseJournalLine is skipped and counted in bad, which keeps the first
// MaxBadLineSamples as examples. The keys of lines share one copy of data.
// ParseJournalRecord keeps the lines that do not parse instead.
func ParseJournal(data []byte) (lines []JournalLine, bad BadLines) {
	return parseLines(string(data), false, ParseJournalLine)
}

// ParseJournalLine parses one journal line (without "\n"). folded-at
// follows LineTime's rules. The line is split at its first space, since a
// key's value may hold spaces. A CRLF line ending is accepted: one final
// "\r" is not part of the key (no entry key holds a "\r"), so a journal an
// editor or a tool saved with CRLF line endings hides no entry (issue 42);
// a rewrite of the journal (format.JournalRecord) writes such a line back
// with "\n" alone. The rules a line may break: a blank line, a line
// without a space, a bad folded-at, and a key that does not ParseKey (that
// error wraps the ParseKey error, so it is ErrBadKey too).
func ParseJournalLine(line string) (JournalLine, error) {
	ms, key, err := parseTimedLine(strings.TrimSuffix(line, "\r"), "folded-at", checkEntryKey)
	return JournalLine{FoldedAt: ms, Key: key}, err
}

func checkEntryKey(key string) error {
	_, err := ParseKey(key)
	return err
}

// Journal formats lines as the journal. It never fails: the caller
// guarantees valid keys and non-negative times.
func Journal(lines []JournalLine) []byte { return formatLines(lines) }

// AppendJournalLine appends the journal line "<folded-at> <key>\n" to dst.
func AppendJournalLine(dst []byte, l JournalLine) []byte { return l.appendTo(dst) }

// ParseJournalText is ParseJournal of a journal already held as a string:
// the keys of lines are pieces of text, not a copy.
func ParseJournalText(text string) (lines []JournalLine, bad BadLines) {
	return parseLines(text, false, ParseJournalLine)
}
