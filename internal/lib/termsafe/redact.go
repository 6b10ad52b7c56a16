package termsafe

import "strings"

// Redacted is what Redact puts in place of each secret.
const Redacted = "REDACTED"

// maxRedactLayers is how many layers of percent-encoding Redact looks
// through (an endpoint URL inside a store URL's query is one layer; a store
// URL quoted inside another URL's query is two).
const maxRedactLayers = 4

// Redact returns s with every secret a URL in it may carry replaced by
// REDACTED, and everything else as it was. s may be one URL, a query or
// parameter string, or free text that quotes URLs, such as an error of an
// SDK ("Get \"http://user:***@host/b?x-id=GetObject\": dial tcp ...").
// It is the one place that decides what is secret; every output that can
// show a store URL or an error about one goes through it.
//
// Secret are:
//   - the user information of every URL (user:password@ before a host),
//     wherever the URL is: the store URL itself or one nested in a
//     parameter, such as s3://b?endpoint=http://user:pass@host:9000, with
//     a scheme or without one (endpoint=user:pass@host:9000), its password
//     written encoded or decoded (pa%5Es or pa^s; a decoded space only in
//     a parameter's value: bareUserinfoSpans, paramUserinfoSpans);
//   - the value of every key=value parameter whose key names a secret: one
//     holding (in any case) key, secret, token, sig, pass (passw, passwd,
//     passphrase), pw (pwd), credential, auth, session, private, cookie,
//     sas or bearer, one beginning with X-Amz-, X-Goog- or X-Ms-, and the
//     parameters of an Azure shared access signature (sv, sig, se, st, sp,
//     skoid, ...);
//   - the same inside percent-encoded text (endpoint=http%3A%2F%2Fuser%3Apass%40host),
//     up to maxRedactLayers layers deep; the text keeps its encoding and
//     only the secret's own bytes are replaced.
//
// Redact never fails: text it cannot parse is scanned all the same. It
// errs towards hiding too much (any key=value whose key names a secret,
// in any text).
func Redact(s string) string {
	spans := secretSpans(s, 0)
	if len(spans) == 0 {
		return s
	}
	// Sort by start (few spans: insertion sort), then merge overlaps.
	for i := 1; i < len(spans); i++ {
		for j := i; j > 0 && spans[j].from < spans[j-1].from; j-- {
			spans[j], spans[j-1] = spans[j-1], spans[j]
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for _, sp := range spans {
		if sp.to <= at {
			continue
		}
		if sp.from >= at {
			b.WriteString(s[at:sp.from])
			b.WriteString(Redacted)
		}
		at = sp.to
	}
	b.WriteString(s[at:])
	return b.String()
}

// span is a byte range [from, to) of a secret.
type span struct{ from, to int }

// secretSpans finds the secrets of t, then those of its percent-decoded
// form, mapped back onto t.
func secretSpans(t string, layer int) []span {
	out := userinfoSpans(t, nil)
	out = bareUserinfoSpans(t, out)
	out = paramUserinfoSpans(t, out)
	out = paramSpans(t, out)
	if layer < maxRedactLayers {
		if d, offs, ok := percentDecode(t); ok {
			for _, sp := range secretSpans(d, layer+1) {
				out = append(out, span{offs[sp.from], offs[sp.to]})
			}
		}
	}
	return out
}

// userinfoSpans adds the user information of every "scheme://" in t: the
// text between "://" and the last @ of the authority. A password holding a
// '/' ends the authority early ("http://user:pa/ss@host"): when what comes
// before that '/' is no host[:port], the last @ before any ? or # counts.
func userinfoSpans(t string, out []span) []span {
	// far, farAt: the end of the last path scanned and its last @ (or -1),
	// so that text of many "://" is scanned once.
	far, farAt := -1, -1
	for i := 0; i < len(t); {
		k := strings.Index(t[i:], "://")
		if k < 0 {
			break
		}
		j := i + k + 3
		end := j
		for end < len(t) && !authorityEnd(t[end]) {
			end++
		}
		if at := strings.LastIndexByte(t[j:end], '@'); at > 0 {
			out = append(out, span{j, j + at})
		} else if at < 0 && !hostPort(t[j:end]) {
			if j > far {
				far = end
				for far < len(t) && !farEnd(t[far]) {
					far++
				}
				if farAt = strings.LastIndexByte(t[j:far], '@'); farAt >= 0 {
					farAt += j
				}
			}
			if farAt > j {
				out = append(out, span{j, farAt})
			}
		}
		i = j
	}
	return out
}

// bareUserinfoSpans adds user information without a scheme before it, as
// an endpoint given without one carries it (endpoint=user:pass@host:9000,
// or a parser's error quoting it): for each @, the text before it back to
// a space, a control character, / or =, if it holds a colon. A password
// may hold any other character (^, ", \, @, & ...), as written or as
// decoded from its percent-encoding. One pass: each run between two
// such stops is scanned once.
func bareUserinfoSpans(t string, out []span) []span {
	start, colon, secret := 0, false, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c <= ' ' || c == 0x7f || c == '/' || c == '=':
			start, colon, secret = i+1, false, false
			if c == '=' { // a secret parameter's value is hidden whole (paramSpans)
				ks := i
				for ks > 0 && keyChar(t[ks-1]) {
					ks--
				}
				secret = secretParam(t[ks:i])
			}
		case c == ':':
			colon = true
		case c == '@' && colon && !secret:
			out = append(out, span{start, i})
		}
	}
	return out
}

