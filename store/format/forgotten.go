package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The forget record (DESIGN §3, decided here; docs/design.md "What a
// forget leaves for readers").
//
// A collection that forgets objects (gc --forget-objects --apply) deletes
// their entry keys and drops their journal lines. A writer may then put
// such a key again, and its one new line can leave the journal, the lists
// and every count as a reader saw them before the forget: the journal's
// lines carry a key and a time, no identity of the bytes. So before it
// changes anything, the collection writes what it is about to forget where
// every refresh looks: a line "<now> pack-<id>.forgotten" in the retired
// record, and the object it names, which lists the forgotten objects. A
// refresh that finds a forget record it did not see before reads it (one
// GET) and trusts no cached byte of the objects it names. Being retired, the
// record is deleted an hour later by the next collection, like any retired
// key: a reader whose last look is older than that trusts no cached
// signature anyway (index: trustWindow).
//
// The text: "oxy-forgotten 1 <wall ms>\n", then one line
// "<kind> <object id>\n" per forgotten kind of each object, sorted, each
// once. The name is "pack-" + the lowercase hex SHA-256 of the text +
// ".forgotten", so two forgets never share a name (their times differ) and
// the name vouches for the bytes.

// ForgottenSuffix ends the name of a forget record.
const ForgottenSuffix = ".forgotten"

// forgottenHeader starts a forget record's text.
const forgottenHeader = "oxy-forgotten 1 "

// ForgottenObject is one object of a forget record and one kind of it.
type ForgottenObject struct {
	Kind   Kind
	Object string // the object id: hh + rest
}

// ObjectPrefix is the key prefix of the object's entries of its kind:
// "<kind>/<hh>/<rest>/".
func (o ForgottenObject) ObjectPrefix() string { return o.Kind.ObjectPrefix(o.Object) }

// MaxForgottenObjects is the most objects (each of one kind) a forget
// record names: its longest line is 138 bytes ("accepted " and 128 hex
// characters), so a record stays under MaxForgottenBytes. A collection that
// forgets more writes more records.
const MaxForgottenObjects = 100_000

// ForgottenRecord is a forget record: when the collection forgot, and what.
type ForgottenRecord struct {
	At      int64 // wall ms, the collection's store time
	Objects []ForgottenObject
}

// ErrBadForgottenRecord is wrapped by every error of ParseForgottenRecord.
var ErrBadForgottenRecord = errors.New("malformed forget record")

// Encode returns the record's name and text. It sorts the objects and drops
// duplicates; it refuses a negative time or an invalid kind or object.
func (r ForgottenRecord) Encode() (name string, text []byte, err error) {
	if r.At < 0 {
		return "", nil, fmt.Errorf("encode forget record: negative time %d", r.At)
	}
	lines := make([]string, 0, len(r.Objects))
	for _, o := range r.Objects {
		if int(o.Kind) >= NumKinds {
			return "", nil, fmt.Errorf("encode forget record: unknown kind %d", o.Kind)
		}
		if err := ValidateObject(o.Object); err != nil {
			return "", nil, fmt.Errorf("encode forget record: %w", err)
		}
		lines = append(lines, o.Kind.String()+" "+o.Object)
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	if len(lines) > MaxForgottenObjects {
		return "", nil, fmt.Errorf("encode forget record: %d objects, over %d a record", len(lines), MaxForgottenObjects)
	}
	var b bytes.Buffer
	b.WriteString(forgottenHeader)
	b.WriteString(strconv.FormatInt(r.At, 10))
	b.WriteByte('\n')
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	text = b.Bytes()
	return ForgottenName(text), text, nil
}

// ForgottenName is the name of the forget record of text.
func ForgottenName(text []byte) string {
	sum := sha256.Sum256(text)
	return PackPrefix + hex.EncodeToString(sum[:]) + ForgottenSuffix
}

// IsForgottenName reports whether key names a forget record:
// "pack-" + 64 lowercase hex characters + ".forgotten".
func IsForgottenName(key string) bool {
	rest, ok := strings.CutPrefix(key, PackPrefix)
	if !ok {
		return false
	}
	id, ok := strings.CutSuffix(rest, ForgottenSuffix)
	return ok && isHex64(id)
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ParseForgottenRecord parses the text of the forget record named name. It
// accepts only what Encode writes: the header with a time, then valid
// "<kind> <object>" lines, sorted, each once, every one ending in "\n", at
// most MaxForgottenObjects of them, and a name that is the text's digest. A reader that cannot parse a record
// cannot tell what was forgotten: it must trust no cached signature.
func ParseForgottenRecord(name string, text []byte) (ForgottenRecord, error) {
	var r ForgottenRecord
	fail := func(format string, a ...any) (ForgottenRecord, error) {
		return ForgottenRecord{}, fmt.Errorf("%w %q: %s", ErrBadForgottenRecord, clip(name), fmt.Sprintf(format, a...))
	}
	if ForgottenName(text) != name {
		return fail("its name is not the SHA-256 of its %d bytes", len(text))
	}
	s := string(text)
	head, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return fail("no header line")
	}
	ms, ok := strings.CutPrefix(head, forgottenHeader)
	if !ok {
		return fail("header %q is not %q<ms>", clip(head), forgottenHeader)
	}
	at, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || at < 0 || strconv.FormatInt(at, 10) != ms {
		return fail("time %q is not a wall time in milliseconds", clip(ms))
	}
	r.At = at
	prev := ""
	for n := 2; rest != ""; n++ {
		line, more, ok := strings.Cut(rest, "\n")
		if !ok {
			return fail("line %d does not end in a newline", n)
		}
		rest = more
		kind, obj, ok := strings.Cut(line, " ")
		k, kok := ParseKind(kind)
		if !ok || !kok {
			return fail("line %d %q is not <kind> <object>", n, clip(line))
		}
		if err := ValidateObject(obj); err != nil {
			return fail("line %d: %v", n, err)
		}
		if prev != "" && line <= prev {
			return fail("line %d %q is not after %q", n, clip(line), clip(prev))
		}
		if len(r.Objects) == MaxForgottenObjects {
			return fail("over %d objects", MaxForgottenObjects)
		}
		prev = line
		r.Objects = append(r.Objects, ForgottenObject{Kind: k, Object: obj})
	}
	return r, nil
}
