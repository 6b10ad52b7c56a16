package store

import (
	"errors"
	"fmt"
	"strconv"
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
	return fmt.Sprintf("line %d %q: %v", e.Line, e.Text, e.Err)
}

// Unwrap returns the rule the line broke.
func (e *LineError) Unwrap() error { return e.Err }

// Is reports that a LineError is ErrCorrupt.
func (e *LineError) Is(target error) bool { return target == ErrCorrupt }

// lineError keeps a copy of the line's text (clipped): a line is a piece
// of its record's text, which a kept error must not hold alive.
func lineError(num int, line string, err error) *LineError {
	return &LineError{Line: num, Text: strings.Clone(clip(line)), Err: err}
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

// parseTimedLine splits a record line "<wall ms> <key>" at its first space.
// what names the time in errors ("folded-at", "retired-at"). The time is
// decimal digits only (no sign) and fits an int64.
func parseTimedLine(line, what string) (ms int64, key string, err error) {
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
	if num == "" {
		return 0, "", fmt.Errorf("%s is missing", what)
	}
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return 0, "", fmt.Errorf("%s %q is not a number", what, clip(num))
		}
	}
	ms, err = strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("%s %q is out of range", what, clip(num))
	}
	if key == "" {
		return 0, "", errEmptyKey
	}
	return ms, key, nil
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
