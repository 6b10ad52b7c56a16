package format

import "unicode/utf8"

// The key grammar of DESIGN §3 is read in one place: splitKey. ParseKey
// wraps it (and explains a refusal), SplitKey hands it to readers that must
// not allocate (the index builds its set of millions of keys with it), and
// the smaller checks below (ParseHH, DecodeObjectID, ValidValue) are the
// same rules on one piece of a key. FuzzSplitKey holds all of them to
// Entry.Validate, which states the rules with the reason each one gives.

// MaxObjectBytes is the longest object id, decoded from hex.
const MaxObjectBytes = MaxObjectHex / 2

// SplitKey splits an entry key <kind>/<hh>/<rest>/<value> and checks it
// against DESIGN §3 exactly as ParseKey does, without allocating: id is the
// object id decoded from hex into obj, and value is a piece of key. ok is
// false for a malformed key (ParseKey says why).
func SplitKey[T string | []byte](key T, obj *[MaxObjectBytes]byte) (kind Kind, id []byte, value T, ok bool) {
	s := splitKey(key, obj)
	if s.fault != keyOK {
		return 0, nil, value, false
	}
	return s.kind, obj[:s.n], key[s.slash+1:], true
}

// keyFault is the rule of DESIGN §3 a key breaks.
type keyFault uint8

const (
	keyOK            keyFault = iota
	faultNoKind               // no '/' after the kind
	faultUnknownKind          // the first segment is no kind
	faultShape                // no two-character <hh> segment
	faultNoValue              // no '/' after <rest>
	faultObject               // <hh><rest> is no object id
	faultValue                // <value> is no value
)

// keySplit says where the parts of a key lie: <hh> at hh, the '/' that
// ends <rest> at slash (for faultObject and faultValue too), the object id
// decoded in the first n bytes of the caller's buffer.
type keySplit struct {
	kind      Kind
	fault     keyFault
	hh, slash int
	n         int
}

// splitKey is the key grammar. It reads the key once, decoding the object
// id as it checks its characters.
func splitKey[T string | []byte](key T, obj *[MaxObjectBytes]byte) (s keySplit) {
	i := indexSlash(key, 0)
	if i < 0 {
		s.fault = faultNoKind
		return s
	}
	s.hh = i + 1
	kind, ok := kindOf(key[:i])
	if !ok {
		s.fault = faultUnknownKind
		return s
	}
	s.kind = kind
	h := s.hh
	if len(key)-h < 3 || key[h] == '/' || key[h+1] == '/' || key[h+2] != '/' {
		s.fault = faultShape
		return s
	}
	n, j := 0, h+3
	if hi, lo := hexVal[key[h]], hexVal[key[h+1]]; hi >= 0 && lo >= 0 {
		obj[0] = byte(hi<<4 | lo)
		n = 1
		for ; j+1 < len(key) && n < MaxObjectBytes; j += 2 {
			hi, lo := hexVal[key[j]], hexVal[key[j+1]]
			if hi < 0 || lo < 0 {
				break
			}
			obj[n] = byte(hi<<4 | lo)
			n++
		}
	}
	if n == 0 || j >= len(key) || key[j] != '/' || 2*n < MinObjectHex {
		// A '/' must still end <rest> for the object to be what is wrong.
		if s.slash = indexSlash(key, h+3); s.slash < 0 {
			s.fault = faultNoValue
		} else {
			s.fault = faultObject
		}
		return s
	}
	s.slash, s.n = j, n
	if !ValidValue(key[j+1:]) {
		s.fault = faultValue
	}
	return s
}

// ParseHH decodes <hh>, the two lowercase hex digits an object id starts
// with (the fan-out directory of a kind).
func ParseHH(hh string) (byte, bool) {
	if len(hh) != 2 {
		return 0, false
	}
	hi, lo := hexVal[hh[0]], hexVal[hh[1]]
	if hi < 0 || lo < 0 {
		return 0, false
	}
	return byte(hi<<4 | lo), true
}

// DecodeObjectID decodes an object id written in hex into buf. ok is false
// if obj is not one (see ValidateObject).
func DecodeObjectID(obj string, buf *[MaxObjectBytes]byte) (id []byte, ok bool) {
	if len(obj) < MinObjectHex || len(obj) > MaxObjectHex || len(obj)%2 != 0 {
		return nil, false
	}
	id = buf[:0]
	for i := 0; i+1 < len(obj); i += 2 {
		hi, lo := hexVal[obj[i]], hexVal[obj[i+1]]
		if hi < 0 || lo < 0 {
			return nil, false
		}
		id = append(id, byte(hi<<4|lo))
	}
	return id, true
}

// ValidObjectID reports whether obj is an object id in hex: ValidateObject
// without the reason.
func ValidObjectID(obj string) bool {
	var buf [MaxObjectBytes]byte
	_, ok := DecodeObjectID(obj, &buf)
	return ok
}

// ValidValue reports whether v is a value (a signer or an indexed value):
// ValidateValue without the reason, on a string or bytes.
func ValidValue[T string | []byte](v T) bool {
	if len(v) == 0 || len(v) > MaxValueLen {
		return false
	}
	if v[0] == '.' && (len(v) == 1 || len(v) == 2 && v[1] == '.') {
		return false
	}
	ascii := true
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '/' || c == 0 || c == '\r' || c == '\n':
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	if ascii {
		return true
	}
	switch v := any(v).(type) { // does not escape: no allocation
	case string:
		return utf8.ValidString(v)
	case []byte:
		return utf8.Valid(v)
	}
	return false
}

// AppendObjectPrefix appends "<kind>/<hh>/<rest>/", the prefix of the keys
// of an object, for an object id decoded from hex (at least one byte).
func AppendObjectPrefix(dst []byte, kind Kind, id []byte) []byte {
	const digits = "0123456789abcdef"
	dst = append(dst, kind.Prefix()...)
	for i, c := range id {
		dst = append(dst, digits[c>>4], digits[c&15])
		if i == 0 {
			dst = append(dst, '/')
		}
	}
	return append(dst, '/')
}

// kindOf maps a key's first segment to its kind.
func kindOf[T string | []byte](s T) (Kind, bool) {
	for k, name := range kindNames {
		if len(name) != len(s) {
			continue
		}
		i := 0
		for i < len(s) && s[i] == name[i] {
			i++
		}
		if i == len(s) {
			return Kind(k), true
		}
	}
	return 0, false
}

// indexSlash is the index of the first '/' in key at or after from, or -1.
func indexSlash[T string | []byte](key T, from int) int {
	for i := from; i < len(key); i++ {
		if key[i] == '/' {
			return i
		}
	}
	return -1
}

// hexVal maps a lowercase hex digit to its value, anything else to -1.
var hexVal = func() (t [256]int16) {
	for i := range t {
		t[i] = -1
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = int16(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = int16(c - 'a' + 10)
	}
	return t
}()
