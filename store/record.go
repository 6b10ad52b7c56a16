package store

import "strconv"

// The records (spec §13.7, DESIGN §3): the journal JournalKey and the
// retired record RetiredKey, both lines "<wall ms> <key>\n". A record is
// read one of two ways:
//
//   - ParseJournal and ParseRetired return only the lines that parse (and
//     count the rest in BadLines): what a reader needs.
//   - ParseJournalRecord and ParseRetiredRecord return every line, the ones
//     that do not parse kept verbatim in place: what a rewrite needs, since
//     an update never drops a line it does not understand (another
//     implementation, or a newer oxyfs, may have written it). AppendText
//     writes the record back.
//
// Every "<ms> <key>" line is written by AppendLine.

// AppendLine appends the record line "<ms> <key>\n" to dst: the one writer
// of journal and retired lines. The caller guarantees a valid key and a
// non-negative time.
func AppendLine(dst []byte, ms int64, key string) []byte {
	dst = strconv.AppendInt(dst, ms, 10)
	dst = append(dst, ' ')
	dst = append(dst, key...)
	return append(dst, '\n')
}

// JournalRecordLine is one line of the journal as a rewrite keeps it: a
// parsed line, or (Raw not "") a line that did not parse, verbatim.
type JournalRecordLine struct {
	JournalLine        // zero when Raw is set
	Raw         string // the line as read (without "\n") when it did not parse; "" for a parsed line
}

// Bad reports whether the line did not parse (and is kept verbatim).
func (l JournalRecordLine) Bad() bool { return l.Raw != "" }

// JournalRecord is the journal as read for a rewrite: every line, in order.
type JournalRecord struct {
	Lines []JournalRecordLine
	Bad   BadLines // the lines that did not parse, blank ones included
}

// ParseJournalRecord parses the journal for a rewrite. Its lines follow
// ParseJournal's rules; a line that breaks one is counted in Bad and kept
// in Lines verbatim, except a blank line, which carries nothing and is left
// out. Nothing is allocated per bad line beyond its place in Lines, and the
// strings share one copy of data.
func ParseJournalRecord(data []byte) JournalRecord {
	lines, bad := parseRecord(string(data), ParseJournalLine, func(l JournalLine, raw string) JournalRecordLine {
		return JournalRecordLine{l, raw}
	})
	return JournalRecord{Lines: lines, Bad: bad}
}

// AppendText appends the record to dst: each parsed line through
// AppendLine, each bad line verbatim, every line ending in "\n". For any
// data, ParseJournalRecord(data).AppendText(nil) is data but for three
// normalisations: blank lines are dropped, a final line gets its "\n", and
// a parsed line's time loses its leading zeros ("007 k" is written "7 k").
func (r JournalRecord) AppendText(dst []byte) []byte { return appendLines(dst, r.Lines) }

// Text is AppendText into a new slice of the right size.
func (r JournalRecord) Text() []byte { return formatLines(r.Lines) }

// RetiredRecordLine is one line of the retired record as a rewrite keeps
// it: a parsed line, or (Raw not "") a line that did not parse, verbatim.
type RetiredRecordLine struct {
	RetiredLine        // zero when Raw is set
	Raw         string // the line as read (without "\n") when it did not parse; "" for a parsed line
}

// Bad reports whether the line did not parse (and is kept verbatim).
func (l RetiredRecordLine) Bad() bool { return l.Raw != "" }

// RetiredRecord is the retired record as read for a rewrite: every line, in
// order.
type RetiredRecord struct {
	Lines []RetiredRecordLine
	Bad   BadLines // the lines that did not parse, blank ones included
}

// ParseRetiredRecord is ParseJournalRecord for the retired record, whose
// lines follow ParseRetired's rules.
func ParseRetiredRecord(data []byte) RetiredRecord {
	lines, bad := parseRecord(string(data), ParseRetiredLine, func(l RetiredLine, raw string) RetiredRecordLine {
		return RetiredRecordLine{l, raw}
	})
	return RetiredRecord{Lines: lines, Bad: bad}
}

