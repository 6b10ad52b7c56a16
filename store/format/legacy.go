package format

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// The older one-list keys (spec §13.7, DESIGN §3). Stores written before the
// per-entry layout kept one list per object; readers read them until a
// complete fold copies them into entries and writes LegacyFoldedMarker.
// Nothing writes them any more; the formatters exist for tests and tools.

// LegacyList describes one legacy prefix and the kind its lines map to.
type LegacyList struct {
	Prefix string // "sigs/"
	Kind   Kind
}

// LegacyLists returns the legacy prefixes, indexed by kind: a copy, so no
// caller can change what the others read.
func LegacyLists() [NumKinds]LegacyList { return legacyLists }

var legacyLists = [NumKinds]LegacyList{
	{"sigs/", KindSig},
	{"seals/", KindSeal},
	{"receipts/", KindReceipt},
	{"approvals/", KindApproval},
	{"certs/", KindCert},
	{"accepted-lists/", KindAccepted},
}

// ParseLegacyKey parses a legacy key "<prefix><hh>/<rest>", such as
// "sigs/ab/cdef" (KindSig, object "abcdef"). The object must pass
// ValidateObject.
func ParseLegacyKey(key string) (kind Kind, object string, ok bool) {
	for _, l := range legacyLists {
		rest, found := strings.CutPrefix(key, l.Prefix)
		if !found {
			continue
		}
		hh, tail, found := strings.Cut(rest, "/")
		if !found || len(hh) != 2 {
			return 0, "", false
		}
		object = hh + tail
		if ValidateObject(object) != nil {
			return 0, "", false
		}
		return l.Kind, object, true
	}
	return 0, "", false
}

// LegacyKey formats the legacy key of an object's list of the given kind,
// or "" for an unknown kind.
func LegacyKey(kind Kind, object string) string {
	if int(kind) >= len(legacyLists) {
		return ""
	}
	p := legacyLists[kind].Prefix
	if len(object) < 2 {
		return p + object
	}
	return p + object[:2] + "/" + object[2:]
}

// LegacySig is one line of a legacy "sigs/" list: a signer and its signature.
type LegacySig struct {
	Signer string
	Sig    []byte
}

var (
	errNoSigSpace = errors.New("no space between the signer and the signature")
	errBadBase64  = errors.New("signature is not standard base64")
	errEmptySig   = errors.New("empty signature")
)

// ParseLegacySigs parses a legacy "sigs/" list: lines "<signer> <standard
// base64 of the signature>". The line is split at its last space (base64 has
// none, a signer may); the signer must pass ValidateValue and the signature
// be non-empty standard base64 with padding. Blank lines carry nothing and
// are skipped; every other line that breaks a rule is skipped and counted in
// bad (the first MaxBadLineSamples kept). A signer listed twice is returned
// twice, in order.
func ParseLegacySigs(data []byte) (sigs []LegacySig, bad BadLines) {
	return parseLines(string(data), true, parseLegacySig)
}

func parseLegacySig(line string) (LegacySig, error) {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return LegacySig{}, errNoSigSpace
	}
	signer, b64 := line[:i], line[i+1:]
	if err := ValidateValue(signer); err != nil {
		return LegacySig{}, fmt.Errorf("signer: %w", err)
	}
	if b64 == "" {
		return LegacySig{}, errEmptySig
	}
	// The standard decoder skips "\r" and "\n"; a line holds no "\n", and a
	// "\r" (a CRLF line ending) is refused here as in every record.
	if strings.IndexByte(b64, '\r') >= 0 {
		return LegacySig{}, errCRLF
	}
	sig, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return LegacySig{}, fmt.Errorf("%w: %w", errBadBase64, err)
	}
	return LegacySig{Signer: signer, Sig: sig}, nil
}

// LegacySigs formats sigs as a legacy "sigs/" list. The caller
// guarantees valid signers and non-empty signatures.
func LegacySigs(sigs []LegacySig) []byte {
	var b []byte
	for _, s := range sigs {
		b = append(b, s.Signer...)
		b = append(b, ' ')
		b = base64.StdEncoding.AppendEncode(b, s.Sig)
		b = append(b, '\n')
	}
	return b
}

// ParseLegacyValues parses a legacy list of values ("seals/", "receipts/",
// "approvals/", "certs/", "accepted-lists/"): one value per line, each
// passing ValidateValue. Blank lines carry nothing and are skipped; every
// other line that breaks a rule is skipped and counted in bad (the first
// MaxBadLineSamples kept). The values share one copy of data.
func ParseLegacyValues(data []byte) (values []string, bad BadLines) {
	return parseLines(string(data), true, parseLegacyValue)
}

func parseLegacyValue(line string) (string, error) {
	if strings.HasSuffix(line, "\r") {
		return "", errCRLF
	}
	return line, ValidateValue(line)
}

// LegacyValues formats values as a legacy list of values. The caller
// guarantees valid values.
func LegacyValues(values []string) []byte {
	var b []byte
	for _, v := range values {
		b = append(b, v...)
		b = append(b, '\n')
	}
	return b
}
