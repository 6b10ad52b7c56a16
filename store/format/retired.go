package format

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// RetiredLine is one line of the retired record RetiredKey (spec §13.4,
// §13.7): a store key a repack or fold replaced (a pack file, a loose object,
// an entry list such as "pack-<id>.entries") and the wall time in
// milliseconds at which it was retired.
type RetiredLine struct {
	RetiredAt int64 // wall ms
	Key       string
}

// ParseRetiredLine parses one line of the retired record (without "\n").
// retired-at follows the rules of the journal's folded-at. The key is a
// store key, not an entry key: it must be non-empty valid UTF-8 without a
// space, "\r" or NUL.
func ParseRetiredLine(line string) (RetiredLine, error) {
	ms, key, err := parseTimedLine(line, "retired-at", validateRetiredKey)
	return RetiredLine{RetiredAt: ms, Key: key}, err
}

// ParseRetired parses the retired record: lines "<retired-at> <key>\n"
// (DESIGN §3). An absent or empty record has no lines. A line that breaks a
// rule of ParseRetiredLine is skipped and counted in bad (the first
// MaxBadLineSamples kept as examples), and so is a final line without "\n"
// (ErrCutLine), whatever it holds: every writer ends its line, so the
// record was cut (a write that failed left part of it) and the line may
// name a prefix of the key it meant to retire ("pack-ab" of
// "pack-abc.entries"); believed, that would leave the list it retired
// live. BadRetiredLinesNaming tells which live lists such a line may
// retire. The keys of lines share one copy of data. ParseRetiredRecord
// keeps the lines that do not parse instead.
func ParseRetired(data []byte) (lines []RetiredLine, bad BadLines) {
	return parseRetiredText(string(data))
}

// ErrCutLine is the rule a record's last line breaks when it does not end
// in "\n" (the retired record's: ParseRetired). Like every rule of a line,
// a LineError wraps it.
var ErrCutLine = errors.New(`last line does not end in "\n": the record is cut (a write that failed left part of it)`)

// cutTail splits text into its lines that end in "\n" and a last line that
// does not ("" when text ends in "\n" or is empty), and returns how many
// lines body holds.
func cutTail(text string) (body, tail string, n int) {
	i := strings.LastIndexByte(text, '\n') + 1
	return text[:i], text[i:], strings.Count(text[:i], "\n")
}

// parseRetiredText parses the retired record text: the lines that end in
// "\n" by ParseRetiredLine's rules, a last line that does not as cut.
func parseRetiredText(text string) (lines []RetiredLine, bad BadLines) {
	body, tail, n := cutTail(text)
	lines, bad = parseLines(body, false, ParseRetiredLine)
	if tail != "" {
		bad.Add(n+1, tail, ErrCutLine)
	}
	return lines, bad
}

func validateRetiredKey(key string) error {
	if !utf8.ValidString(key) {
		return fmt.Errorf("retired key %q is not valid UTF-8", clip(key))
	}
	if i := strings.IndexAny(key, " \r\x00"); i >= 0 {
		return fmt.Errorf("retired key %q contains %s at %d", clip(key), termsafe.QuoteByte(key[i]), i)
	}
	return nil
}

// Retired formats lines as the retired record. It never fails: the
// caller guarantees valid keys and non-negative times.
func Retired(lines []RetiredLine) []byte { return formatLines(lines) }

// ParseRetiredText is ParseRetired of a record already held as a string:
// the keys of lines are pieces of text, not a copy.
func ParseRetiredText(text string) (lines []RetiredLine, bad BadLines) {
	return parseRetiredText(text)
}

// BadRetiredLinesNaming returns, for each of names (store keys) that a line
// of the retired record text names although the line does not parse, the
// first such line: a line whose text holds the key, so it may have been
// meant to retire it, or not. A cut last line (ErrCutLine) names, besides,
// every key its key part begins (all of them when it was cut before the
// space that ends its time): the rest of its key was lost. Nothing is read
// when the record has no bad line; a key no bad line holds is left out.
func BadRetiredLinesNaming(text string, names []string) map[string]*LineError {
	var out map[string]*LineError
	add := func(num int, line string, err error, holds func(name string) bool) {
		for _, name := range names {
			if _, seen := out[name]; !seen && holds(name) {
				if out == nil {
					out = map[string]*LineError{}
				}
				out[name] = lineError(num, line, err)
			}
		}
	}
	body, tail, n := cutTail(text)
	eachLine(body, func(num int, line string) {
		_, err := ParseRetiredLine(line)
		if err == nil || line == "" {
			return
		}
		add(num, line, err, func(name string) bool { return strings.Contains(line, name) })
	})
	if tail != "" {
		_, key, _ := strings.Cut(tail, " ") // "" when cut before the space
		add(n+1, tail, ErrCutLine, func(name string) bool {
			return strings.Contains(tail, name) || strings.HasPrefix(name, key)
		})
	}
	return out
}
