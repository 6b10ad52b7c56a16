package format

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ErrCorrupt is wrapped by every error about a record (journal, retired
// record, legacy list) or an entry list that does not parse.
var ErrCorrupt = errors.New("corrupt record or list")

// LineError is one line of a record or list that did not parse. Parsers of
// records skip such lines and return them so the caller can warn; nothing is
// silently dropped. Every LineError is ErrCorrupt (errors.Is), and unwraps to
// the rule it broke, so a line holding a malformed entry key is ErrBadKey too.
type LineError struct {
	Line int    // 1-based
	Text string // the line, clipped to its first 80 bytes ("…" marks a cut)
	Err  error  // the rule the line broke
}

// Error reads like `line 3 "garbage": folded-at is not a number`.
func (e *LineError) Error() string {
	return fmt.Sprintf("line %d %q: %v", e.Line, shown(e.Text), e.Err)
}

// Unwrap returns the rule the line broke.
func (e *LineError) Unwrap() error { return e.Err }

// Is reports that a LineError is ErrCorrupt.
func (e *LineError) Is(target error) bool { return target == ErrCorrupt }

// lineError keeps a copy of the line's text (clipped): a line is a piece
// of its record's text, which a kept error must not hold alive.
func lineError(num int, line string, err error) *LineError {
	return &LineError{Line: num, Text: strings.Clone(string(clip(line))), Err: err}
}

// MaxBadLineSamples is how many of a record's bad lines a parser keeps as
// examples; the rest are only counted, so a record of junk costs no memory
// per line.
const MaxBadLineSamples = 10

// BadLines sums up the lines of a record that did not parse: how many, and
// the first MaxBadLineSamples of them.
type BadLines struct {
	Count int          // lines that did not parse
	First []*LineError // the first of them, at most MaxBadLineSamples, in order
}

// Add counts one bad line, keeping it as an example while there is room.
func (b *BadLines) Add(num int, line string, err error) {
	b.Count++
	if len(b.First) < MaxBadLineSamples {
		b.First = append(b.First, lineError(num, line, err))
	}
}

// Messages returns one message per example, then, if lines were only
// counted, "and N more lines that do not parse". Nil when there are none.
func (b BadLines) Messages() []string {
	var out []string
	for _, e := range b.First {
		out = append(out, e.Error())
	}
	if n := b.Count - len(b.First); n > 0 {
		out = append(out, fmt.Sprintf("and %d more lines that do not parse", n))
	}
	return out
}

// The rules of the record lines "<wall ms> <key>", shared by the journal and
// the retired record.
var (
	errBlankLine = errors.New("blank line")
	errCRLF      = errors.New(`line ends in "\r" (CRLF line endings are not allowed)`)
	errNoSpace   = errors.New("no space between the time and the key")
	errEmptyKey  = errors.New("empty key")
)

// parseTimedLine splits a record line "<wall ms> <key>" at its first space
// and checks the key with checkKey. what names the time in errors
// ("folded-at", "retired-at"). The time follows LineTime's rules. On error
// ms is 0 and key "".
func parseTimedLine(line, what string, checkKey func(string) error) (ms int64, key string, err error) {
	if line == "" {
		return 0, "", errBlankLine
	}
	if strings.HasSuffix(line, "\r") {
		return 0, "", errCRLF
	}
	num, key, ok := strings.Cut(line, " ")
	if !ok {
		return 0, "", errNoSpace
	}
	ms, rule := parseTime(num)
	switch rule {
	case timeMissing:
		return 0, "", fmt.Errorf("%s is missing", what)
	case timeNotNumber:
		return 0, "", fmt.Errorf("%s %q is not a number", what, clip(num))
	case timeOutOfRange:
		return 0, "", fmt.Errorf("%s %q is out of range", what, clip(num))
	}
	if key == "" {
		return 0, "", errEmptyKey
	}
	if err := checkKey(key); err != nil {
		return 0, "", err
	}
	return ms, key, nil
}

// LineTime reads the time of a record line "<wall ms> <key>" (folded-at in
// the journal, retired-at in the retired record): the field before its
// first space, decimal digits only (no sign, leading zeros allowed) whose
// value fits an int64. ok is false when the line has no space or the field
// breaks a rule. It is the one parser of the field: ParseJournalLine and
// ParseRetiredLine read it through the same rule, and an update that reads
// only the time of a line (fold's journal append) reads it here.
func LineTime[T string | []byte](line T) (ms int64, ok bool) {
	for i := 0; i < len(line); i++ {
		if line[i] == ' ' {
			ms, rule := parseTime(line[:i])
			return ms, rule == timeOK
		}
	}
	return 0, false
}

// timeRule is the rule a time field breaks, if any.
type timeRule int

const (
	timeOK timeRule = iota
	timeMissing
	timeNotNumber
	timeOutOfRange
)

// parseTime parses a time field: decimal digits only, fitting an int64.
func parseTime[T string | []byte](num T) (int64, timeRule) {
	if len(num) == 0 {
		return 0, timeMissing
	}
	var ms int64
	rule := timeOK
	for i := 0; i < len(num); i++ {
		c := num[i]
		if c < '0' || c > '9' {
			return 0, timeNotNumber
		}
		d := int64(c - '0')
		if ms > (math.MaxInt64-d)/10 {
			rule = timeOutOfRange // still look for a non-digit, which says more
			continue
		}
		ms = ms*10 + d
	}
	if rule != timeOK {
		return 0, rule
	}
	return ms, timeOK
}

// eachLine calls fn for every line of text with its 1-based number and
// without its "\n". A final line without "\n" counts; empty text has no line.
func eachLine(text string, fn func(num int, line string)) {
	num := 0
	for line := range strings.Lines(text) {
		num++
		fn(num, strings.TrimSuffix(line, "\n"))
	}
}