// paramUserinfoSpans adds, for a parameter's value that holds a colon and
// then an @ (endpoint=user:pass@host, with or without a scheme), the value
// (after its scheme) up to its first @, when a colon comes before it: there
// a password may hold a space too, as a decoded one does (an @ in it:
// bareUserinfoSpans). A value runs to &, # or a control character; only the first =
// of such a run after a key's character starts one, so each run is scanned once.
func paramUserinfoSpans(t string, out []span) []span {
	for s := 0; s < len(t); {
		e := s
		for e < len(t) && !runEnd(t[e]) {
			e++
		}
		k := s
		for k < e && (t[k] != '=' || k == s || !keyChar(t[k-1])) {
			k++
		}
		ks := k
		for ks > s && keyChar(t[ks-1]) {
			ks--
		}
		if k < e && !secretParam(t[ks:k]) { // a secret parameter's value is hidden whole (paramSpans)
			vs := k + 1
			if i := strings.Index(t[vs:e], "://"); i >= 0 && i < 16 && !strings.ContainsAny(t[vs:vs+i], " :@") {
				vs += i + 3 // the scheme stays
			}
			if at := strings.IndexByte(t[vs:e], '@'); at > 0 && strings.IndexByte(t[vs:vs+at], ':') >= 0 {
				out = append(out, span{quotedURLStart(t, vs, vs+at), vs + at})
			}
		}
		s = e + 1
	}
	return out
}

// quotedURLStart returns where the user information before the @ at `at`
// begins, for a parameter's value starting at vs: vs, unless the text
// between is free text quoting a URL (a "://" after a space or a quote, as
// an SDK's error quotes the request's URL after the store URL's last
// parameter: region=us-east-1: ... Get "http://user:pass@host/...") and
// the @ is in that URL's authority; then just after that "://", so that the text before it stays readable (the
// quoted URL's user information is hidden all the same).
func quotedURLStart(t string, vs, at int) int {
	i := strings.LastIndex(t[vs:at], "://")
	if i < 0 || strings.IndexFunc(t[vs:vs+i], func(r rune) bool { return r == ' ' || r == '"' || r == '\'' }) < 0 {
		return vs
	}
	for j := vs + i + 3; j < at; j++ {
		if authorityEnd(t[j]) || t[j] == '&' {
			return vs // the @ is not in that URL's authority
		}
	}
	return vs + i + 3
}

