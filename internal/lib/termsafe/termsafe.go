// Package termsafe makes text from a store safe to show: on a terminal, in
// a log, on a web page. A value of the store (a signer's name, a malformed
// key in a warning) may hold any byte but /, NUL, CR and LF — ESC ] 0 ; …
// BEL retitles a terminal, ESC [ 2 J clears it, U+009B is an 8-bit CSI — so
// every output of oxyfs that is not the store's own bytes (cat, a mount's
// files) goes through this package: Escape for one value, Quote for a name
// a script must read back (ls), JSON for encoded JSON, and Writer for a
// stream of log lines and messages (which it also redacts, Redact).
//
// The raw bytes stay in the store and on a mount: only what is shown is
// escaped.
package termsafe

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// unsafeRune reports whether r (utf8.RuneError of width 1: an invalid
// byte) must not reach a terminal raw: C0 controls, DEL, C1 controls.
func unsafeRune(r rune, width int) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == utf8.RuneError && width == 1
}

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

// Escape returns s with every control character and invalid byte written
// as an escape: \xHH for a C0 control, DEL or a byte that is not UTF-8,
// \u0080-\u009f for a C1 control. Everything else, backslashes included,
// stays as it is: Escape is for reading, Quote for reading back.
func Escape(s string) string { return escape(s, "") }

// escape is Escape keeping the bytes of keep.
func escape(s, keep string) string {
	if safeBut(s, keep) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unsafeRune(r, w) || w == 1 && strings.IndexByte(keep, s[i]) >= 0:
			b.WriteString(s[i : i+w])
		case w == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += w
	}
	return b.String()
}

func safeBut(s, keep string) bool {
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, w) && !(w == 1 && strings.IndexByte(keep, s[i]) >= 0) {
			return false
		}
		i += w
	}
	return true
}

// Quote returns a name as `oxyfs ls` prints it: as it is when it shows as
// itself, else in the $'…' quoting of bash, zsh and ksh (GNU ls's
// shell-escape style), with \xHH for each byte of a control character or
// of invalid UTF-8 and \\ and \' for backslash and quote — so pasting it
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

// JSON escapes what encoding/json leaves raw in encoded JSON and a
// terminal would act on: DEL and the C1 controls, as \u007f…\u009f (C0 is
// escaped by the encoder, invalid UTF-8 replaced by U+FFFD). They can only
// be inside strings, so the JSON means the same.
func JSON(b []byte) []byte {
	if !bytes.ContainsFunc(b, func(r rune) bool { return r == 0x7f || r >= 0x80 && r <= 0x9f }) {
		return b
	}
	var out bytes.Buffer
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		if r == 0x7f || r >= 0x80 && r <= 0x9f {
			fmt.Fprintf(&out, `\u%04x`, r)
		} else {
			out.Write(b[i : i+w])
		}
		i += w
	}
	return out.Bytes()
}

// Line returns text as a log shows it: secrets redacted (Redact),
// then controls escaped but for line breaks and tabs.
func Line(text string) string { return escape(Redact(text), "\n\t") }

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
	if _, err := io.WriteString(w.W, escape(string(p), "\n\t")); err != nil {
		return 0, err
	}
	return len(p), nil
}
