package termsafe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile holds ESC, BEL, DEL, a C1 control (U+009B, 8-bit CSI) and a byte
// that is not UTF-8.
const hostile = "a\x1b]0;pwned\x07b\x7fc\u009bd\xffe"

func TestEscapeWritesEveryControlAsAnEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"alice@example.com", "alice@example.com"},
		{`back\slash ünïcode`, `back\slash ünïcode`},
		{hostile, `a\x1b]0;pwned\x07b\x7fc\u009bd\xffe`},
		{"tab\tnl\ncr\r", `tab\x09nl\x0acr\x0d`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestQuoteIsShellQuotingThatReadsBack(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"alice", "alice"},
		{"with space", "with space"},
		{hostile, `$'a\x1b]0;pwned\x07b\x7fc\xc2\x9bd\xffe'`},
		{"it's\\\x1b", `$'it\'s\\\x1b'`},
		{"$'x'", `$'$\'x\''`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash, to read the quoting back: %v", err)
	}
	for _, name := range []string{hostile, "it's\\\x1b", "\x01\x7f\u0080\u009f\xc2"} {
		out, err := exec.Command(bash, "-c", "printf %s "+Quote(name)).Output()
		if err != nil {
			t.Fatalf("bash printf %s: %v", Quote(name), err)
		}
		if string(out) != name {
			t.Errorf("bash reads %s back as %q, want %q", Quote(name), out, name)
		}
	}
}

func TestJSONEscapesWhatTheEncoderLeavesRaw(t *testing.T) {
	b, err := json.Marshal(map[string]string{"name": "x\x1b\x7f\u009by"})
	if err != nil {
		t.Fatal(err)
	}
	got := JSON(b)
	if want := `{"name":"x\u001b\u007f\u009by"}`; string(got) != want {
		t.Fatalf("JSON = %s, want %s", got, want)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["name"] != "x\x1b\x7f\u009by" {
		t.Fatalf("JSON does not decode back: %v %q", err, back)
	}
}

func TestWriterRedactsAndEscapesEachLine(t *testing.T) {
	var buf bytes.Buffer
	w := Writer{W: &buf}
	msg := "open s3://b?endpoint=http://u:PLANTED@h:9000 failed\nwarning: key sig/ab/cd/" + hostile + "\tskipped\n"
	if n, err := w.Write([]byte(msg)); err != nil || n != len(msg) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	want := "open s3://b?endpoint=http://REDACTED@h:9000 failed\nwarning: key sig/ab/cd/" + `a\x1b]0;pwned\x07b\x7fc\u009bd\xffe` + "\tskipped\n"
	if buf.String() != want {
		t.Fatalf("Writer wrote %q, want %q", buf.String(), want)
	}
}

// FuzzQuoteReadsBack: Quote's output holds no control character and reads
// back (as bash reads $'…') to the exact bytes.
func FuzzQuoteReadsBack(f *testing.F) {
	for _, s := range []string{"", hostile, "$'", "'\\", "\xc2", "\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		if !Safe(q) {
			t.Fatalf("Quote(%q) = %q holds controls", s, q)
		}
		if Safe(s) && !strings.HasPrefix(s, "$'") {
			if q != s {
				t.Fatalf("Quote(%q) = %q, want it as it is", s, q)
			}
			return
		}
		if back := unquote(t, q); back != s {
			t.Fatalf("Quote(%q) = %q reads back as %q", s, q, back)
		}
		if e := Escape(s); !Safe(e) || !utf8.ValidString(e) {
			t.Fatalf("Escape(%q) = %q is not safe", s, e)
		}
	})
}

// unquote reads $'…' as bash does, for the escapes Quote writes.
func unquote(t *testing.T, q string) string {
	if !strings.HasPrefix(q, "$'") || !strings.HasSuffix(q, "'") || len(q) < 3 {
		t.Fatalf("%q is not $'…'", q)
	}
	in := q[2 : len(q)-1]
	var b []byte
	for i := 0; i < len(in); i++ {
		if in[i] != '\\' {
			b = append(b, in[i])
			continue
		}
		i++
		switch {
		case i < len(in) && (in[i] == '\\' || in[i] == '\''):
			b = append(b, in[i])
		case i+2 < len(in) && in[i] == 'x':
			n, err := strconv.ParseUint(in[i+1:i+3], 16, 8)
			if err != nil {
				t.Fatalf("bad escape in %q", q)
			}
			b = append(b, byte(n))
			i += 2
		default:
			t.Fatalf("bad escape in %q", q)
		}
	}
	return string(b)
}

// TestDoubleQuoteWritesControlsAsEscapeDoes (user trial 52): a message
// quoting a value with %q wrote BEL as \a where every other output wrote
// \x07. DoubleQuote writes each byte Escape escapes in Escape's form, and
// is Go syntax: strconv.Unquote gives the value back.
func TestDoubleQuoteWritesControlsAsEscapeDoes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"alice", `"alice"`},
		{hostile, `"a\x1b]0;pwned\x07b\x7fc\u009bd\xffe"`},
		{"tab\tnl\ncr\r bs\b ff\f vt\v", `"tab\x09nl\x0acr\x0d bs\x08 ff\x0c vt\x0b"`},
		{`say "hi" \x07`, `"say \"hi\" \\x07"`},
		{"signer-00\u202e\u115f", `"signer-00\u202e\u115f"`},
		{"\U000e0001", `"\U000e0001"`},
	} {
		got := DoubleQuote(c.in)
		if got != c.want {
			t.Errorf("DoubleQuote(%q) = %s, want %s", c.in, got, c.want)
		}
		if back, err := strconv.Unquote(got); err != nil || back != c.in {
			t.Errorf("strconv.Unquote(%s) = %q, %v; want %q", got, back, err, c.in)
		}
		// Every escape of a control byte is Escape's.
		for _, ctl := range []string{`\a`, `\b`, `\f`, `\n`, `\r`, `\t`, `\v`} {
			if strings.Contains(strings.ReplaceAll(got, `\\`, ""), ctl) {
				t.Errorf("DoubleQuote(%q) = %s holds %s", c.in, got, ctl)
			}
		}
	}
	for c, want := range map[byte]string{' ': `' '`, '\r': `'\x0d'`, 0: `'\x00'`, '\a': `'\x07'`, '\'': `'\''`, '\\': `'\\'`, 0xff: `'\xff'`} {
		if got := QuoteByte(c); got != want {
			t.Errorf("QuoteByte(%q) = %s, want %s", c, got, want)
		}
	}
}

func FuzzDoubleQuoteReadsBack(f *testing.F) {
	f.Add(hostile)
	f.Add("\"\\\a\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		got := DoubleQuote(s)
		if back, err := strconv.Unquote(got); err != nil || back != s {
			t.Fatalf("strconv.Unquote(%s) = %q, %v; want %q", got, back, err, s)
		}
		if strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 || r == 0x7f }) || !utf8.ValidString(got) {
			t.Fatalf("DoubleQuote(%q) = %q holds a control or invalid UTF-8", s, got)
		}
	})
}

func TestValueIsQuotedByDoubleQuote(t *testing.T) {
	v := Value("a\ab")
	if got, want := fmt.Sprintf("%q %s %v", v, v, v), `"a\x07b" a`+"\ab a\ab"; got != want {
		t.Errorf("Sprintf = %q, want %q", got, want)
	}
}