// AppendText is JournalRecord.AppendText for the retired record, with the
// same three normalisations.
func (r RetiredRecord) AppendText(dst []byte) []byte { return appendLines(dst, r.Lines) }

// Text is AppendText into a new slice of the right size.
func (r RetiredRecord) Text() []byte { return formatLines(r.Lines) }

// recordText is a line a record writes: textLen bounds what appendTo adds.
type recordText interface {
	appendTo(dst []byte) []byte
	textLen() int
}

func (l JournalLine) appendTo(dst []byte) []byte { return AppendLine(dst, l.FoldedAt, l.Key) }
func (l JournalLine) textLen() int               { return len(l.Key) + 21 }
func (l RetiredLine) appendTo(dst []byte) []byte { return AppendLine(dst, l.RetiredAt, l.Key) }
func (l RetiredLine) textLen() int               { return len(l.Key) + 21 }

func (l JournalRecordLine) appendTo(dst []byte) []byte {
	return appendRaw(dst, l.Raw, l.JournalLine)
}
func (l JournalRecordLine) textLen() int { return len(l.Raw) + l.JournalLine.textLen() }

func (l RetiredRecordLine) appendTo(dst []byte) []byte {
	return appendRaw(dst, l.Raw, l.RetiredLine)
}
func (l RetiredRecordLine) textLen() int { return len(l.Raw) + l.RetiredLine.textLen() }

// appendRaw appends raw and "\n" when raw is set (a line kept verbatim),
// else the parsed line.
func appendRaw(dst []byte, raw string, parsed recordText) []byte {
	if raw != "" {
		return append(append(dst, raw...), '\n')
	}
	return parsed.appendTo(dst)
}

// appendLines appends every line to dst.
func appendLines[T recordText](dst []byte, lines []T) []byte {
	for _, l := range lines {
		dst = l.appendTo(dst)
	}
	return dst
}

// formatLines is appendLines into a new slice of the right size.
func formatLines[T recordText](lines []T) []byte {
	n := 0
	for _, l := range lines {
		n += l.textLen()
	}
	return appendLines(make([]byte, 0, n), lines)
}

// parseLines parses every line of text with parse, keeping the lines that
// parse and counting the others in bad.
func parseLines[L any](text string, parse func(string) (L, error)) (lines []L, bad BadLines) {
	eachLine(text, func(num int, line string) {
		l, err := parse(line)
		if err != nil {
			bad.Add(num, line, err)
			return
		}
		lines = append(lines, l)
	})
	return lines, bad
}

// parseRecord parses every line of text with parse, keeping a line that
// does not parse verbatim (wrap(zero, raw)) unless it is blank, and
// counting it in bad.
func parseRecord[L, R any](text string, parse func(string) (L, error), wrap func(l L, raw string) R) (lines []R, bad BadLines) {
	eachLine(text, func(num int, line string) {
		l, err := parse(line)
		if err != nil {
			bad.Add(num, line, err)
			if line != "" { // a blank line carries nothing
				var zero L
				lines = append(lines, wrap(zero, line))
			}
			return
		}
		lines = append(lines, wrap(l, ""))
	})
	return lines, bad
}

// Add appends the parsed line "<retiredAt> <key>".
func (r *RetiredRecord) Add(retiredAt int64, key string) {
	r.Lines = append(r.Lines, RetiredRecordLine{RetiredLine: RetiredLine{RetiredAt: retiredAt, Key: key}})
}

// Add appends the parsed line "<foldedAt> <key>".
func (r *JournalRecord) Add(foldedAt int64, key string) {
	r.Lines = append(r.Lines, JournalRecordLine{JournalLine: JournalLine{FoldedAt: foldedAt, Key: key}})
}
