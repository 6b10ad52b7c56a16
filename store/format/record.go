package format

import "strconv"

// The records (spec §13.7, DESIGN §3): the journal JournalKey and the
// retired record RetiredKey, both lines "<wall ms> <key>\n". A record is
// read one of two ways:
//
//   - ParseJournal and ParseRetired return only the lines that parse (and
//     count the rest in BadLines): what a reader needs.
//   - ParseJournalRecord and ParseRetiredRecord return every line, the ones
//     that do not parse kept verbatim in place: what an update needs, since
//     an update never drops a line it does not understand (another
//     implementation, or a newer oxyfs, may have written it). AppendText
//     writes the record back.
//
// Every "<ms> <key>" line is written by AppendLine, and its time read by
// LineTime.

// AppendLine appends the record line "<ms> <key>\n" to dst: the one writer
// of journal and retired lines. The caller guarantees a valid key and a
// non-negative time.
func AppendLine(dst []byte, ms int64, key string) []byte {
	dst = strconv.AppendInt(dst, ms, 10)
	dst = append(dst, ' ')
	dst = append(dst, key...)
	return append(dst, '\n')
}

// recordLine is the line of a record: a JournalLine or a RetiredLine.
type recordLine interface {
	JournalLine | RetiredLine
	recordText
}

// Record is a record as read for an update: every line, in order. It is a
// JournalRecord or a RetiredRecord.
type Record[L recordLine] struct {
	Lines []RecordLine[L]
	Bad   BadLines // the lines that did not parse, blank ones included
}

// RecordLine is one line of a record as an update keeps it: a parsed line,
// or (Raw not "") a line that did not parse, verbatim.
type RecordLine[L recordLine] struct {
	Line L      // the parsed line; zero when Raw is set
	Raw  string // the line as read (without "\n") when it did not parse; "" for a parsed line
}

// Bad reports whether the line did not parse (and is kept verbatim).
func (l RecordLine[L]) Bad() bool { return l.Raw != "" }

// JournalRecord is the journal as read for an update.
type JournalRecord = Record[JournalLine]

// RetiredRecord is the retired record as read for an update.
type RetiredRecord = Record[RetiredLine]

// ParseJournalRecord parses the journal for an update. Its lines follow
// ParseJournalLine's rules; a line that breaks one is counted in Bad and
// kept in Lines verbatim, except a blank line, which carries nothing and is
// left out. Nothing is allocated per bad line beyond its place in Lines,
// and the strings share one copy of data.
func ParseJournalRecord(data []byte) JournalRecord {
	return parseRecord(string(data), ParseJournalLine)
}

// ParseRetiredRecord is ParseJournalRecord for the retired record, whose
// lines follow ParseRetiredLine's rules, and whose last line is bad when it
// does not end in "\n" (ErrCutLine), as ParseRetired reads it: kept
// verbatim, it is written back ended (AppendText) unless dropped.
func ParseRetiredRecord(data []byte) RetiredRecord {
	body, tail, n := cutTail(string(data))
	r := parseRecord(body, ParseRetiredLine)
	if tail != "" {
		r.Bad.Add(n+1, tail, ErrCutLine)
		r.Lines = append(r.Lines, RecordLine[RetiredLine]{Raw: tail})
	}
	return r
}

// AppendText appends the record to dst: each parsed line through
// AppendLine, each bad line verbatim, every line ending in "\n". For any
// data, ParseJournalRecord(data).AppendText(nil) is data but for three
// normalisations (and likewise for the retired record): blank lines are
// dropped, a final line gets its "\n", and a parsed line's time loses its
// leading zeros ("007 k" is written "7 k"; the retired record's cut last
// line is not parsed, so is written as read).
func (r Record[L]) AppendText(dst []byte) []byte { return appendLines(dst, r.Lines) }

// Text is AppendText into a new slice of the right size.
func (r Record[L]) Text() []byte { return formatLines(r.Lines) }

// Add appends the parsed line l.
func (r *Record[L]) Add(l L) { r.Lines = append(r.Lines, RecordLine[L]{Line: l}) }

// recordText is a line a record writes: textLen bounds what appendTo adds.
type recordText interface {
	appendTo(dst []byte) []byte
	textLen() int
}

func (l JournalLine) appendTo(dst []byte) []byte { return AppendLine(dst, l.FoldedAt, l.Key) }
func (l JournalLine) textLen() int               { return len(l.Key) + 21 }
func (l RetiredLine) appendTo(dst []byte) []byte { return AppendLine(dst, l.RetiredAt, l.Key) }
func (l RetiredLine) textLen() int               { return len(l.Key) + 21 }

func (l RecordLine[L]) appendTo(dst []byte) []byte {
	if l.Bad() {
		return append(append(dst, l.Raw...), '\n')
	}
	return l.Line.appendTo(dst)
}

func (l RecordLine[L]) textLen() int { return len(l.Raw) + l.Line.textLen() }

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
// parse and counting the others in bad. With skipBlank, a blank line is
// passed over without a word (the older lists); otherwise parse judges it.
func parseLines[L any](text string, skipBlank bool, parse func(string) (L, error)) (lines []L, bad BadLines) {
	eachLine(text, func(num int, line string) {
		if skipBlank && line == "" {
			return
		}
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
// does not parse verbatim unless it is blank, and counting it in Bad.
func parseRecord[L recordLine](text string, parse func(string) (L, error)) (r Record[L]) {
	eachLine(text, func(num int, line string) {
		l, err := parse(line)
		if err == nil {
			r.Add(l)
			return
		}
		r.Bad.Add(num, line, err)
		if line != "" { // a blank line carries nothing
			r.Lines = append(r.Lines, RecordLine[L]{Raw: line})
		}
	})
	return r
}
