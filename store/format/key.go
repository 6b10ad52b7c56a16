package format

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/oxyfs/oxyfs/internal/lib/termsafe"
)

// Kind is the kind of an entry: the first segment of its key (spec §13.7).
type Kind uint8

// The six kinds of entry, in the order the mount shows them.
const (
	KindSig Kind = iota
	KindSeal
	KindReceipt
	KindApproval
	KindCert
	KindAccepted
	NumKinds = 6
)

var kindNames = [NumKinds]string{"sig", "seal", "receipt", "approval", "cert", "accepted"}

// kindPrefixes are the kinds' key prefixes, so Prefix allocates nothing.
var kindPrefixes = func() (p [NumKinds]string) {
	for k, n := range kindNames {
		p[k] = n + "/"
	}
	return p
}()

// Kinds lists every kind in order.
var Kinds = [NumKinds]Kind{KindSig, KindSeal, KindReceipt, KindApproval, KindCert, KindAccepted}

// String returns the kind's key prefix ("sig", "seal", ...).
func (k Kind) String() string {
	if int(k) < NumKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Prefix returns the store prefix under which entries of this kind live ("sig/").
func (k Kind) Prefix() string {
	if int(k) < NumKinds {
		return kindPrefixes[k]
	}
	return k.String() + "/"
}

// ObjectPrefix returns the prefix of the keys of an object given in hex:
// "<kind>/<hh>/<rest>/" (as Entry.Key, an id shorter than <hh> is kept whole).
func (k Kind) ObjectPrefix(obj string) string {
	if len(obj) < 2 {
		return k.Prefix() + obj + "/"
	}
	return k.Prefix() + obj[:2] + "/" + obj[2:] + "/"
}

// ParseKind maps a key prefix ("sig") to its kind.
func ParseKind(s string) (Kind, bool) { return kindOf(s) }

// Limits of DESIGN §3.
const (
	MinObjectHex = 4   // shortest object id, in hex characters
	MaxObjectHex = 128 // longest object id, in hex characters
	MaxValueLen  = 255 // longest value (signer or indexed value), in bytes
)

// ErrBadKey is wrapped by every key validation error.
var ErrBadKey = errors.New("malformed entry key")

// Entry is one signature or index entry: <kind>/<hh>/<rest>/<value>.
// Object is the object id in lowercase hex (hh + rest).
type Entry struct {
	Kind   Kind
	Object string
	Value  string
}

// Key formats the entry's store key.
func (e Entry) Key() string {
	var b strings.Builder
	k := e.Kind.String()
	b.Grow(len(k) + len(e.Object) + len(e.Value) + 3)
	b.WriteString(k)
	b.WriteByte('/')
	if len(e.Object) >= 2 {
		b.WriteString(e.Object[:2])
		b.WriteByte('/')
		b.WriteString(e.Object[2:])
	} else {
		b.WriteString(e.Object)
	}
	b.WriteByte('/')
	b.WriteString(e.Value)
	return b.String()
}

// String is the entry's key.
func (e Entry) String() string { return e.Key() }

// ObjectBytes returns the object id decoded from hex.
func (e Entry) ObjectBytes() ([]byte, error) { return hex.DecodeString(e.Object) }

// Validate checks the entry against DESIGN §3 and says which rule failed.
func (e Entry) Validate() error {
	if int(e.Kind) >= NumKinds {
		return fmt.Errorf("%w: unknown kind %d", ErrBadKey, e.Kind)
	}
	if err := ValidateObject(e.Object); err != nil {
		return err
	}
	return ValidateValue(e.Value)
}

// ValidateObject checks an object id: an even number (4 to 128) of lowercase hex characters.
func ValidateObject(obj string) error {
	if len(obj) < MinObjectHex || len(obj) > MaxObjectHex {
		return fmt.Errorf("%w: object id %q has %d hex characters, want %d to %d", ErrBadKey, clip(obj), len(obj), MinObjectHex, MaxObjectHex)
	}
	if len(obj)%2 != 0 {
		return fmt.Errorf("%w: object id %q has an odd number of hex characters", ErrBadKey, clip(obj))
	}
	for i := 0; i < len(obj); i++ {
		c := obj[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("%w: object id %q: character %s at %d is not lowercase hex", ErrBadKey, clip(obj), termsafe.QuoteByte(c), i)
		}
	}
	return nil
}

// ValidateValue checks a value (signer or indexed value): 1–255 bytes of UTF-8,
// no '/', NUL, CR or LF, not "." or "..".
func ValidateValue(v string) error {
	switch {
	case v == "":
		return fmt.Errorf("%w: empty value", ErrBadKey)
	case len(v) > MaxValueLen:
		return fmt.Errorf("%w: value is %d bytes, longer than %d", ErrBadKey, len(v), MaxValueLen)
	case v == "." || v == "..":
		return fmt.Errorf("%w: value %q is not allowed", ErrBadKey, shown(v))
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: value %q is not valid UTF-8", ErrBadKey, clip(v))
	}
	if i := strings.IndexAny(v, "/\x00\r\n"); i >= 0 {
		return fmt.Errorf("%w: value %q contains %s at %d", ErrBadKey, clip(v), termsafe.QuoteByte(v[i]), i)
	}
	return nil
}

// ParseKey parses and validates an entry key <kind>/<hh>/<rest>/<value>
// (splitKey), and says which rule a malformed key breaks.
func ParseKey(key string) (Entry, error) {
	var obj [MaxObjectBytes]byte
	s := splitKey(key, &obj)
	switch s.fault {
	case keyOK:
		return Entry{Kind: s.kind, Object: key[s.hh:s.hh+2] + key[s.hh+3:s.slash], Value: key[s.slash+1:]}, nil
	case faultNoKind:
		return Entry{}, fmt.Errorf("%w: %q has no kind segment", ErrBadKey, clip(key))
	case faultUnknownKind:
		return Entry{}, fmt.Errorf("%w: %q: unknown kind %q", ErrBadKey, clip(key), clip(key[:s.hh-1]))
	case faultShape:
		return Entry{}, fmt.Errorf("%w: %q: want <kind>/<hh>/<rest>/<value> with a two-character <hh>", ErrBadKey, clip(key))
	case faultNoValue:
		return Entry{}, fmt.Errorf("%w: %q: missing <rest>/<value>", ErrBadKey, clip(key))
	}
	// The object or the value: Validate names the rule.
	e := Entry{Kind: s.kind, Object: key[s.hh:s.hh+2] + key[s.hh+3:s.slash], Value: key[s.slash+1:]}
	err := e.Validate()
	if err == nil { // never: FuzzSplitKey holds splitKey to Validate
		err = fmt.Errorf("%w: %q", ErrBadKey, clip(key))
	}
	return Entry{}, fmt.Errorf("parse key %q: %w", clip(key), err)
}

// clip shortens a string for an error message, which quotes it with %q
// (shown).
func clip(s string) shown {
	if len(s) > 80 {
		return shown(s[:80] + "…")
	}
	return shown(s)
}

// shown is text of a store (a key, a record's line) as a message quotes it
// with %q: every control byte as \xHH, as all of oxyfs's output writes it
// (%q of a string writes BEL as \a).
type shown = termsafe.Value
