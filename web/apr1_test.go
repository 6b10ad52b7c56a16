package web

import (
	"os/exec"
	"strings"
	"testing"
)

// apr1Vectors were made with OpenSSL 3 on Debian: for each salt and
// password, printf '{%q, %q, %q},\n' "$p" "$s" "$(openssl passwd -apr1 -salt "$s" "$p")".
var apr1Vectors = []struct{ password, salt, hash string }{
	{"secret", "Zz01xyAB", "$apr1$Zz01xyAB$eZL44FDPa9Ts/UO2Bgdv1."},
	{"", "Zz01xyAB", "$apr1$Zz01xyAB$1TAtu8K3m4iFgJl4qDk7P/"},
	{"pässwörd with spaces and a long tail of 40 characters!!", "Zz01xyAB", "$apr1$Zz01xyAB$pxJTOxtvS0dEzc17.Qi34."},
	{"secret", "x1", "$apr1$x1$sw.x/uEdux/1M3X.rvF211"},
	{"", "x1", "$apr1$x1$3pYoaQ44IOAuZpLXgkh4A."},
	{"pässwörd with spaces and a long tail of 40 characters!!", "x1", "$apr1$x1$NysBwIVnf8IjVlv/tjpTO."},
}

func TestApr1MatchesOpenSSL(t *testing.T) {
	for _, v := range apr1Vectors {
		if got := apr1(v.password, v.salt); got != v.hash {
			t.Errorf("apr1(%q, %q) = %s, want %s", v.password, v.salt, got, v.hash)
		}
	}
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Logf("no openssl to compare with at test time (%v): the vectors above only", err)
		return
	}
	for _, pw := range []string{"a", "0123456789abcdef", "0123456789abcdefg", strings.Repeat("long ", 30), "\x01\xff"} {
		for _, salt := range []string{"s", "saltsalt", "./AZaz09"} {
			out, err := exec.Command(openssl, "passwd", "-apr1", "-salt", salt, pw).Output()
			if err != nil {
				t.Fatalf("openssl passwd -apr1: %v", err)
			}
			if want, got := strings.TrimSpace(string(out)), apr1(pw, salt); got != want {
				t.Errorf("apr1(%q, %q) = %s, openssl says %s", pw, salt, got, want)
			}
		}
	}
}

// FuzzApr1: any password and salt give a hash of apr1's shape that
// matches its password and no other.
func FuzzApr1(f *testing.F) {
	for _, v := range apr1Vectors {
		f.Add(v.password, v.salt)
	}
	f.Add("x", "with$dollar")
	f.Add("x", "longer than eight")
	f.Fuzz(func(t *testing.T, password, salt string) {
		h := apr1(password, salt)
		if !knownHash(h) {
			t.Fatalf("apr1(%q, %q) = %q: not an apr1 hash", password, salt, h)
		}
		if !matches(h, password) {
			t.Fatalf("apr1(%q, %q) = %q does not match its password", password, salt, h)
		}
		if matches(h, password+"x") {
			t.Fatalf("apr1(%q, %q) = %q matches another password", password, salt, h)
		}
	})
}

// FuzzParseHtpasswd: a file of any bytes parses or fails with an error, and
// an error never holds a hash the file gave.
func FuzzParseHtpasswd(f *testing.F) {
	f.Add([]byte("alice:$apr1$x1$sw.x/uEdux/1M3X.rvF211\n# c\n\nbob:$2y$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBRyHe\n"))
	f.Add([]byte("alice:{SHA}secretstuff\n"))
	f.Add([]byte("alice:plain\r\nalice:$apr1$x1$sw.x/uEdux/1M3X.rvF211"))
	f.Fuzz(func(t *testing.T, data []byte) {
		users, err := parseHtpasswd(data)
		if err != nil {
			// What the messages say themselves, and the user they name.
			const said = `line : not user:hash (user ""): the hash is not bcrypt ($2y$, htpasswd -B) nor Apache MD5 ($apr1$, htpasswd -m) named twice`
			for _, line := range strings.Split(string(data), "\n") {
				user, hash, ok := strings.Cut(strings.TrimRight(line, " \t\r"), ":")
				if ok && len(hash) >= 8 && strings.Contains(err.Error(), hash) && !strings.Contains(said, hash) && !strings.Contains(user, hash) {
					t.Fatalf("error %q shows a hash", err)
				}
			}
			return
		}
		for u, h := range users {
			if u == "" || strings.Contains(u, ":") || !knownHash(h) {
				t.Fatalf("parsed user %q hash %q", u, h)
			}
		}
	})
}
