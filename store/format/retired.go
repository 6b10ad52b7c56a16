package format

import (
	"fmt"
	"strings"
	"unicode/utf8"
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
// (DESIGN §3). An absent or empty record has no lines; a final line without
// "\n" is accepted. A line that breaks a rule of ParseRetiredLine is
// skipped and counted in bad (the first MaxBadLineSamples kept as
// examples). The keys of lines share one copy of data. ParseRetiredRecord
// keeps the lines that do not parse instead.
func ParseRetired(data []byte) (lines []RetiredLine, bad BadLines) {
	return parseLines(string(data), false, ParseRetiredLine)
}

func validateRetiredKey(key string) error {
	if !utf8.ValidString(key) {
		return fmt.Errorf("retired key %q is not valid UTF-8", clip(key))
	}
	if i := strings.IndexAny(key, " \r\x00"); i >= 0 {
		return fmt.Errorf("retired key %q contains %q at %d", clip(key), key[i], i)
	}
	return nil
}

// Retired formats lines as the retired record. It never fails: the
// caller guarantees valid keys and non-negative times.
func Retired(lines []RetiredLine) []byte { return formatLines(lines) }

// ParseRetiredText is ParseRetired of a record already held as a string:
// the keys of lines are pieces of text, not a copy.
func ParseRetiredText(text string) (lines []RetiredLine, bad BadLines) {
	return parseLines(text, false, ParseRetiredLine)
}

// BadRetiredLinesNaming returns, for each of names (store keys) that a line
// of the retired record text names although the line does not parse, the
// first such line: a line whose text holds the key, so it may have been
// meant to retire it, or not. Nothing is read when the record has no bad
// line; a key no bad line holds is left out.
func BadRetiredLinesNaming(text string, names []string) map[string]*LineError {
	var out map[string]*LineError
	eachLine(text, func(num int, line string) {
		_, err := ParseRetiredLine(line)
		if err == nil || line == "" {
			return
		}
		for _, name := range names {
			if _, seen := out[name]; !seen && strings.Contains(line, name) {
				if out == nil {
					out = map[string]*LineError{}
				}
				out[name] = lineError(num, line, err)
			}
		}
	})
	return out
}
