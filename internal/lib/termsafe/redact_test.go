package termsafe

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestRedactHidesEverySecretAndKeepsTheRest(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// Nothing secret: unchanged, byte for byte.
		{"file:///srv/repo/.oxy/objects", "file:///srv/repo/.oxy/objects"},
		{"mem://", "mem://"},
		{"s3://b?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1&prefix=repo/",
			"s3://b?endpoint=http://127.0.0.1:9000&use_path_style=true&region=us-east-1&prefix=repo/"},
		{`get "sig/ab/cd/alice@example.com": not found`, `get "sig/ab/cd/alice@example.com": not found`},
		{"http://h/by-signer/alice@example.com", "http://h/by-signer/alice@example.com"},
		{"http://[::1]:9000/x@y", "http://[::1]:9000/x@y"},
		// User information, of the store URL and of a nested endpoint.
		{"s3://AKIA:sk@b?region=x", "s3://REDACTED@b?region=x"},
		{"s3://b?endpoint=http://planted-user:PLANTED-SECRET@127.0.0.1:9000&use_path_style=true",
			"s3://b?endpoint=http://REDACTED@127.0.0.1:9000&use_path_style=true"},
		{"s3://b?endpoint=http://u:p&q@h:9000&region=x", "s3://b?endpoint=http://REDACTED@h:9000&region=x"},
		{"http://u:pa/ss@h/x", "http://REDACTED@h/x"},
		// Percent-encoded once and twice: the encoding stays, the secret goes.
		{"s3://b?endpoint=http%3A%2F%2Fu%3Ap%40h%3A9000&region=x",
			"s3://b?endpoint=http%3A%2F%2FREDACTED%40h%3A9000&region=x"},
		{"s3://b?endpoint=http%253A%252F%252Fu%253Ap%2540h%253A9000&region=x",
			"s3://b?endpoint=http%253A%252F%252FREDACTED%2540h%253A9000&region=x"},
		{"s3://b?endpoint=http%3A%2F%2Fh%2F%3Fsig%3Dabc%26x%3D1", "s3://b?endpoint=http%3A%2F%2Fh%2F%3Fsig%3DREDACTED%26x%3D1"},
		// Secret parameters.
		{"azblob://c?sv=2020-08-04&ss=b&srt=co&sp=rl&se=2030-01-01T00:00:00Z&sig=abc%2Bdef%3D&prefix=p/",
			"azblob://c?sv=REDACTED&ss=REDACTED&srt=REDACTED&sp=REDACTED&se=REDACTED&sig=REDACTED&prefix=p/"},
		{"https://h/b/k?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA%2F2023&X-Amz-Signature=ab12&x-id=GetObject",
			"https://h/b/k?X-Amz-Algorithm=REDACTED&X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&x-id=GetObject"},
		{"gs://b?access_id=a@p.iam&private_key_path=/k.pem", "gs://b?access_id=a@p.iam&private_key_path=REDACTED"},
		{"s3://b?aws_secret_access_key=s&Token=t;password=p#x", "s3://b?aws_secret_access_key=REDACTED&Token=REDACTED;password=REDACTED#x"},
		// Free text: an SDK's error quoting the URL it sent.
		{`read: store s3://b?endpoint=http://u:p@127.0.0.1:1 unavailable: Get "http://u:***@127.0.0.1:1/b/pack-entries?x-id=GetObject": dial tcp 127.0.0.1:1: connect: connection refused`,
			`read: store s3://b?endpoint=http://REDACTED@127.0.0.1:1 unavailable: Get "http://REDACTED@127.0.0.1:1/b/pack-entries?x-id=GetObject": dial tcp 127.0.0.1:1: connect: connection refused`},
		{"password=hunter2 and more", "password=REDACTED and more"},
		// F9: every name of a password, in any case.
		{"s3://b?pass=Hunter3pw&region=us-east-1", "s3://b?pass=REDACTED&region=us-east-1"},
		{"s3://b?PW=a&Passphrase=b&pwd=c&PASSWD=d&credentials=e&sas=f&Bearer=g&x=1",
			"s3://b?PW=REDACTED&Passphrase=REDACTED&pwd=REDACTED&PASSWD=REDACTED&credentials=REDACTED&sas=REDACTED&Bearer=REDACTED&x=1"},
		{`unknown query parameter "pass"`, `unknown query parameter "pass"`},
		// F9: an SDK's error quoting its request's URL after the store URL's
		// last parameter: the secret goes, the text between stays.
		{`store s3://b?endpoint=http://admin:pw@127.0.0.1:9&region=us-east-1: operation error S3: GetObject, Get "http://admin:pw@b.127.0.0.1:9/pack-retired?x-id=GetObject": dial tcp: no such host`,
			`store s3://b?endpoint=http://REDACTED@127.0.0.1:9&region=us-east-1: operation error S3: GetObject, Get "http://REDACTED@b.127.0.0.1:9/pack-retired?x-id=GetObject": dial tcp: no such host`},
		{"Credential=AKIA/2023/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=ab",
			"Credential=REDACTED SignedHeaders=REDACTED Signature=REDACTED"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// FuzzRedactPlantedSecret plants a user and a secret in every form a store
// URL or an error may carry them, inside arbitrary text, and checks that
// neither survives.
func FuzzRedactPlantedSecret(f *testing.F) {
	f.Add("", "", uint8(0), uint8(0), "Sx7", "")
	f.Add("oxyfs status: ", `": dial tcp`, uint8(3), uint8(1), "PLANTED", "user")
	f.Add("%", "%2", uint8(7), uint8(2), "a.b~c", "u-s_r")
	f.Fuzz(func(t *testing.T, pre, post string, form, enc uint8, secret, user string) {
		// Secrets drawn from characters a URL carries unencoded in user
		// information and values, never found in the text around them.
		clean := func(s string) string {
			return strings.Map(func(r rune) rune {
				if r >= 'P' && r <= 'Z' || r == '7' {
					return -1
				}
				return r
			}, s)
		}
		secret = "PLNTD" + strings.Map(func(r rune) rune {
			if r < 128 && (keyChar(byte(r)) || r == '~') {
				return r
			}
			return -1
		}, secret)
		user = "QUSR" + strings.Map(func(r rune) rune {
			if r < 128 && (keyChar(byte(r)) || r == '~') {
				return r
			}
			return -1
		}, user)
		endpoint := "http://" + user + ":" + secret + "@127.0.0.1:9000"
		var planted string
		switch form % 10 {
		case 0:
			planted = "s3://b?endpoint=" + endpoint + "&region=us-east-1"
		case 1:
			planted = "s3://b?endpoint=" + url.QueryEscape(endpoint) + "&region=us-east-1"
		case 2:
			planted = "s3://b?endpoint=" + url.QueryEscape(url.QueryEscape(endpoint))
		case 3:
			planted = `Get "http://` + user + `:***@127.0.0.1:9000/b/k?x-id=GetObject": x`
		case 4:
			planted = "azblob://c?sv=2020&sig=" + secret + "&se=" + user
		case 5:
			planted = "https://h/k?X-Amz-Signature=" + secret + "&X-Amz-Security-Token=" + user
		case 6:
			planted = "s3://" + user + ":" + secret + "@b?password=" + secret
		case 7:
			planted = "s3://b?endpoint=" + url.PathEscape(endpoint)
		case 8: // F9: the names of a password, in any case
			names := []string{"pass", "PW", "Passphrase", "pwd", "passwd", "credential", "Credentials", "sas", "sig", "bearer"}
			planted = "s3://b?" + names[int(enc)%len(names)] + "=" + secret + "&" + names[int(form/10)%len(names)] + "=" + user + "&region=us-east-1"
		case 9: // F9: an SDK's error quoting its request's URL after the store URL's last parameter
			planted = "store s3://b?endpoint=" + endpoint + "&region=us-east-1: op: Get \"" + endpoint + "/b/k?x-id=GetObject\": dial tcp"
		}
		for range enc % 3 {
			planted = "oxyfs://x?store=" + url.QueryEscape(planted)
		}
		in := clean(pre) + " " + planted + " " + clean(post)
		out := Redact(in)
		if strings.Contains(out, secret) || strings.Contains(out, user) {
			t.Fatalf("Redact(%q) = %q: the planted secret survived", in, out)
		}
		if again := Redact(out); again != out {
			t.Fatalf("Redact is not idempotent on %q: %q then %q", in, out, again)
		}
	})
}

// FuzzRedactArbitraryText: any text, no panic, idempotent, and text with
// no URL, parameter or escape in it is returned as it was.
func FuzzRedactArbitraryText(f *testing.F) {
	for _, s := range []string{"", "%", "%%41", "://", "a://@", "x=", "=y", "sig=%2", "http://a:b/c@d?e#f", "\x00\xff://u:p@h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Redact(s)
		if again := Redact(out); again != out {
			t.Fatalf("Redact is not idempotent on %q: %q then %q", s, out, again)
		}
		if !strings.ContainsAny(s, "=@%") && out != s {
			t.Fatalf("Redact(%q) = %q, want it unchanged", s, out)
		}
	})
}

// TestRedactOfHostileTextIsLinear: text made of many keys and many URLs
// (the shapes that would make a naive scan quadratic) is redacted in one
// pass; at 1 MiB a quadratic scan would take minutes.
func TestRedactOfHostileTextIsLinear(t *testing.T) {
	n := 1 << 20
	keys := strings.Repeat("sig=", n/4)
	if got, want := Redact(keys), "sig="+Redacted; got != want {
		t.Fatalf("Redact(sig=sig=…) = %.40q…, want %q", got, want)
	}
	urls := strings.Repeat("x:a://", n/6)
	if got := Redact(urls); got != urls {
		t.Fatalf("Redact(x:a://x:a://…) changed it: %.40q…", got)
	}
	at := strings.Repeat("x://u:pw/", n/9) + "@h"
	want := "x://" + Redacted + "@h"
	if got := Redact(at); got != want {
		t.Fatalf("Redact(x://u:pw/…@h) = %.40q…, want %q", got, want)
	}
}

// FuzzRedactPasswordEncodings (issue 41, 3): a password of any printable
// characters, the ones a URL must encode included (^, space, ", \, @, %),
// planted as a user writes it (percent-encoded user information, with or
// without the endpoint's scheme, the whole endpoint query-escaped) and as
// a program shows it once decoded (a parameter's value, a %q-quoted URL, a
// parser's error), inside arbitrary text: neither the password nor any of
// its encodings survives Redact.
func FuzzRedactPasswordEncodings(f *testing.F) {
	f.Add("", "", uint8(0), "SuperSecretPass")
	f.Add("oxyfs: ", ": refused", uint8(3), `pa^ss wo"rd\`)
	f.Add("x=1 ", "@y", uint8(5), "p@ss:w%41rd")
	f.Add("", "", uint8(1), "SuperSecretPass")
	f.Fuzz(func(t *testing.T, pre, post string, form uint8, secret string) {
		clean := func(s string) string {
			return strings.Map(func(r rune) rune {
				if r >= 'P' && r <= 'Z' || r == '7' {
					return -1
				}
				return r
			}, s)
		}
		raw := form%8 >= 3 // shown decoded: no character that ends a URL's part
		secret = "PLNTD" + strings.Map(func(r rune) rune {
			switch {
			case r < ' ' || r > '~':
				return -1
			case raw && strings.ContainsRune("/?#&=", r):
				return -1
			case r == ' ' && form%8 == 6:
				return -1 // a decoded space outside a parameter: not covered
			}
			return r
		}, secret)
		const user = "QUSR"
		userinfo := url.UserPassword(user, secret).String()
		var planted string
		switch form % 8 {
		case 0:
			planted = "s3://b?endpoint=http://" + userinfo + "@127.0.0.1:9&region=x"
		case 1: // in a query, & and # of the user information are encoded too
			planted = "s3://b?endpoint=" + strings.NewReplacer("&", "%26", "#", "%23").Replace(userinfo) + "@127.0.0.1:9"
		case 2:
			planted = "s3://b?endpoint=" + url.QueryEscape("http://"+userinfo+"@127.0.0.1:9")
		case 3:
			planted = "endpoint=" + user + ":" + secret + "@127.0.0.1:9"
		case 4:
			planted = fmt.Sprintf("open store %q: refused", "s3://b?endpoint=http://"+user+":"+secret+"@127.0.0.1:9")
		case 5:
			planted = fmt.Sprintf("open store %q: refused", "s3://b?endpoint="+user+":"+secret+"@127.0.0.1:9&region=x")
		case 6:
			_, err := url.Parse("http://" + user + ":" + secret + "@127.0.0.1:9")
			planted = fmt.Sprint(err) + " http://" + user + ":" + secret + "@127.0.0.1:9"
		case 7:
			planted = "s3://" + userinfo + "@b?endpoint=" + userinfo + "@h"
		}
		in := clean(pre) + " " + planted + " " + clean(post)
		out := Redact(in)
		for _, form := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret), strings.TrimPrefix(userinfo, user+":"), strconv.Quote(secret)[1:], user} {
			if strings.Contains(out, form) {
				t.Fatalf("Redact(%q) = %q: the planted password survived as %q", in, out, form)
			}
		}
		if again := Redact(out); again != out {
			t.Fatalf("Redact is not idempotent on %q: %q then %q", in, out, again)
		}
	})
}
