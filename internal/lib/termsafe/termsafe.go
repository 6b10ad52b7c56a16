// Package termsafe makes text from a store safe to show: on a terminal, in
// a log, on a web page. A value of the store (a signer's name, a malformed
// key in a warning) may hold any byte but /, NUL, CR and LF — ESC ] 0 ; …
// BEL retitles a terminal, ESC [ 2 J clears it, U+009B is an 8-bit CSI — so
// every output of oxyfs that is not the store's own bytes (cat, a mount's
// files) goes through this package: Escape for one value, Quote for a name
// a script must read back (ls), DoubleQuote for a value quoted in a message
// (where %q would write BEL as \a), JSON for encoded JSON, and Writer for a
// stream of log lines and messages (which it also redacts, Redact). Every
// one of them writes a control byte as \xHH.
//
// A name must also read as what it is: a signer "signer-00" followed by
// U+202E (RIGHT-TO-LEFT OVERRIDE) or U+200B (ZERO WIDTH SPACE) shows as
// "signer-00" on a page or a terminal, and an auditor who reads it takes one
// signer for another. So every code point that does not show as a glyph of
// its own is escaped as well (unsafeRune): bidi controls and marks, zero
// width characters, every other format character (Cf), and whatever
// unicode.IsPrint rejects (separators but the ASCII space, private use,
// unassigned), plus the default-ignorable code points Unicode draws as
// nothing (U+115F, U+3164, variation selectors, ...) and the printable
// code points that draw as a blank (U+2800). On an HTML page, where spaces
// collapse, EscapeSpaces writes a leading, trailing or repeated space as
// \x20. Escape is injective,
// so two names never show the same (a literal backslash before what would
// read as an escape is doubled); Quote reads back to the exact bytes.
//
// The raw bytes stay in the store and on a mount: only what is shown is
// escaped.
package termsafe

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// unsafeRune reports whether r (utf8.RuneError of width 1: an invalid
// byte) must not reach a reader raw: C0 controls, DEL and C1 controls,
// which drive a terminal, and every code point that does not show as
// itself (invisible: hiddenRune).
func unsafeRune(r rune, width int) bool {
	if r < 0x80 {
		return r < 0x20 || r == 0x7f
	}
	return r == utf8.RuneError && width == 1 || hiddenRune(r)
}

// hiddenRune reports whether a code point (not ASCII) does not show as a
// glyph of its own: C1 controls, format characters (Cf: the bidi controls
// U+202A-202E, U+2066-2069, U+200E, U+200F, U+061C, the zero-width U+200B-200D,
// U+2060, U+FEFF, and the rest), what unicode.IsPrint rejects (separators
// but U+0020, private use, surrogates, unassigned code points), and the
// default-ignorable code points that are letters or marks (U+115F, U+3164,
// U+034F, variation selectors), and the printable code points that draw
// as blanks (blankRune: U+2800).
func hiddenRune(r rune) bool {
	return !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r) ||
		blankRune(r)
}

// blankRune reports whether r is printable by unicode.IsPrint, and no
// default-ignorable code point, but draws as a blank the width of a
// letter, so "a"+r reads as "a" followed by a space or nothing: U+2800
// BRAILLE PATTERN BLANK (a symbol, So). The Hangul fillers (U+115F,
// U+1160, U+3164, U+FFA0) are default-ignorable, the ideographic space
// U+3000 a separator: hiddenRune has them already.
func blankRune(r rune) bool { return r == 0x2800 }

// Safe reports whether s shows as itself: no control character, no
// invalid UTF-8.
func Safe(s string) bool {
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, w) {
			return false
		}
		i += w
	}
	return true
}

// Escape returns s with every control character, invisible code point
// (unsafeRune) and invalid byte written as an escape: \xHH for a C0
// control, DEL or a byte that is not UTF-8, \uHHHH (\UHHHHHHHH past
// U+FFFF) for any other: U+202E is \u202e. Everything else stays as it is
// but a backslash followed by x, u, U, a backslash or an escape, which is
// doubled: no two strings escape the same, so two names never show as one.
// Escape is for reading, Quote for reading back in a shell.
func Escape(s string) string { return escape(s, "", true) }