func runEnd(c byte) bool { return c < ' ' || c == 0x7f || c == '&' || c == '#' }

// paramSpans adds the value of every key=value whose key names a secret.
func paramSpans(t string, out []span) []span {
	for e := 0; e < len(t); e++ {
		if t[e] != '=' {
			continue
		}
		ks := e
		for ks > 0 && keyChar(t[ks-1]) {
			ks--
		}
		if ks == e || !secretParam(t[ks:e]) {
			continue
		}
		ve := e + 1
		for ve < len(t) && !valueEnd(t[ve]) {
			ve++
		}
		if ve > e+1 {
			out = append(out, span{e + 1, ve})
		}
		e = ve - 1 // the whole value is hidden: no key in it matters
	}
	return out
}

// secretWords are the parts of a parameter's name that make its value a
// secret; sasParams are the short names of an Azure shared access signature.
var (
	secretWords    = []string{"key", "secret", "token", "sig", "pass", "pw", "credential", "auth", "session", "private", "cookie", "sas", "bearer"}
	secretPrefixes = []string{"x-amz-", "x-goog-", "x-ms-"}
	sasParams      = map[string]bool{
		"sv": true, "ss": true, "srt": true, "sp": true, "se": true, "st": true, "spr": true, "sr": true,
		"si": true, "sip": true, "sdd": true, "ses": true, "skoid": true, "sktid": true, "skt": true,
		"ske": true, "sks": true, "skv": true, "saoid": true, "suoid": true, "scid": true,
		"rscc": true, "rscd": true, "rsce": true, "rscl": true, "rsct": true,
	}
)

// secretParam reports whether a parameter of this name holds a secret.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	if sasParams[n] {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	for _, p := range secretPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// percentDecode decodes every valid %XX of t (anything else stays as it
// is) and returns, for each byte of the result and one past its end, where
// it began in t. ok is false when t has no %XX.
func percentDecode(t string) (string, []int, bool) {
	if !strings.Contains(t, "%") {
		return "", nil, false
	}
	d := make([]byte, 0, len(t))
	offs := make([]int, 0, len(t)+1)
	ok := false
	for i := 0; i < len(t); {
		if t[i] == '%' && i+2 < len(t) && isHex(t[i+1]) && isHex(t[i+2]) {
			d = append(d, unhex(t[i+1])<<4|unhex(t[i+2]))
			offs = append(offs, i)
			i += 3
			ok = true
			continue
		}
		d = append(d, t[i])
		offs = append(offs, i)
		i++
	}
	offs = append(offs, len(t))
	return string(d), offs, ok
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// textEnd: bytes that end a URL quoted in text (space, controls, quotes,
// and what RFC 3986 never allows unencoded).
func textEnd(c byte) bool {
	return c <= ' ' || c == 0x7f || strings.IndexByte("\"<>\\`{}|^", c) >= 0
}

func authorityEnd(c byte) bool { return textEnd(c) || c == '/' || c == '?' || c == '#' }

func pathEnd(c byte) bool { return textEnd(c) || c == '?' || c == '#' }

// farEnd ends the search for the @ after a password that holds a '/': such
// a password, decoded, may hold what ends a URL in text (", ^, \), not a
// space or a control character.
func farEnd(c byte) bool { return c <= ' ' || c == 0x7f || c == '?' || c == '#' }

func valueEnd(c byte) bool { return textEnd(c) || c == '&' || c == ';' || c == '#' }

func keyChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// hostPort reports whether an authority without @ reads as host[:port]
// (digits after the last colon, or none).
func hostPort(a string) bool {
	if strings.HasSuffix(a, "]") { // [v6]
		return true
	}
	c := strings.LastIndexByte(a, ':')
	if c < 0 {
		return true
	}
	for i := c + 1; i < len(a); i++ {
		if a[i] < '0' || a[i] > '9' {
			return false
		}
	}
	return true
}