// EscapeControls is Escape but for its backslashes, which it leaves as
// they are: for a message whose values are quoted already (Quote,
// DoubleQuote, Value), where Escape would double the backslash of each of
// their escapes ($'a\xff' would read $'a\\xff', which a shell reads back
// as a backslash and "xff"). A line break, a tab and every other control
// byte of the message are escaped all the same, so it stays one line.
func EscapeControls(s string) string { return escape(s, "", false) }

// EscapeSpaces is Escape for a name on an HTML page, where a leading or
// trailing space and a run of spaces collapse (HTML's white space): such
// spaces are written \x20, as is a space after a backslash (which is
// doubled then, so the form stays injective: "\\ " is backslash, space).
// A single space between two other characters stays a space.
func EscapeSpaces(s string) string {
	if !strings.Contains(s, " ") {
		return Escape(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == ' ' && (i == 0 || i == len(s)-1 || s[i-1] == ' ' || s[i+1] == ' ' || s[i-1] == '\\'):
			b.WriteString(`\x20`)
		case r == '\\' && strings.HasPrefix(s[i+1:], " "):
			b.WriteString(`\\`)
		default:
			b.WriteString(escapeOne(s, i, w))
		}
		i += w
	}
	return b.String()
}

// escapeOne is Escape's form of the code point s[i:i+w], in s.
func escapeOne(s string, i, w int) string {
	r, _ := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == '\\' && backslashBeforeEscape(s[i+1:], ""):
		return `\\`
	case !unsafeRune(r, w):
		return s[i : i+w]
	case w == 1:
		return fmt.Sprintf(`\x%02x`, s[i])
	case r > 0xffff:
		return fmt.Sprintf(`\U%08x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// writeEscape writes Escape's escape of an unsafe code point r of w bytes
// whose first byte is c: \xNN for a byte that is not UTF-8 or a control
// byte, else \uNNNN or \UNNNNNNNN.
func writeEscape(b *strings.Builder, c byte, r rune, w int) {
	switch {
	case w == 1:
		fmt.Fprintf(b, `\x%02x`, c)
	case r > 0xffff:
		fmt.Fprintf(b, `\U%08x`, r)
	default:
		fmt.Fprintf(b, `\u%04x`, r)
	}
}

// escape is Escape keeping the bytes of keep; with injective, a backslash
// that would begin what reads as an escape is doubled. A stream of text (a
// log, a command's output) is not doubled: Quote's $'\x1b' must stay as it
// is.
func escape(s, keep string, injective bool) string {
	if safeBut(s, keep, injective) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\' && injective && backslashBeforeEscape(s[i+1:], keep):
			b.WriteString(`\\`)
		case !unsafeRune(r, w) || w == 1 && strings.IndexByte(keep, s[i]) >= 0:
			b.WriteString(s[i : i+w])
		default:
			writeEscape(&b, s[i], r, w)
		}
		i += w
	}
	return b.String()
}

// backslashBeforeEscape reports whether a backslash followed by rest would
// read as the start of an escape: rest begins with x, u, U, a backslash, or
// a code point Escape escapes.
func backslashBeforeEscape(rest, keep string) bool {
	if rest == "" {
		return false
	}
	switch rest[0] {
	case 'x', 'u', 'U', '\\':
		return true
	}
	r, w := utf8.DecodeRuneInString(rest)
	return unsafeRune(r, w) && !(w == 1 && strings.IndexByte(keep, rest[0]) >= 0)
}

func safeBut(s, keep string, injective bool) bool {
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, w) && !(w == 1 && strings.IndexByte(keep, s[i]) >= 0) ||
			r == '\\' && injective && backslashBeforeEscape(s[i+1:], keep) {
			return false
		}
		i += w
	}
	return true
}

// Quote returns a name as `oxyfs ls` prints it: as it is when it shows as
// itself, else in the $'…' quoting of bash, zsh and ksh (GNU ls's
// shell-escape style), with \xHH for each byte of a control character, of
// an invisible code point (U+202E: \xe2\x80\xae) or of invalid UTF-8 and \\ and \' for backslash and quote — so pasting it
// into a shell gives back the exact bytes:
//
//	ESC ] 0 ; x BEL  ->  $'\x1b]0;x\x07'
//	U+009B           ->  $'\xc2\x9b'
//
// A name that begins with $' is quoted too, so no printed name is read
// two ways.
func Quote(name string) string {
	if Safe(name) && !strings.HasPrefix(name, "$'") {
		return name
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(name); {
		r, w := utf8.DecodeRuneInString(name[i:])
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteByte(name[i])
		case unsafeRune(r, w):
			for j := i; j < i+w; j++ {
				fmt.Fprintf(&b, `\x%02x`, name[j])
			}
		default:
			b.WriteString(name[i : i+w])
		}
		i += w
	}
	b.WriteByte('\'')
	return b.String()
}

// DoubleQuote returns s as a message quotes a value: in double quotes,
// Go's syntax (what %q writes, and strconv.Unquote reads back), but with
// every byte and code point Escape escapes in Escape's one form — \xHH for a
// C0 control, DEL or a byte that is not UTF-8, \uHHHH (\UHHHHHHHH) for any
// other — where %q writes BEL as \a and a tab as \t, and leaves some
// invisible code points (U+115F) raw. A quote and a backslash are escaped
// (\" and \\), so it is injective.
func DoubleQuote(s string) string { return quoteIn(s, '"') }

// Value is a value a message quotes with %q, which it then writes
// through DoubleQuote (a control byte as \xHH, where %q of a string writes
// BEL as \a); %s and %v write it as it is:
//
//	fmt.Errorf("read signature %q: %w", termsafe.Value(key), err)
type Value string

// Format writes v for verb: DoubleQuote for %q, as it is otherwise.
func (v Value) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		_, _ = io.WriteString(f, DoubleQuote(string(v)))
		return
	}
	_, _ = io.WriteString(f, string(v))
}

// QuoteByte is DoubleQuote for one byte, in single quotes (what %q writes
// of a byte): a CR is '\x0d', a quote and a backslash are escaped.
func QuoteByte(c byte) string {
	if c >= utf8.RuneSelf {
		return fmt.Sprintf(`'\x%02x'`, c)
	}
	return quoteIn(string(rune(c)), '\'')
}

// quoteIn quotes s in q with Escape's escapes, q and the backslash escaped.
func quoteIn(s string, q byte) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case w == 1 && (s[i] == q || s[i] == '\\'):
			b.WriteByte('\\')
			b.WriteByte(s[i])
		case !unsafeRune(r, w):
			b.WriteString(s[i : i+w])
		default:
			writeEscape(&b, s[i], r, w)
		}
		i += w
	}
	b.WriteByte(q)
	return b.String()
}

// JSON escapes what encoding/json leaves raw in encoded JSON and a reader
// would not see as itself: DEL, the C1 controls and every invisible code
// point (unsafeRune), as \u007f, \u009b, \u202e (a pair of surrogates
// past U+FFFF). C0 is escaped by the encoder, invalid UTF-8 replaced by
// U+FFFD. They can only be inside strings, so the JSON means the same.
func JSON(b []byte) []byte {
	if !bytes.ContainsFunc(b, jsonEscaped) {
		return b
	}
	var out bytes.Buffer
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		switch {
		case w == 1 && r == utf8.RuneError || !jsonEscaped(r):
			out.Write(b[i : i+w])
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
		i += w
	}
	return out.Bytes()
}

// jsonEscaped: DEL and the code points past ASCII that unsafeRune escapes
// (C0 is the encoder's; U+FFFD shows as itself).
func jsonEscaped(r rune) bool { return r == 0x7f || r >= 0x80 && r != utf8.RuneError && hiddenRune(r) }

// Line returns text as a log shows it: secrets redacted (Redact),
// then controls escaped but for line breaks and tabs.
func Line(text string) string { return escape(Redact(text), "\n\t", false) }

// Writer writes what it is given through Line: every message and log line
// written to it is redacted and escaped. Each Write should be whole lines
// (log.Logger and one fmt.Fprintf are), so no URL is split across two.
type Writer struct{ W io.Writer }

func (w Writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.W, Line(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Escaper writes what it is given through Escape, keeping line breaks and
// tabs: for the text a command prints on standard output, which must stay
// exact (no redaction) but never drive the terminal.
type Escaper struct{ W io.Writer }

func (w Escaper) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.W, escape(string(p), "\n\t", false)); err != nil {
		return 0, err
	}
	return len(p), nil
}
